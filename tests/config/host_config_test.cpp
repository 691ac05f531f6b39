#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "host/config/host_config.h"
#include "tests/support/text.h"

using namespace tide;
using namespace tide::config;

namespace {

using tide::testing::contains;

HostConfig parseConfig(const std::string& text) {
  auto result = parseHostConfig(text, "tide.yaml");
  INFO(result.status().toString());
  REQUIRE(result.isOk());
  return std::move(result).value();
}

std::vector<ErrorDetail> configErrors(const std::string& text) {
  auto result = parseHostConfig(text, "tide.yaml");
  REQUIRE_FALSE(result.isOk());
  CHECK(result.status().code() == Code::kInvalidArgument);
  return result.status().details();
}

// The problem reported for `field`; fails the test when there is none.
ErrorDetail configDetailAt(const std::vector<ErrorDetail>& details, const std::string& field) {
  for (const auto& d : details) {
    if (d.field == field) return d;
  }
  FAIL("no error at " << field);
  return ErrorDetail{};
}

const std::vector<std::string> kWorkloadArgv = {"{{tide}}",  "workload",     "--listen", "127.0.0.1:{{port.tcp.80}}",
                                                "--version", "{{image.tag}}"};

void checkDefaults(const HostConfig& c) {
  CHECK(c.listen == "127.0.0.1:7700");
  CHECK(c.data_dir == "./.tide");
  CHECK(c.policies_dir == "./policies");
  CHECK(c.scripts_dir == "./scripts");
  CHECK(c.auth.enabled);
  CHECK(c.auth.tokens.empty());
  CHECK(c.auth.approver_must_differ);
  CHECK(c.process.port_range_start == 30000);
  CHECK(c.process.port_range_end == 32767);
  REQUIRE(c.process.image_catalog.size() == 2);
  CHECK(c.process.image_catalog[0].first == "nginx:*");
  CHECK(c.process.image_catalog[0].second == kWorkloadArgv);
  CHECK(c.process.image_catalog[1].first == "tide-workload:*");
  CHECK(c.process.image_catalog[1].second == kWorkloadArgv);
  CHECK(c.process.run_as.empty());
  CHECK(c.process.command_allow.empty());
  CHECK(c.process.log_max_bytes == 10485760);
  CHECK(c.process.log_retention_hours == 24);
  CHECK(c.limits.lua_deadline_ms == 50);
  CHECK(c.limits.lua_memory_mib == 32);
  CHECK(c.limits.max_body_bytes == 1048576);
  CHECK(c.limits.reconcile_interval_ms == 1000);
  CHECK(c.limits.executor_workers == 4);
  CHECK(c.limits.executor_chunk == 32);
  CHECK(c.limits.operation_deadline_s == 120);
  CHECK(c.limits.max_attempts == 5);
  CHECK(c.limits.discrepancy_threshold == 5);
  CHECK(c.limits.orphan_grace_s == 60);
  CHECK(c.limits.max_connections == 128);
  CHECK(c.limits.request_read_deadline_s == 30);
  CHECK(c.limits.max_header_bytes == 16384);
  CHECK(c.limits.max_headers == 100);
  CHECK(c.limits.max_json_depth == 64);
  CHECK(c.tls.cert.empty());
  CHECK(c.tls.key.empty());
  CHECK(c.default_verdict == "manual");
  CHECK(c.retention == model::RetentionPolicy{0, 0, 0, 0, 5000, 60});
  CHECK_FALSE(c.retention.enabled());
  CHECK(c.agents.heartbeat_ttl_s == 10);
  CHECK(c.agents.replace_after_s == 60);
  CHECK(c.agents.max_unreachable_share == 0.5);
  CHECK(c.agents.partition_window_s == 60);
}

}  // namespace

TEST_CASE("host config: no file means every default, finalize derives paths from data_dir") {
  auto loaded = loadHostConfig("");
  REQUIRE(loaded.isOk());
  HostConfig c = *loaded;
  checkDefaults(c);
  CHECK(c.database.empty());
  CHECK(c.process.volume_root.empty());
  finalizeHostConfig(c);
  CHECK(c.database == "sqlite://./.tide/tide.db");
  CHECK(c.process.volume_root == "./.tide/volumes");
  finalizeHostConfig(c);  // idempotent
  CHECK(c.database == "sqlite://./.tide/tide.db");

  // A flag overriding data_dir before finalize moves the derived paths with it.
  HostConfig flagged = *loadHostConfig("");
  flagged.data_dir = "/var/lib/tide/";
  finalizeHostConfig(flagged);
  CHECK(flagged.database == "sqlite:///var/lib/tide/tide.db");
  CHECK(flagged.process.volume_root == "/var/lib/tide/volumes");

  checkDefaults(parseConfig(""));
  checkDefaults(parseConfig("# only a comment\n"));
}

