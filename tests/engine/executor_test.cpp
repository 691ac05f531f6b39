// The executor over a counting sim driver (sim_test_support.h): when an instance becomes
// busy, how a write refused for a stale generation is handled, what a RELOCATE that fails
// after the switch leaves, and the order of volume and instance calls.

#include "host/engine/executor.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>

#include "tests/engine/sim_test_support.h"
#include "tests/support/eventually.h"

namespace tide {
namespace {

using testing::CountingDriver;
using testing::engineDeployment;
using testing::EngineFixture;
using testing::eventually;
using testing::installCountingSim;
using testing::kSimCapabilities;
using testing::kSimPlan;
using testing::requestOperation;
using testing::simCluster;

// `n` instances of the sim plan rolled out on one sim cluster of `nodes` nodes.
CountingDriver& rollOutOnSim(EngineFixture& f, int n, int nodes) {
  f.apply(std::string(kSimCapabilities) + simCluster("sim", nodes));
  CountingDriver& driver = installCountingSim(f, "sim");
  f.apply(kSimPlan);
  f.apply(engineDeployment("v1", n, "1"));
  f.engine->settle();
  REQUIRE(f.activeRunning().size() == static_cast<size_t>(n));
  return driver;
}

std::string runtimeId(const model::RuntimeInstance& r) { return std::to_string(r.meta.id); }

TEST_CASE("executor: the instance of a submitted operation is busy before a worker takes it") {
  EngineFixture f({"auto_approve_dev.lua"});
  CountingDriver& driver = rollOutOnSim(f, 1, 2);
  const model::RuntimeInstance serving = f.activeRunning().at(0);
  // No worker runs: what dispatch submits stays queued, as it does on a busy host until a
  // worker is free.
  f.engine->executor().stop();
  const int64_t stop = requestOperation(f, serving.meta_instance, "STOP");
  for (int pass = 0; pass < 5 && !f.engine->executor().busy(stop); ++pass) f.engine->runPass();
  REQUIRE(f.engine->executor().busy(stop));
  CHECK(f.engine->executor().busyInstances().count(serving.meta_instance) == 1);

  // The process goes away as the STOP would make it: the observer leaves the instance to
  // its operation instead of marking it FAILED.
  REQUIRE(driver.stop({runtimeId(serving), serving.node, ""}).isOk());
  f.engine->runPass();
  CHECK(f.ledger->instances().getRuntimeInstance(serving.meta.id)->state == model::RuntimeState::kRunning);

  f.engine->settle();
  CHECK(f.ledger->operations().getOperation(stop)->state == model::OperationState::kSucceeded);
  CHECK(f.ledger->instances().getRuntimeInstance(serving.meta.id)->state == model::RuntimeState::kTerminated);
}

TEST_CASE("executor: one worker per instance: another operation of a busy instance waits until the first lets go") {
  EngineFixture f({"auto_approve_dev.lua"});
  rollOutOnSim(f, 1, 2);
  const model::RuntimeInstance serving = f.activeRunning().at(0);
  f.engine->executor().stop();
  const int64_t stop = requestOperation(f, serving.meta_instance, "STOP");
  for (int pass = 0; pass < 5 && !f.engine->executor().busy(stop); ++pass) f.engine->runPass();
  REQUIRE(f.engine->executor().busy(stop));

  // An abort cancels a RUNNING operation in the ledger while its worker still works on it, and
  // the instance's next operation is accepted at once: it must not run beside the first.
  model::Operation next;
  next.meta.id = stop + 1000;
  next.meta_instance = serving.meta_instance;
  next.type = model::OperationType::kUpdate;
  CHECK_FALSE(f.engine->executor().submit(next));
  CHECK_FALSE(f.engine->executor().busy(next.meta.id));

  f.engine->executor().start();
  REQUIRE(eventually([&] { return !f.engine->executor().busy(stop); }));
  CHECK(f.engine->executor().submit(next));
}

TEST_CASE("executor: a runtime write refused for a stale generation is read again, not failed") {
  EngineFixture f({"auto_approve_dev.lua"});
  f.apply(std::string(kSimCapabilities) + simCluster("sim", 2));
  CountingDriver& driver = installCountingSim(f, "sim");
  f.apply(kSimPlan);
  // Another writer moves each new runtime instance while the executor starts it, so the
  // executor's next write names a generation that is gone.
  std::atomic<int> moved{0};
  driver.before_call = [&](const std::string& call, const std::string& id) {
    if (call != "ensure") return Status::ok();
    ledger::RuntimeUpdate note;
    note.message = "touched by another writer";
    if (f.ledger->instances().updateRuntimeInstance(std::stoll(id), note, std::nullopt, "test").isOk()) ++moved;
    return Status::ok();
  };
  f.apply(engineDeployment("v1", 2, "1"));
  f.engine->settle();
  CHECK(moved >= 2);
  CHECK(f.activeRunning().size() == 2);
  CHECK(f.operations("FAILED").empty());
  CHECK(f.deployment("v1").state == model::DeploymentState::kCompleted);
}

TEST_CASE("executor: a RELOCATE that fails after the switch keeps the new instance serving") {
  EngineFixture f({"auto_approve_dev.lua"});
  CountingDriver& driver = rollOutOnSim(f, 1, 2);
  const model::RuntimeInstance old = f.activeRunning().at(0);
  // Removing the old instance fails for good (not a transient error): the operation fails
  // after the new one became active.
  // The hook outlives this scope (the fixture's destructor removes what is left through the
  // driver), so it holds what it needs by value.
  auto refused = std::make_shared<std::atomic<bool>>(false);
  driver.before_call = [refused, old_id = runtimeId(old)](const std::string& call, const std::string& id) {
    if (call != "remove" || id != old_id || *refused) return Status::ok();
    *refused = true;
    return Status(Code::kPermissionDenied, "the test refuses to remove the old instance");
  };
  const int64_t relocate = requestOperation(f, old.meta_instance, "RELOCATE");
  f.engine->settle();
  REQUIRE(*refused);
  auto failed = f.ledger->operations().getOperation(relocate);
  REQUIRE(failed.isOk());
  CHECK(failed->state == model::OperationState::kFailed);

  // The instance it moved to serves, the same one, never replaced.
  auto serving = f.activeRunning();
  REQUIRE(serving.size() == 1);
  CHECK(serving[0].meta.id == failed->target["runtime_instance"].get<int64_t>());
  CHECK(serving[0].node != old.node);
  auto status = driver.status({runtimeId(serving[0]), serving[0].node, serving[0].driver_handle});
  REQUIRE_MESSAGE(status.isOk(), status.status().toString());
  CHECK(status->state == model::WorkloadState::kRunning);
  CHECK(f.ledger->instances().getRuntimeInstance(old.meta.id)->state == model::RuntimeState::kFailed);
}

TEST_CASE("executor: a rollout's UPDATE of an instance that runs nowhere places it again") {
  EngineFixture f({"auto_approve_dev.lua"});
  CountingDriver& driver = rollOutOnSim(f, 1, 2);
  const model::RuntimeInstance crashed = f.activeRunning().at(0);
  // Its process dies and the RESTART the controller asks for fails for good: the instance
  // runs nowhere and waits for a person.
  auto refusing = std::make_shared<std::atomic<bool>>(true);
  driver.before_call = [refusing](const std::string& call, const std::string&) {
    if (call != "ensure" || !*refusing) return Status::ok();
    return Status(Code::kPermissionDenied, "the test refuses to start anything");
  };
  REQUIRE(driver.stop({runtimeId(crashed), crashed.node, crashed.driver_handle}).isOk());
  f.engine->settle();
  REQUIRE(f.activeRunning().empty());
  REQUIRE(f.operations("FAILED").size() == 1);

  // A fixed version rolls out: its UPDATE of that instance places and starts it again, with
  // the new coordinates, instead of failing because nothing runs to update.
  *refusing = false;
  f.apply(engineDeployment("v2", 1, "2"));
  f.engine->settle();
  CHECK(f.deployment("v2").state == model::DeploymentState::kCompleted);
  CHECK(f.operations("FAILED").size() == 1);
  auto serving = f.activeRunning();
  REQUIRE(serving.size() == 1);
  CHECK(serving[0].meta_instance == crashed.meta_instance);
  CHECK(serving[0].coordinates.dump().find("nginx:2") != std::string::npos);
  CHECK(f.ledger->instances().getMetaInstance(crashed.meta_instance)->deployment_id == "v2");
}

TEST_CASE("executor: a rollout's UPDATE of an instance a person stopped fails and starts nothing") {
  EngineFixture f({"auto_approve_dev.lua"});
  rollOutOnSim(f, 1, 2);
  const model::RuntimeInstance first = f.activeRunning().at(0);
  requestOperation(f, first.meta_instance, "STOP");
  f.engine->settle();
  REQUIRE(f.ledger->instances().getMetaInstance(first.meta_instance)->state == model::MetaState::kStopped);

  f.apply(engineDeployment("v2", 1, "2"));
  f.engine->settle();
  auto failed = f.operations("FAILED");
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].type == model::OperationType::kUpdate);
  CHECK(failed[0].message.find("the instance is STOPPED") != std::string::npos);
  CHECK(f.ledger->instances().getMetaInstance(first.meta_instance)->state == model::MetaState::kStopped);
  CHECK(f.running().empty());
  auto invariants = f.ledger->checkInvariants();
  REQUIRE(invariants.isOk());
  CHECK(invariants->empty());
}

