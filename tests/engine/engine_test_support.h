#pragma once
// A whole control loop over real parts for engine tests: a SQLite ledger in a temp dir,
// a copy of the shipped scripts (rolling.lua, the hooks) to which a test may add hooks,
// a policies dir of the test's choosing, and the process driver running `tide workload`
// through the default image catalog. Hooks emit files into <temp dir>/hooks.

#include <doctest/doctest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

#include "drivers/registry.h"
#include "host/config/host_config.h"
#include "host/config/manifest.h"
#include "host/core/clock.h"
#include "host/engine/driver_set.h"
#include "host/engine/engine.h"
#include "host/ledger/ledger.h"
#include "host/lua/registry/script_registry.h"
#include "tests/drivers/driver_test_support.h"
#include "tests/support/vocabulary.h"

namespace tide::testing {

inline const char* kEngineNodes = R"(
capabilities:
  - {name: intel-xeon, type: CPU, score: 10}
clusters:
  - {name: local, driver: process}
nodes:
  - {name: worker-1, cluster: local, update_domain: ud-1, total: {cores: 8, memory_gib: 16},
     capabilities: [intel-xeon], local_volumes: [{mount_path: /mnt/ssd, storage_class: SSD, capacity_gib: 100}]}
  - {name: worker-2, cluster: local, update_domain: ud-1, total: {cores: 8, memory_gib: 16},
     capabilities: [intel-xeon], local_volumes: [{mount_path: /mnt/ssd, storage_class: SSD, capacity_gib: 100}]}
  - {name: worker-3, cluster: local, update_domain: ud-2, total: {cores: 8, memory_gib: 16},
     capabilities: [intel-xeon], local_volumes: [{mount_path: /mnt/ssd, storage_class: SSD, capacity_gib: 100}]}
  - {name: worker-4, cluster: local, update_domain: ud-2, total: {cores: 8, memory_gib: 16},
     capabilities: [intel-xeon], local_volumes: [{mount_path: /mnt/ssd, storage_class: SSD, capacity_gib: 100}]}
)";

// A plan in namespace `ns` running `tide workload` (image nginx:<tag>) with an http health check.
inline std::string enginePlan(const std::string& ns = "web-prod") {
  return R"(
plans:
  - name: web
    namespace: )" +
         ns + R"(
    service_name: web
    matching_capabilities: [{type: CPU, comparator: EQ, names: [intel-xeon]}]
    applications:
      - payload_name: web
        resources: {cores: 2, memory_gib: 4}
        ports: [{protocol: TCP, port: 80}]
        persistent_volumes: [{storage_class: SSD, capacity_gib: 10, mount_path: /data}]
        health_check: {type: http, port: 80, path: /healthz, interval_seconds: 0.2, timeout_seconds: 1}
)";
}

// A dev-namespace plan (auto-approved) rolled out by `script` with `params` (YAML flow map).
inline std::string rolloutPlan(const std::string& script, const std::string& params) {
  return R"(
plans:
  - name: web
    namespace: web-dev
    service_name: web
    matching_capabilities: [{type: CPU, comparator: EQ, names: [intel-xeon]}]
    strategy: {script: )" +
         script + ", params: " + params + R"(}
    applications:
      - payload_name: web
        resources: {cores: 2, memory_gib: 4}
        ports: [{protocol: TCP, port: 80}]
        health_check: {type: http, port: 80, path: /healthz, interval_seconds: 0.2, timeout_seconds: 1,
                       unhealthy_threshold: 1}
)";
}

inline std::string engineDeployment(const std::string& id, int count, const std::string& tag) {
  return "deployments:\n  - plan: web\n    deployment_id: " + id + "\n    instance_count: " + std::to_string(count) +
         "\n    payload_coordinates: [{payload_name: web, coordinates: {image: \"nginx:" + tag + "\"}}]\n";
}

// A container cluster "boxes" of one node and plan "web" (web-dev, auto-approved) serving
// port 8080, at most `max_per_node` instances on the node, probed every `interval_seconds`.
inline std::string containerPlan(int max_per_node, double interval_seconds) {
  return R"(
clusters:
  - {name: boxes, driver: container, driver_config: {pull: never}}
nodes:
  - {name: box-1, cluster: boxes, update_domain: ud-1, total: {cores: 8, memory_gib: 16}}
plans:
  - name: web
    namespace: web-dev
    service_name: web
    placement: {max_per_node: )" +
         std::to_string(max_per_node) + R"(}
    applications:
      - payload_name: web
        resources: {cores: 1, memory_gib: 1}
        ports: [{protocol: TCP, port: 8080}]
        health_check: {type: http, port: 8080, path: /index.html, interval_seconds: )" +
         std::to_string(interval_seconds) + R"(, timeout_seconds: 1}
)";
}