TEST_CASE("host config: examples/tide.yaml shows exactly the defaults") {
  auto loaded = loadHostConfig((std::filesystem::path(TIDE_SOURCE_DIR) / "examples" / "tide.yaml").string());
  INFO(loaded.status().toString());
  REQUIRE(loaded.isOk());
  checkDefaults(*loaded);
  CHECK(loaded->database.empty());
}

TEST_CASE("host config: every key overrides its default") {
  HostConfig c = parseConfig(R"(
listen: "0.0.0.0:8080"
data_dir: /srv/tide
database: "postgresql://tide:secret@db/tide"
policies_dir: /etc/tide/policies
scripts_dir: /etc/tide/scripts
auth:
  enabled: false
  approver_must_differ: false
  tokens:
    - {name: alice, token: "0123456789abcdef-alice", role: approver}
    - {name: ci, token: "0123456789abcdef-ci", role: operator, namespaces: [staging, dev]}
process:
  port_range_start: 40000
  port_range_end: 40100
  volume_root: /data/volumes
  image_catalog:
    "redis:7.?": [/usr/bin/redis-server, --port, "{{port.tcp.6379}}"]
    "*": [/bin/false]
  run_as: tide-workload
  command_allow: ["/usr/bin/python3*", "/opt/checks/*"]
  log_max_bytes: 65536
  log_retention_hours: 0
limits:
  lua_deadline_ms: 100
  lua_memory_mib: 64
  max_body_bytes: 4096
  reconcile_interval_ms: 250
  executor_workers: 8
  executor_chunk: 16
  approval_chunk: 40
  executor_rate_per_second: 7
  operation_deadline_s: 30
  max_attempts: 3
  discrepancy_threshold: 12
  orphan_grace_s: 600
  max_connections: 64
  request_read_deadline_s: 10
  max_header_bytes: 8192
  max_headers: 50
  max_json_depth: 32
tls: {cert: /etc/tide/cert.pem, key: /etc/tide/key.pem}
default_verdict: deny
)");
  CHECK(c.listen == "0.0.0.0:8080");
  CHECK(c.data_dir == "/srv/tide");
  CHECK(c.database == "postgresql://tide:secret@db/tide");
  CHECK(c.policies_dir == "/etc/tide/policies");
  CHECK(c.scripts_dir == "/etc/tide/scripts");
  CHECK_FALSE(c.auth.enabled);
  CHECK_FALSE(c.auth.approver_must_differ);
  REQUIRE(c.auth.tokens.size() == 2);
  CHECK(c.auth.tokens[0].name == "alice");
  CHECK(c.auth.tokens[0].token == "0123456789abcdef-alice");
  CHECK(c.auth.tokens[0].role == "approver");
  CHECK(c.auth.tokens[1].role == "operator");
  CHECK(c.auth.tokens[0].namespaces.empty());
  CHECK(c.auth.tokens[1].namespaces == std::vector<std::string>{"staging", "dev"});
  CHECK(c.process.port_range_start == 40000);
  CHECK(c.process.port_range_end == 40100);
  CHECK(c.process.volume_root == "/data/volumes");
  REQUIRE(c.process.image_catalog.size() == 2);  // replaces the default catalog
  CHECK(c.process.image_catalog[0].first == "redis:7.?");
  CHECK(c.process.image_catalog[1].second == std::vector<std::string>{"/bin/false"});
  CHECK(c.process.run_as == "tide-workload");
  CHECK(c.process.command_allow == std::vector<std::string>{"/usr/bin/python3*", "/opt/checks/*"});
  CHECK(commandAllowed(c.process.command_allow, "/usr/bin/python3.11"));
  CHECK(commandAllowed(c.process.command_allow, "/opt/checks/ready"));
  CHECK_FALSE(commandAllowed(c.process.command_allow, "/bin/sh"));
  CHECK_FALSE(commandAllowed(c.process.command_allow, "python3"));
  CHECK(c.process.log_max_bytes == 65536);
  CHECK(c.process.log_retention_hours == 0);
  CHECK(c.limits.lua_deadline_ms == 100);
  CHECK(c.limits.lua_memory_mib == 64);
  CHECK(c.limits.max_body_bytes == 4096);
  CHECK(c.limits.reconcile_interval_ms == 250);
  CHECK(c.limits.executor_workers == 8);
  CHECK(c.limits.executor_chunk == 16);
  CHECK(c.limits.approval_chunk == 40);
  CHECK(c.limits.executor_rate_per_second == 7);
  CHECK(c.limits.operation_deadline_s == 30);
  CHECK(c.limits.max_attempts == 3);
  CHECK(c.limits.discrepancy_threshold == 12);
  CHECK(c.limits.orphan_grace_s == 600);
  CHECK(c.limits.max_connections == 64);
  CHECK(c.limits.request_read_deadline_s == 10);
  CHECK(c.limits.max_header_bytes == 8192);
  CHECK(c.limits.max_headers == 50);
  CHECK(c.limits.max_json_depth == 32);
  CHECK(c.tls.cert == "/etc/tide/cert.pem");
  CHECK(c.tls.key == "/etc/tide/key.pem");
  CHECK(c.default_verdict == "deny");
  finalizeHostConfig(c);  // explicit values survive
  CHECK(c.database == "postgresql://tide:secret@db/tide");
  CHECK(c.process.volume_root == "/data/volumes");

  HostConfig partial = parseConfig("limits: {executor_workers: 2}\nlisten: \"[::1]:0\"\n");
  CHECK(partial.limits.executor_workers == 2);
  CHECK(partial.limits.executor_chunk == 32);
  CHECK(partial.limits.approval_chunk == 500);
  CHECK(partial.limits.executor_rate_per_second == 20);
  CHECK(partial.listen == "[::1]:0");
  CHECK(parseConfig("database: sqlite:///tmp/x.db\n").database == "sqlite:///tmp/x.db");
}