TEST_CASE("executor: an UPDATE whose instance stopped running while a hook held it is asked again") {
  engine::EngineOptions options = EngineFixture::fastOptions();
  // A hook delays every UPDATE by two minutes (once per attempt), as operation.before may.
  options.executor.before_operation = [](const model::Operation& op) {
    engine::HookGate gate;
    if (op.type != model::OperationType::kUpdate) return gate;
    gate.kind = engine::HookGate::Kind::kDelay;
    gate.hook = "test";
    gate.delay = std::chrono::minutes(2);
    return gate;
  };
  EngineFixture f({"auto_approve_dev.lua"}, options);
  CountingDriver& driver = rollOutOnSim(f, 1, 2);
  const model::RuntimeInstance first = f.activeRunning().at(0);
  f.apply(engineDeployment("v2", 1, "2"));
  f.engine->settle();
  auto held = f.operations("APPROVED");
  REQUIRE(held.size() == 1);
  REQUIRE(held[0].type == model::OperationType::kUpdate);

  // Meanwhile its process dies; the observer marks it FAILED (no worker holds it).
  REQUIRE(driver.stop({runtimeId(first), first.node, first.driver_handle}).isOk());
  f.engine->settle();
  REQUIRE(f.ledger->instances().getRuntimeInstance(first.meta.id)->state == model::RuntimeState::kFailed);

  // The attempt finds nothing to update: the UPDATE ends without effect (CANCELLED, not
  // FAILED, which would fail the rollout), the instance runs again and the rollout completes.
  for (int wait = 0; wait < 3 && f.deployment("v2").state != model::DeploymentState::kCompleted; ++wait) {
    f.clock.advance(std::chrono::minutes(2));
    f.engine->settle();
  }
  auto update = f.ledger->operations().getOperation(held[0].meta.id);
  REQUIRE(update.isOk());
  CHECK(update->state == model::OperationState::kCancelled);
  CHECK(update->message.find("stopped running") != std::string::npos);
  CHECK(f.operations("FAILED").empty());
  CHECK(f.deployment("v2").state == model::DeploymentState::kCompleted);
  auto serving = f.activeRunning();
  REQUIRE(serving.size() == 1);
  CHECK(serving[0].coordinates.dump().find("nginx:2") != std::string::npos);
}

