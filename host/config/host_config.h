#pragma once
// The host's own configuration (tide.yaml, docs/architecture.md#cli-and-host-configuration). Immutable once the host
// starts: `tide serve` loads the file, applies its flags over the fields, then calls finalizeHostConfig.
// examples/tide.yaml shows every key with its default.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/core/status.h"
#include "host/model/analysis.h"
#include "host/model/audit.h"
#include "host/model/notifications.h"

namespace tide::config {

struct TokenConfig {
  std::string name;
  std::string token;
  std::string role;  // viewer | operator | approver | admin
  std::vector<std::string> namespaces;  // ApiToken::namespaces; empty: every namespace
};

// The images the process driver knows how to run: glob pattern → argv template, tried in
// order. `{{tide}}` is the tide binary, `{{port.tcp.80}}` the host port given to the
// declared port, `{{image.tag}}` the part of the image after ':'.
using ImageCatalog = std::vector<std::pair<std::string, std::vector<std::string>>>;
ImageCatalog defaultImageCatalog();  // nginx:* and tide-workload:* → the built-in workload

struct HostConfig {
  std::string listen = "127.0.0.1:7700";
  std::string data_dir = "./.tide";
  std::string database;  // sqlite://... or postgresql://...; finalize: sqlite://<data_dir>/tide.db
  std::string policies_dir = "./policies";
  std::string scripts_dir = "./scripts";
  struct Auth {
    bool enabled = true;
    std::vector<TokenConfig> tokens;
    bool approver_must_differ = true;
  } auth;
  struct Process {
    int port_range_start = 30000;
    int port_range_end = 32767;
    std::string volume_root;  // finalize: <data_dir>/volumes
    ImageCatalog image_catalog = defaultImageCatalog();
    // The user workloads run as (resolved at start; the host must then run as root). Empty:
    // the host's own user.
    std::string run_as;
    // Globs (`*`, `?`) matched against a raw command's argv[0]: the programs operators may run
    // as a deployment's `command` or an `exec` health check. Everything else needs the admin role.
    std::vector<std::string> command_allow;
    size_t log_max_bytes = 10 << 20;  // a workload's log is rotated to <log>.1 beyond this
    int log_retention_hours = 24;     // logs and working dirs of removed instances are kept this long
  } process;
  struct Limits {
    int lua_deadline_ms = 50;
    int lua_memory_mib = 32;
    size_t max_body_bytes = 1 << 20;
    int reconcile_interval_ms = 1000;
    int executor_workers = 4;
    int executor_chunk = 32;
    int approval_chunk = 500;  // operations the approval stage decides per pass
    int executor_rate_per_second = 20;  // operations started per second, globally
    int operation_deadline_s = 120;
    int max_attempts = 5;
    // The observer (docs/architecture.md#observer): more RUNNING instances missing from their
    // drivers in one pass than this halts the control loop; a driver object the ledger does not
    // know is removed once it has been seen this long.
    int discrepancy_threshold = 5;
    int orphan_grace_s = 60;
    // The HTTP transport (docs/api.md#limits).
    int max_connections = 128;
    int request_read_deadline_s = 30;
    int max_header_bytes = 16 * 1024;
    int max_headers = 100;
    int max_json_depth = 64;
  } limits;
  // PEM files; both or neither. With them the API speaks HTTPS only.
  struct Tls {
    std::string cert;
    std::string key;
  } tls;
  std::string default_verdict = "manual";  // manual | deny: what an operation gets when no policy decides
  // How much history the ledger keeps (docs/architecture.md#retention-and-audit); every rule off by default.
  model::RetentionPolicy retention;
  // Node agents (docs/agents.md#losing-a-node).
  struct Agents {
    int heartbeat_ttl_s = 10;            // no report for this long: the node is UNREACHABLE
    int replace_after_s = 60;            // unreachable this long: its instances are replaced
    double max_unreachable_share = 0.5;  // more agent nodes lost within the window: a partition
    int partition_window_s = 60;
    // Agents whose desired-state polls the host holds at once (each holds a server thread;
    // keep it below limits.max_connections). The others are answered at once and learn of
    // changes from their reports' answers, a heartbeat later (docs/agents.md#scale).
    int max_long_polls = 64;
  } agents;
  // Metric providers the strategies' analyses may ask through ctx.metric
  // (docs/architecture.md#metric-analysis): `analysis: {providers: {prom: {type: prometheus,
  // url: "http://127.0.0.1:9090", timeout_ms: 2000}}}`.
  struct Analysis {
    model::MetricProviders providers;
  } analysis;
  // The traffic router (docs/architecture.md#traffic): `traffic: {router: haproxy, ...}`. The
  // keys besides `router` go as they are to the router's factory, which checks them. Absent:
  // haproxy with its defaults, started only once some plan declares traffic;
  // when haproxy is not installed the host still runs and refuses plans that declare traffic.
  struct Traffic {
    bool declared = false;  // tide.yaml has a `traffic:` section: a router that cannot start stops the host
    std::string router = "haproxy";
    nlohmann::json settings = nlohmann::json::object();  // the section without `router`
  } traffic;
  // Webhooks that get rollout and approval events (docs/operating.md#notifications):
  // `notifications: {webhooks: [{name: chat, url: "https://...", events: ["deployment.*"]}]}`.
  struct Notifications {
    std::vector<model::Webhook> webhooks;
  } notifications;
};

// "" → the defaults. A path that cannot be read → kNotFound. Otherwise as parseHostConfig.
// Derived defaults are not applied yet (see finalizeHostConfig).
Result<HostConfig> loadHostConfig(const std::string& path);

// Every key is optional; unknown keys, wrong types and out-of-range values are
// kInvalidArgument with all problems in details (as for manifests). A `process.image_catalog`
// replaces the default catalog rather than extending it.
Result<HostConfig> parseHostConfig(std::string_view text, const std::string& source);

// A file holding only an image catalog, shaped as tide.yaml's process.image_catalog (a mapping
// of glob pattern → argv template), for a node agent's --image-catalog. kNotFound when it
// cannot be read, kInvalidArgument with the problems in details (as parseHostConfig).
Result<ImageCatalog> loadImageCatalog(const std::string& path);

// Fills the defaults derived from data_dir (database, process.volume_root) where they are
// still empty. Call after command-line flags have overridden fields. Idempotent.
void finalizeHostConfig(HostConfig& config);

// The argv template of the first catalog entry whose pattern matches all of `image`
// (`*` matches any run of characters, `?` one character), or nullptr. The pointer stays
// valid while `process` is alive and unchanged.
const std::vector<std::string>* matchImage(const HostConfig::Process& process, std::string_view image);

// True when `program` (a raw command's argv[0]) matches a glob of `command_allow`
// (process.command_allow).
bool commandAllowed(const std::vector<std::string>& command_allow, std::string_view program);

}  // namespace tide::config