TEST_CASE("host config error: unknown keys, wrong types and ranges, all at once") {
  auto details = configErrors(R"(listen: localhost
data_dri: ./x
database: mysql://db
auth:
  enabled: yes
  tokens:
    - {name: Alice, token: short, role: root}
    - {name: bob, token: "0123456789abcdef", role: admin}
    - {name: bob, token: "0123456789abcdef", role: viewer}
process:
  port_range_start: 80
  port_range_end: 70000
  image_catalog: [nginx]
limits:
  lua_deadline_ms: 0
  executor_workers: "four"
  max_body_bytes: 1.5
default_verdict: approve
)");
  auto at = [&](const std::string& field) { return configDetailAt(details, field); };
  CHECK(at("listen") ==
        ErrorDetail{"listen", "\"localhost\" must be host:port with a port between 0 and 65535", "tide.yaml:1:9"});
  CHECK(
      at("data_dri").message.starts_with("unknown key \"data_dri\" (did you mean \"data_dir\"?); known keys: listen"));
  CHECK(at("data_dri").location == "tide.yaml:2:1");
  CHECK(at("database").message == "must be sqlite://<path> or postgresql://<connection>");
  CHECK(at("auth.enabled").message == "expected true or false, got the string \"yes\"");
  CHECK(at("auth.tokens[0].name").location == "tide.yaml:7:14");
  CHECK(at("auth.tokens[0].token").message == "must be at least 16 characters");
  CHECK(at("auth.tokens[0].role").message == "unknown role \"root\"; expected viewer, operator, approver or admin");
  CHECK(at("auth.tokens[2].name").message == "token name given twice");
  CHECK(at("auth.tokens[2].token").message == "the same token is given to two names");
  CHECK(at("process.port_range_start").message == "must be between 1024 and 65535, got 80");
  CHECK(at("process.port_range_end").location == "tide.yaml:12:19");
  CHECK(at("process.image_catalog").message == "expected a mapping, got a list");
  CHECK(at("limits.lua_deadline_ms").message == "must be between 1 and 60000, got 0");
  CHECK(at("limits.executor_workers").message == "expected an integer, got the string \"four\"");
  CHECK(at("limits.max_body_bytes").location == "tide.yaml:17:19");
  CHECK(at("default_verdict").message == "unknown verdict \"approve\"; expected manual or deny");
  CHECK(details.size() == 16);
  for (const auto& d : details) CHECK_FALSE(contains(d.message, "0123456789abcdef"));  // secrets stay out
}

