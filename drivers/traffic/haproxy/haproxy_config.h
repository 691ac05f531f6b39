#pragma once
// The haproxy configuration the router writes, and the names it gives plans and servers.
//
// Layout: one frontend `fe_<plan>` on the plan's listen address whose default backend is
// `be_<plan>` (every server, balanced round-robin by weight); header routes and the preview
// frontend `pf_<plan>` go to `pv_<plan>` (the preview servers, equally). A frontend
// `tide_metrics` serves HAProxy's Prometheus exporter (and is not logged). With a log socket,
// every other request is logged there as RequestLog::kLogFormat. The file always lists the current
// servers with their weights, so a haproxy started from it again serves the last split.
//
// Plan and server names are encoded into haproxy identifiers reversibly (encodeName /
// decodeName), so applied() maps what haproxy reports back to plans and runtime ids.

#include <optional>
#include <string>
#include <vector>

#include "drivers/traffic/router.h"

namespace tide::drivers::traffic {

struct HealthCheckOptions {
  int interval_ms = 1000;
  int fall = 2;
  int rise = 1;
};

struct ConfigInput {
  std::string admin_socket;
  std::string metrics_listen;  // "127.0.0.1:9101"
  HealthCheckOptions check;
  std::vector<DesiredPlanTraffic> plans;  // the plans served, each with its servers
  // The unix datagram socket haproxy sends one line per request to (RequestLog); "" for none.
  std::string log_socket;
  int log_sample = 1;  // one request in log_sample is logged
};

// Characters other than [A-Za-z0-9-] become "_hh" (hex), so any id maps to a valid haproxy
// identifier and back.
std::string encodeName(const std::string& name);
std::optional<std::string> decodeName(const std::string& encoded);

std::string mainBackend(const std::string& plan);     // "be_<encoded plan>"
std::string previewBackend(const std::string& plan);  // "pv_<encoded plan>"
// The plan a backend serves, if the name is one of ours.
std::optional<std::string> planOfBackend(const std::string& backend, bool* preview);

// The arguments of a server line after its address, the same in the file and in
// `add server` (dynamic servers inherit nothing from default-server).
std::string serverArguments(const HealthCheckOptions& check, int weight, int max_connections);  // 0: no maxconn

// A server's weight in the file: a draining server is written with weight 0 (the file has no
// drain state) and set to drain over the runtime API once haproxy runs.
int fileWeight(const BackendServer& server);
int previewWeight(const BackendServer& server);

std::string renderConfig(const ConfigInput& input);

// "host:port" split; false when the port is not 1..65535 or there is no host part.
// An empty host or "*" means every address.
bool splitAddress(const std::string& address, std::string* host, int* port);

}  // namespace tide::drivers::traffic