// A sim cluster whose nodes have SSD storage, and the sim plan with a persistent volume.
const std::string kVolumeFleet = std::string(R"(
capabilities:
  - {name: intel-xeon, type: CPU, score: 10}
clusters:
  - {name: sim, driver: sim}
nodes:
  - {name: sim-1, cluster: sim, update_domain: ud-1, total: {cores: 2, memory_gib: 4}, capabilities: [intel-xeon],
     local_volumes: [{mount_path: /mnt/ssd, storage_class: SSD, capacity_gib: 100}]}
  - {name: sim-2, cluster: sim, update_domain: ud-2, total: {cores: 2, memory_gib: 4}, capabilities: [intel-xeon],
     local_volumes: [{mount_path: /mnt/ssd, storage_class: SSD, capacity_gib: 100}]}
)") + testing::simPlanWith("        persistent_volumes: [{storage_class: SSD, capacity_gib: 10, mount_path: /data}]\n");

// The driver calls about volumes and instances, in the order they came.
struct CallLog {
  std::mutex mu;
  std::vector<std::string> calls;  // "<call> <id>"

  void record(const std::string& call, const std::string& id) {
    if (call == "status" || call == "status_all") return;
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back(call + " " + id);
  }
  // Where "<call> <id>" first came; calls.size() when it never did.
  size_t at(const std::string& call, const std::string& id) {
    std::lock_guard<std::mutex> lock(mu);
    return std::find(calls.begin(), calls.end(), call + " " + id) - calls.begin();
  }
};

// The volumes of runtime instance `r`, as "<id>@<node>".
std::vector<std::string> volumeIds(const model::RuntimeInstance& r) {
  std::vector<std::string> ids;
  for (const auto& v : r.volumes) ids.push_back(v.value("id", "") + "@" + r.node);
  return ids;
}