TEST_CASE("host config error: a token's namespaces are names, given once, for a role that changes things") {
  auto details = configErrors(R"(auth:
  tokens:
    - {name: a, token: "0123456789abcdef-a", role: viewer, namespaces: [prod]}
    - {name: b, token: "0123456789abcdef-b", role: approver, namespaces: [prod, prod]}
    - {name: c, token: "0123456789abcdef-c", role: operator, namespaces: [Prod]}
    - {name: d, token: "0123456789abcdef-d", role: operator, namespaces: prod}
)");
  auto at = [&](const std::string& field) { return configDetailAt(details, field); };
  CHECK(at("auth.tokens[0].namespaces").message ==
        "only operator, approver and admin tokens are scoped to namespaces; a viewer token reads every namespace");
  CHECK(at("auth.tokens[0].namespaces").location == "tide.yaml:3:72");
  CHECK(at("auth.tokens[1].namespaces").message == "namespace 'prod' is given twice");
  CHECK(contains(at("auth.tokens[2].namespaces").message, "namespace 'Prod': "));
  CHECK(contains(at("auth.tokens[3].namespaces").message, "expected a list"));
  CHECK(details.size() == 4);
}

TEST_CASE("host config error: the process isolation keys name what is wrong") {
  auto details = configErrors(
      "process:\n  run_as: \"\"\n  command_allow: [\"\"]\n  log_max_bytes: 10\n  log_retention_hours: -1\n");
  REQUIRE(details.size() == 4);
  CHECK(details[0].field == "process.run_as");
  CHECK(details[0].message == "must not be empty");
  CHECK(details[1].field == "process.command_allow[0]");
  CHECK(details[1].message == "must not be empty");
  CHECK(details[2].field == "process.log_max_bytes");
  CHECK(details[3].field == "process.log_retention_hours");
}

TEST_CASE("host config error: tls.cert and tls.key come together, HTTP limits have bounds") {
  auto details = configErrors("tls: {cert: /etc/tide/cert.pem}\nlimits: {max_connections: 0, max_json_depth: 100000}\n");
  REQUIRE(details.size() == 3);
  // In file order.
  CHECK(details[0] == ErrorDetail{"tls.cert", "tls.cert and tls.key must be given together", "tide.yaml:1:13"});
  CHECK(details[1].field == "limits.max_connections");
  CHECK(details[2] == ErrorDetail{"limits.max_json_depth", "must be between 8 and 512, got 100000", "tide.yaml:2:46"});
}

TEST_CASE("host config error: a problem names the line and the column of the key or value at fault") {
  auto details = configErrors("listen: 127.0.0.1:7700\nlimits:\n  max_connections: 0\n  colour: red\n");
  REQUIRE(details.size() == 2);
  CHECK(details[0].field == "limits.max_connections");
  CHECK(details[0].location == "tide.yaml:3:20");  // the value
  CHECK(details[1].field == "limits.colour");
  CHECK(details[1].location == "tide.yaml:4:3");  // the key
}

TEST_CASE("host config error: port range start must be below its end") {
  auto details = configErrors("process:\n  port_range_start: 31000\n  port_range_end: 31000\n");
  REQUIRE(details.size() == 1);
  CHECK(details[0] == ErrorDetail{"process.port_range_end",
                                  "port_range_start (31000) must be below port_range_end (31000)", "tide.yaml:3:19"});
  auto onlyStart = configErrors("process: {port_range_start: 40000}\n");
  CHECK(onlyStart[0].field == "process.port_range_start");
}

TEST_CASE("host config error: catalog entries, sections and documents") {
  auto catalog = configErrors("process:\n  image_catalog:\n    \"a:*\": []\n    \"b:*\": /bin/b\n    \"\": [x]\n");
  REQUIRE(catalog.size() == 3);
  CHECK(catalog[0] ==
        ErrorDetail{"process.image_catalog.a:*", "must hold at least the program to run", "tide.yaml:3:12"});
  CHECK(catalog[1].message == "expected a list, got the string \"/bin/b\"");
  CHECK(catalog[2].message == "image pattern must not be empty");

  auto section = configErrors("auth: true\nlimits: [1]\n");
  CHECK(section.size() == 2);
  CHECK(section[0] == ErrorDetail{"auth", "expected a mapping, got the boolean true", "tide.yaml:1:7"});

  CHECK(configErrors("listen: a:1\n---\nlisten: b:2\n")[0].message == "expected one document, got 2");
  CHECK(configErrors("[listen]\n")[0].message == "expected a mapping, got a list");
  auto syntax = configErrors("limits:\n  max_attempts: [1\n");
  CHECK(syntax[0].location == "tide.yaml:3:1");
  CHECK(contains(syntax[0].message, "YAML syntax error"));
}

