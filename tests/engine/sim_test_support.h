#pragma once
// Fleets for engine tests over the sim driver: manifests of sim clusters with many nodes,
// a plan whose health check nothing could pass if it were probed (sim instances listen on
// nothing), and a driver wrapper that counts the calls reaching it, can override the
// health its inner driver reports and names the nodes a test says it cannot reach.

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "drivers/driver.h"
#include "tests/engine/engine_test_support.h"

namespace tide::testing {

// A sim cluster `cluster` of `nodes` nodes named <cluster>-<n>, in two update domains, each
// fitting one instance of simPlan(). `driver_config` is the cluster's.
inline std::string simCluster(const std::string& cluster, int nodes,
                              const nlohmann::json& driver_config = nlohmann::json::object()) {
  std::string yaml =
      "clusters:\n  - {name: " + cluster + ", driver: sim, driver_config: " + driver_config.dump() + "}\nnodes:\n";
  for (int i = 1; i <= nodes; ++i) {
    yaml += "  - {name: " + cluster + "-" + std::to_string(i) + ", cluster: " + cluster + ", update_domain: ud-" +
            std::to_string(i % 2 + 1) + ", total: {cores: 2, memory_gib: 4}, capabilities: [intel-xeon]}\n";
  }
  return yaml;
}

inline const char* kSimCapabilities = "capabilities:\n  - {name: intel-xeon, type: CPU, score: 10}\n";

// Plan "web" in a dev namespace (policies/auto_approve_dev.lua approves it) whose one
// application needs one core and 1 GiB and has `fields` besides (lines of the
// application's YAML mapping, indented by 8 spaces).
inline std::string simPlanWith(const std::string& fields) {
  return R"(
plans:
  - name: web
    namespace: dev-fleet
    service_name: web
    matching_capabilities: [{type: CPU, comparator: EQ, names: [intel-xeon]}]
    applications:
      - payload_name: web
        resources: {cores: 1, memory_gib: 1}
)" + fields;
}

// The sim plan: an http health check on port 80.
inline const std::string kSimPlan = simPlanWith(
    "        ports: [{protocol: TCP, port: 80}]\n"
    "        health_check: {type: http, port: 80, path: /healthz, interval_seconds: 0.2, timeout_seconds: 1}\n");

// Counts the calls that reach it and passes them on. While `reported_health` is 0 or 1, the
// RUNNING statuses it passes on report that health; -1 leaves health unreported.
class CountingDriver final : public drivers::Driver {
 public:
  explicit CountingDriver(std::unique_ptr<drivers::Driver> inner) : inner_(std::move(inner)) {}

  std::atomic<int> lists{0};
  std::atomic<int> statuses{0};
  std::atomic<int> batches{0};
  std::atomic<size_t> batched_refs{0};
  std::atomic<int> reported_health{1};
  // When set, runs before a call is passed on, on the caller's thread, with the call's name
  // ("ensure_volume", "remove_volume", "ensure", "stop", "remove", "status", "status_all")
  // and what it is about: the runtime id, "<volume id>@<node>" for a volume ("" for
  // status_all); a status that is not ok is
  // returned instead of passing the call on. Set it while no engine thread calls the driver.
  std::function<Status(const std::string& call, const std::string& id)> before_call;
  // What unreachableNodes() answers. Set it while no engine thread calls the driver.
  std::vector<drivers::UnreachableNode> unreachable;