// Checks that `r`'s volumes were made before it was started.
void checkVolumesMadeFirst(CallLog& log, const model::RuntimeInstance& r) {
  const size_t started = log.at("ensure", runtimeId(r));
  REQUIRE(started < log.calls.size());
  for (const auto& volume : volumeIds(r)) CHECK(log.at("ensure_volume", volume) < started);
}

// Checks that `r` was removed, and its volumes after it.
void checkVolumesRemovedAfter(CallLog& log, const model::RuntimeInstance& r) {
  const size_t removed = log.at("remove", runtimeId(r));
  REQUIRE(removed < log.calls.size());
  for (const auto& volume : volumeIds(r)) {
    const size_t volume_removed = log.at("remove_volume", volume);
    CHECK(volume_removed < log.calls.size());
    CHECK(removed < volume_removed);
  }
}

TEST_CASE("executor: volumes are made before their instance and removed after it") {
  EngineFixture f({"auto_approve_dev.lua"});
  f.apply(kVolumeFleet);
  CountingDriver& driver = installCountingSim(f, "sim");
  // Held by the hook, which the fixture's destructor still calls (it removes what is left).
  auto calls = std::make_shared<CallLog>();
  CallLog& log = *calls;
  driver.before_call = [calls](const std::string& call, const std::string& id) {
    calls->record(call, id);
    return Status::ok();
  };
  f.apply(engineDeployment("v1", 1, "1"));
  f.engine->settle();
  const model::RuntimeInstance first = f.activeRunning().at(0);
  REQUIRE_FALSE(volumeIds(first).empty());
  checkVolumesMadeFirst(log, first);

  // RELOCATE: the new instance's volumes before it; the old instance before its volumes.
  requestOperation(f, first.meta_instance, "RELOCATE");
  f.engine->settle();
  const model::RuntimeInstance moved = f.activeRunning().at(0);
  REQUIRE(moved.meta.id != first.meta.id);
  checkVolumesMadeFirst(log, moved);
  checkVolumesRemovedAfter(log, first);

  // DELETE: every instance, then the volumes.
  requestOperation(f, moved.meta_instance, "DELETE");
  f.engine->settle();
  CHECK(f.ledger->instances().getMetaInstance(moved.meta_instance)->state == model::MetaState::kDeleted);
  checkVolumesRemovedAfter(log, moved);
}

// Passes calls on, but answers ensure() as a node agent's driver does: PENDING, with no
// handle and no ports yet (docs/agents.md); status() then tells them.
class PortsLaterDriver final : public drivers::Driver {
 public:
  explicit PortsLaterDriver(std::unique_ptr<drivers::Driver> inner) : inner_(std::move(inner)) {}
  Status ensureVolume(const drivers::VolumeSpec& v) override { return inner_->ensureVolume(v); }
  Status removeVolume(const drivers::VolumeRef& v) override { return inner_->removeVolume(v); }
  Result<drivers::RuntimeStatus> ensure(const drivers::RuntimeSpec& spec) override {
    TIDE_RETURN_IF_ERROR(inner_->ensure(spec).status());
    drivers::RuntimeStatus pending;
    pending.state = model::WorkloadState::kPending;
    return pending;
  }
  Status stop(const drivers::RuntimeRef& ref) override { return inner_->stop(ref); }
  Status remove(const drivers::RuntimeRef& ref) override { return inner_->remove(ref); }
  Result<drivers::RuntimeStatus> status(const drivers::RuntimeRef& ref) override { return inner_->status(ref); }
  Result<std::vector<drivers::RuntimeRef>> list() override { return inner_->list(); }

 private:
  const std::unique_ptr<drivers::Driver> inner_;
};

TEST_CASE("executor: ports and handle a driver tells only once the instance runs are recorded") {
  EngineFixture f({"auto_approve_dev.lua"});
  f.apply(std::string(kSimCapabilities) + simCluster("sim", 1));
  drivers::DriverContext context;
  context.clock = &f.clock;
  context.cluster = "sim";
  auto sim = drivers::makeDriver("sim", nullptr, context);
  REQUIRE(sim.isOk());
  f.drivers->install("sim", std::make_unique<PortsLaterDriver>(std::move(sim).value()));
  f.apply(kSimPlan);
  f.apply(engineDeployment("v1", 1, "1"));
  f.engine->settle();
  const model::RuntimeInstance running = f.activeRunning().at(0);
  CHECK(running.ports.contains("tcp/80"));
  CHECK_FALSE(running.driver_handle.empty());
}

}  // namespace
}  // namespace tide