TEST_CASE("host config: retention rules are read, and out-of-range ones name their field") {
  HostConfig c = parseConfig(R"(
retention:
  events_max_age_days: 90
  events_max_count: 1000000
  decisions_max_age_days: 30
  script_versions_keep: 20
  batch: 1000
  interval_minutes: 5
)");
  CHECK(c.retention == model::RetentionPolicy{90, 1000000, 30, 20, 1000, 5});
  CHECK(c.retention.enabled());
  CHECK(parseConfig("retention: {events_max_count: 0}\n").retention.events_max_count == 0);

  auto details = configErrors(
      "retention:\n  events_max_count: 3\n  events_max_age_days: -1\n  batch: 10\n  interval_minutes: 0\n"
      "  keep_forever: true\n");
  REQUIRE(details.size() == 5);
  auto at = [&](const std::string& field) { return configDetailAt(details, field); };
  CHECK(at("retention.events_max_count") ==
        ErrorDetail{"retention.events_max_count", "must be 0 (off) or at least 10", "tide.yaml:2:21"});
  CHECK(at("retention.events_max_age_days").message == "must be between 0 and 36500, got -1");
  CHECK(at("retention.batch").message == "must be between 100 and 100000, got 10");
  CHECK(at("retention.interval_minutes").location == "tide.yaml:5:21");
  CHECK(at("retention.keep_forever").message.starts_with("unknown key \"keep_forever\""));
}

TEST_CASE("host config: a config file named but missing is an error") {
  auto r = loadHostConfig("/nonexistent/tide.yaml");
  REQUIRE_FALSE(r.isOk());
  CHECK(r.status().code() == Code::kNotFound);
  CHECK(contains(r.status().message(), "/nonexistent/tide.yaml"));
}

TEST_CASE("host config: matchImage picks the first glob that matches the whole image") {
  HostConfig::Process defaults;
  REQUIRE(matchImage(defaults, "nginx:latest") != nullptr);
  CHECK(*matchImage(defaults, "nginx:latest") == kWorkloadArgv);
  CHECK(*matchImage(defaults, "nginx:1.27") == kWorkloadArgv);
  CHECK(matchImage(defaults, "tide-workload:v2") == &defaults.image_catalog[1].second);
  CHECK(matchImage(defaults, "nginx") == nullptr);
  CHECK(matchImage(defaults, "docker.io/nginx:latest") == nullptr);
  CHECK(matchImage(defaults, "") == nullptr);

  HostConfig::Process custom;
  custom.image_catalog = {{"redis:7.?", {"redis-7"}},
                          {"redis:*", {"redis-any"}},
                          {"a*b*c", {"abc"}},
                          {"exact", {"exact"}},
                          {"*", {"fallback"}}};
  CHECK(matchImage(custom, "redis:7.2")->front() == "redis-7");
  CHECK(matchImage(custom, "redis:7.10")->front() == "redis-any");  // ? is one character
  CHECK(matchImage(custom, "redis:")->front() == "redis-any");      // * may be empty
  CHECK(matchImage(custom, "aXbYbZc")->front() == "abc");           // backtracking
  CHECK(matchImage(custom, "abcab")->front() == "fallback");
  CHECK(matchImage(custom, "exact")->front() == "exact");
  CHECK(matchImage(custom, "exactly")->front() == "fallback");
  custom.image_catalog.clear();
  CHECK(matchImage(custom, "nginx:latest") == nullptr);
}

TEST_CASE("host config: the agents section, with errors naming the field") {
  HostConfig c = parseConfig(R"(
agents:
  heartbeat_ttl_s: 3
  replace_after_s: 30
  max_unreachable_share: 0.25
  partition_window_s: 120
)");
  CHECK(c.agents.heartbeat_ttl_s == 3);
  CHECK(c.agents.replace_after_s == 30);
  CHECK(c.agents.max_unreachable_share == 0.25);
  CHECK(c.agents.partition_window_s == 120);

  auto details = configErrors("agents:\n  heartbeat_ttl_s: 0\n  max_unreachable_share: 2\n  replace_afte_s: 1\n");
  CHECK(configDetailAt(details, "agents.heartbeat_ttl_s").message == "must be between 1 and 3600, got 0");
  CHECK(contains(configDetailAt(details, "agents.max_unreachable_share").message, "between 0 and 1"));
  CHECK(contains(configDetailAt(details, "agents.replace_afte_s").message, "unknown key"));
}