// Deployment `id` of containerPlan(): `count` containers of `image_ref` running busybox httpd
// on 8080 over /www.
inline std::string containerDeployment(const std::string& id, const std::string& image_ref, int count) {
  return "deployments:\n  - plan: web\n    deployment_id: " + id + "\n    instance_count: " + std::to_string(count) +
         "\n    payload_coordinates: [{payload_name: web, coordinates: {image: \"" + image_ref +
         "\", command: [/bin/httpd, -f, -p, \"8080\", -h, /www]}}]\n";
}

struct EngineFixture {
  TempDir dir;
  // Runs with real time (the workloads are real processes) from now; a test skips a long
  // wait (a hook's recheck, a pause) with clock.advance() instead of sleeping through it.
  FakeClock clock{std::chrono::system_clock::now(), FakeClock::Flow::kRealTime};
  std::unique_ptr<ledger::Ledger> ledger;
  lua::DiscardingScriptRecorder recorder;
  std::unique_ptr<lua::ScriptRegistry> scripts;
  std::unique_ptr<engine::DriverSet> drivers;
  std::unique_ptr<engine::Engine> engine;

  // `policies`: file names under policies/ to use (copied into a private policies dir).
  explicit EngineFixture(std::vector<std::string> policies = {}, engine::EngineOptions options = fastOptions()) {
    auto opened = ledger::Ledger::open("sqlite://" + dir.file("tide.db"), clock);
    REQUIRE_MESSAGE(opened.isOk(), opened.status().toString());
    ledger = std::move(opened).value();
    const auto policies_dir = dir.path() / "policies";
    std::filesystem::create_directories(policies_dir);
    for (const auto& p : policies) {
      std::filesystem::copy_file(std::filesystem::path(TIDE_SOURCE_DIR) / "policies" / p, policies_dir / p);
    }
    std::filesystem::copy(std::filesystem::path(TIDE_SOURCE_DIR) / "scripts", scriptsDir(),
                          std::filesystem::copy_options::recursive);
    lua::ScriptRegistryOptions script_options;
    script_options.policies_dir = policies_dir;
    script_options.scripts_dir = scriptsDir();
    scripts = std::make_unique<lua::ScriptRegistry>(script_options, recorder, clock);
    auto summary = scripts->reloadAll();
    REQUIRE_MESSAGE(summary.failed == 0, (summary.errors.empty() ? "" : summary.errors.front()));

    drivers::DriverContext context;
    context.data_dir = dir.path().string();
    const PortRange ports = nextPortRange(50);
    context.port_range_start = ports.start;
    context.port_range_end = ports.end;
    context.image_catalog = config::HostConfig{}.process.image_catalog;
    context.tide_binary = TIDE_BINARY;
    context.clock = &clock;
    drivers = std::make_unique<engine::DriverSet>(*ledger, context);
    if (options.hooks_output_dir.empty()) options.hooks_output_dir = hooksOutputDir();
    engine = std::make_unique<engine::Engine>(*ledger, *scripts, *drivers, clock, options);
  }

  ~EngineFixture() {
    engine.reset();
    // Leave no process behind, whatever the test did.
    for (auto& [cluster, driver] : drivers->built()) {
      auto listed = driver->list();
      if (!listed.isOk()) continue;
      for (const auto& ref : listed.value()) (void)driver->remove(ref);
    }
  }

  static engine::EngineOptions fastOptions() {
    engine::EngineOptions o;
    o.interval = std::chrono::milliseconds(100);
    o.min_interval = std::chrono::milliseconds(5);
    o.rate_per_second = 1000;
    o.executor.backoff_base = std::chrono::milliseconds(50);
    o.executor.backoff_max = std::chrono::milliseconds(200);
    o.executor.operation_deadline = std::chrono::seconds(20);
    o.executor.poll_interval = std::chrono::milliseconds(20);
    o.observer.orphan_grace = std::chrono::seconds(0);
    // Policies and hooks that are meant to finish must, on a loaded machine too: a hook's
    // emit_file syncs to disk, which can outlast the default 50 ms. The loop and memory
    // limits have tests of their own (tests/lua/).
    o.lua_limits.deadline = std::chrono::milliseconds(1000);
    return o;
  }

  std::filesystem::path scriptsDir() const { return dir.path() / "scripts"; }
  std::filesystem::path hooksOutputDir() const { return dir.path() / "hooks"; }