  Status ensureVolume(const drivers::VolumeSpec& v) override {
    TIDE_RETURN_IF_ERROR(before("ensure_volume", v.id + "@" + v.node));
    return inner_->ensureVolume(v);
  }
  Status removeVolume(const drivers::VolumeRef& v) override {
    TIDE_RETURN_IF_ERROR(before("remove_volume", v.id + "@" + v.node));
    return inner_->removeVolume(v);
  }
  Result<drivers::RuntimeStatus> ensure(const drivers::RuntimeSpec& spec) override {
    TIDE_RETURN_IF_ERROR(before("ensure", spec.id));
    return report(inner_->ensure(spec));
  }
  Status stop(const drivers::RuntimeRef& ref) override {
    TIDE_RETURN_IF_ERROR(before("stop", ref.id));
    return inner_->stop(ref);
  }
  Status remove(const drivers::RuntimeRef& ref) override {
    TIDE_RETURN_IF_ERROR(before("remove", ref.id));
    return inner_->remove(ref);
  }
  Result<drivers::RuntimeStatus> status(const drivers::RuntimeRef& ref) override {
    ++statuses;
    TIDE_RETURN_IF_ERROR(before("status", ref.id));
    return report(inner_->status(ref));
  }
  Result<std::vector<drivers::RuntimeAnswer>> statusAll(const std::vector<drivers::RuntimeRef>& refs) override {
    ++batches;
    batched_refs += refs.size();
    TIDE_RETURN_IF_ERROR(before("status_all", ""));
    auto answers = inner_->statusAll(refs);
    if (!answers.isOk()) return answers;
    for (auto& answer : *answers) answer = report(std::move(answer));
    return answers;
  }
  Result<std::vector<drivers::RuntimeRef>> list() override {
    ++lists;
    TIDE_RETURN_IF_ERROR(before("list", ""));
    return inner_->list();
  }
  std::vector<drivers::UnreachableNode> unreachableNodes() override { return unreachable; }

  void resetCounts() {
    lists = 0;
    statuses = 0;
    batches = 0;
    batched_refs = 0;
  }

 private:
  drivers::RuntimeAnswer report(drivers::RuntimeAnswer answer) const {
    const int health = reported_health;
    if (answer.isOk() && answer->state == model::WorkloadState::kRunning) {
      answer->healthy = health < 0 ? std::nullopt : std::optional<bool>(health == 1);
      if (health == 0) answer->message = "the test says so";
    }
    return answer;
  }

  Status before(const std::string& call, const std::string& id) const {
    return before_call ? before_call(call, id) : Status::ok();
  }

  const std::unique_ptr<drivers::Driver> inner_;
};

// The sim driver a cluster with `driver_config` gets, on the fixture's clock, counted.
inline CountingDriver& installCountingSim(EngineFixture& f, const std::string& cluster,
                                          const nlohmann::json& driver_config = nullptr) {
  drivers::DriverContext context;
  context.clock = &f.clock;
  context.cluster = cluster;
  // Ports of this test process's own block, which nothing listens on: a probe of them fails.
  const PortRange ports = nextPortRange(1);
  context.port_range_start = ports.start;
  context.port_range_end = ports.end;
  auto sim = drivers::makeDriver("sim", driver_config, context);
  REQUIRE_MESSAGE(sim.isOk(), sim.status().toString());
  auto counting = std::make_unique<CountingDriver>(std::move(sim).value());
  CountingDriver& out = *counting;
  f.drivers->install(cluster, std::move(counting));
  return out;
}

// A sim cluster "sim" of `nodes` nodes under a counting driver, the sim plan, and deployment
// v1 of `instances` instances of it, not rolled out yet.
inline CountingDriver& deploySimFleet(EngineFixture& f, int nodes, int instances) {
  f.apply(std::string(kSimCapabilities) + simCluster("sim", nodes));
  CountingDriver& driver = installCountingSim(f, "sim");
  f.apply(kSimPlan);
  f.apply(engineDeployment("v1", instances, "1"));
  return driver;
}

// The RUNNING active runtime instances on `node`.
inline std::vector<model::RuntimeInstance> activeOn(EngineFixture& f, const std::string& node) {
  std::vector<model::RuntimeInstance> out;
  for (auto& r : f.activeRunning()) {
    if (r.node == node) out.push_back(r);
  }
  return out;
}

inline std::vector<model::Operation> relocations(EngineFixture& f) {
  std::vector<model::Operation> out;
  for (auto& op : f.operations()) {
    if (op.type == model::OperationType::kRelocate) out.push_back(op);
  }
  return out;
}

}  // namespace tide::testing