TEST_CASE("host config: analysis.providers declares the metric providers") {
  HostConfig c = parseConfig(R"(
analysis:
  providers:
    prom: {type: prometheus, url: "http://127.0.0.1:9090"}
    web: {type: http, url: "https://stats.internal/api", timeout_ms: 500, json_path: data.error_rate}
)");
  REQUIRE(c.analysis.providers.size() == 2);
  CHECK(c.analysis.providers.at("prom") == model::MetricProvider{"prometheus", "http://127.0.0.1:9090", 2000, ""});
  CHECK(c.analysis.providers.at("web") ==
        model::MetricProvider{"http", "https://stats.internal/api", 500, "data.error_rate"});
  CHECK(parseConfig("").analysis.providers.empty());
}

TEST_CASE("host config error: a metric provider's type, url, timeout and json_path are checked") {
  auto details = configErrors(R"(analysis:
  providers:
    a: {type: datadog, url: "http://x"}
    b: {type: prometheus, url: "127.0.0.1:9090", timeout_ms: 0}
    c: {type: http, url: "http://x"}
    d: {url: "http://x"}
)");
  auto at = [&](const std::string& field) { return configDetailAt(details, field); };
  CHECK(at("analysis.providers.a.type").message == "unknown provider type \"datadog\"; expected prometheus or http");
  CHECK(at("analysis.providers.b.url").message == "must start with http:// or https://");
  CHECK(at("analysis.providers.b.timeout_ms").message == "must be between 1 and 60000, got 0");
  CHECK(at("analysis.providers.c.json_path").message ==
        "an http provider needs json_path (where its number is in the answer)");
  CHECK(at("analysis.providers.d.type").location == "tide.yaml:6:8");
  CHECK(details.size() == 5);
}

TEST_CASE("host config: notifications.webhooks declares the webhooks, with the default events") {
  HostConfig c = parseConfig(R"(
notifications:
  webhooks:
    - {name: chat, url: "https://chat.example/hooks/tide"}
    - name: pager
      url: "http://127.0.0.1:9000/"
      events: ["alarm.*", "operation.state:PENDING_APPROVAL"]
      timeout_ms: 2000
      max_attempts: 3
      backoff_initial_ms: 100
      backoff_max_ms: 1000
)");
  REQUIRE(c.notifications.webhooks.size() == 2);
  model::Webhook chat;
  chat.name = "chat";
  chat.url = "https://chat.example/hooks/tide";
  CHECK(c.notifications.webhooks[0] == chat);
  const model::Webhook& pager = c.notifications.webhooks[1];
  CHECK(pager.events == std::vector<std::string>{"alarm.*", "operation.state:PENDING_APPROVAL"});
  CHECK(pager.timeout_ms == 2000);
  CHECK(pager.max_attempts == 3);
  CHECK(pager.backoff_initial_ms == 100);
  CHECK(pager.backoff_max_ms == 1000);
  CHECK(parseConfig("").notifications.webhooks.empty());
}

TEST_CASE("host config error: a webhook's name, url, events and backoff are checked, every problem at once") {
  auto details = configErrors(R"(notifications:
  webhooks:
    - {name: chat, url: "chat.example/hooks"}
    - {name: chat, url: "http://"}
    - {name: ops, url: "http://x", events: ["*", "deployment.state:"], max_attempts: 0}
    - {name: slow, url: "http://x", backoff_initial_ms: 5000, backoff_max_ms: 1000, retries: 3}
    - {url: "http://x"}
)");
  auto at = [&](const std::string& field) { return configDetailAt(details, field); };
  CHECK(at("notifications.webhooks[0].url").message == "must be an http:// or https:// URL with a host");
  CHECK(at("notifications.webhooks[1].name").message == "webhook name given twice");
  CHECK(at("notifications.webhooks[1].url").message == "must be an http:// or https:// URL with a host");
  CHECK(at("notifications.webhooks[2].events").message.starts_with("\"*\" is not an event pattern"));
  CHECK(at("notifications.webhooks[2].max_attempts").message == "must be between 1 and 1000, got 0");
  CHECK(at("notifications.webhooks[3].backoff_max_ms").message == "must be at least backoff_initial_ms");
  CHECK(at("notifications.webhooks[3].retries").message.starts_with("unknown key \"retries\""));
  CHECK(at("notifications.webhooks[4].name").message.find("required") != std::string::npos);
  CHECK(details.size() == 9);
}