  // Writes (or, with nullopt, removes) scripts/<relative> and reloads the scripts, which
  // must all load; the engine's next hook call sees the change.
  void writeScript(const std::string& relative, const std::optional<std::string>& text) {
    const auto path = scriptsDir() / relative;
    if (text) {
      std::filesystem::create_directories(path.parent_path());
      std::ofstream(path, std::ios::trunc) << *text;
    } else {
      std::filesystem::remove(path);
    }
    auto summary = scripts->reloadAll();
    REQUIRE_MESSAGE(summary.failed == 0, (summary.errors.empty() ? "" : summary.errors.front()));
  }

  // The content of <hooks output dir>/<name>; "" when there is no such file.
  std::string hookOutput(const std::string& name) const {
    std::ifstream in(hooksOutputDir() / name);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  void apply(const std::string& yaml) {
    auto manifest = config::parseManifest(yaml, "test.yaml");
    REQUIRE_MESSAGE(manifest.isOk(), manifest.status().toString());
    auto applied = ledger->applyManifest(manifest.value(), "test");
    REQUIRE_MESSAGE(applied.isOk(), applied.status().toString());
  }

  std::vector<model::Operation> operations(const std::string& state = "") {
    ledger::ListOptions o;
    o.limit = ledger::kMaxPageSize;
    if (!state.empty()) o.filters["state"] = state;
    auto page = ledger->operations().listOperations(o);
    REQUIRE(page.isOk());
    return page->items;
  }

  // The RUNNING instances that serve their meta instance (not a surge's or a stopped
  // colour's).
  std::vector<model::RuntimeInstance> activeRunning() {
    std::vector<model::RuntimeInstance> out;
    for (auto& r : running()) {
      if (r.is_active) out.push_back(r);
    }
    return out;
  }

  // How many events of `kind` the ledger holds.
  int eventCount(const std::string& kind) {
    ledger::ListOptions o;
    o.limit = ledger::kMaxPageSize;
    o.filters["kind"] = kind;
    auto page = ledger->audit().listEvents(o);
    REQUIRE(page.isOk());
    return static_cast<int>(page->items.size());
  }

  // Approves every operation waiting for a person, as "alice".
  int approveAll() {
    int n = 0;
    for (const auto& op : operations("PENDING_APPROVAL")) {
      REQUIRE(
          ledger->operations().setOperationState(op.meta.id, model::OperationState::kApproved, std::nullopt, "alice", "ok", "alice")
              .isOk());
      ++n;
    }
    return n;
  }

  // Settles, approving what waits, until nothing waits.
  void settleApproving(int rounds = 10) {
    for (int i = 0; i < rounds; ++i) {
      engine->settle();
      if (approveAll() == 0) return;
    }
  }

  std::vector<model::RuntimeInstance> running() {
    ledger::ListOptions o;
    o.limit = ledger::kMaxPageSize;
    o.filters["state"] = "RUNNING";
    auto page = ledger->instances().listRuntimeInstances(o);
    REQUIRE(page.isOk());
    return page->items;
  }

  model::Deployment deployment(const std::string& id) {
    auto d = ledger->plans().getDeployment("web", id);
    REQUIRE(d.isOk());
    return d.value();
  }

  // Processes the process driver knows about.
  size_t driverInventory() {
    auto driver = drivers->forCluster("local");
    REQUIRE(driver.isOk());
    auto listed = driver.value()->list();
    REQUIRE(listed.isOk());
    return listed->size();
  }
};

// Bob asks for an operation on `meta`, as `tide deployment operate` does; returns its id.
inline int64_t requestOperation(EngineFixture& f, const std::string& meta, const std::string& type) {
  model::Operation op;
  op.meta_instance = meta;
  op.type = testing::parsed<model::OperationType>(type);
  op.intent = "user";
  op.requested_by = "bob";
  auto created = f.ledger->operations().createOperation(op, "bob");
  REQUIRE_MESSAGE(created.isOk(), created.status().toString());
  return created->meta.id;
}

// GET http://127.0.0.1:<port><path>; "" when it does not answer 200.
inline std::string httpGet(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  auto res = client.Get(path);
  if (!res || res->status != 200) return "";
  return res->body;
}

inline int hostPort(const model::RuntimeInstance& r) { return r.ports.value("tcp/80", 0); }

// The ledger's events of `kind`, oldest first.
inline std::vector<model::Event> events(EngineFixture& f, const std::string& kind) {
  auto all = ledger::listAll(f.ledger->audit(), &ledger::AuditRecords::listEvents, {{"kind", kind}});
  REQUIRE(all.isOk());
  return all.value();
}

}  // namespace tide::testing
