// The control loop end to end over real parts (engine_test_support.h): deployments become
// `tide workload` processes answering HTTP, scale across update domains, change version
// in place, relocate make-before-break, stop and restart, recover from a crash of the
// workload, and run without manual approvals when a policy approves.

#include <signal.h>
#include <atomic>
#include <thread>


#include "host/engine/doctor.h"
#include "tests/engine/engine_test_support.h"
#include "tests/support/raw_sql.h"

namespace tide {
namespace {

using testing::engineDeployment;
using testing::EngineFixture;
using testing::enginePlan;
using testing::hostPort;
using testing::httpGet;
using testing::kEngineNodes;
using testing::requestOperation;

// Deployment d1 of one instance on the manually approved plan, after one pass: its CREATE
// waits for a person, with its placement reserved.
model::Operation firstCreateWaiting(EngineFixture& f) {
  f.apply(kEngineNodes);
  f.apply(enginePlan());
  f.apply(engineDeployment("d1", 1, "1.0"));
  f.engine->settle();
  auto waiting = f.operations("PENDING_APPROVAL");
  REQUIRE(waiting.size() == 1);
  return waiting[0];
}

// The same deployment approved: its one instance RUNNING.
model::RuntimeInstance firstInstanceRunning(EngineFixture& f) {
  f.apply(kEngineNodes);
  f.apply(enginePlan());
  f.apply(engineDeployment("d1", 1, "1.0"));
  f.settleApproving();
  auto running = f.activeRunning();
  REQUIRE(running.size() == 1);
  return running[0];
}

TEST_CASE("engine: a deployment waits for approval, then runs processes that answer HTTP") {
  EngineFixture f;
  const model::Operation waiting = firstCreateWaiting(f);
  CHECK(waiting.type == model::OperationType::kCreate);
  CHECK(waiting.target.contains("runtime_instance"));  // placement reserved before approval
  CHECK(f.running().empty());
  CHECK(f.deployment("d1").state == model::DeploymentState::kInProgress);

  f.settleApproving();
  auto running = f.activeRunning();
  REQUIRE(running.size() == 1);
  CHECK(running[0].healthy);
  CHECK(httpGet(hostPort(running[0]), "/version").find("1.0") != std::string::npos);
  CHECK(f.deployment("d1").state == model::DeploymentState::kCompleted);
  auto done = f.operations("SUCCEEDED");
  REQUIRE(done.size() == 1);
  CHECK(done[0].approved_by == "alice");
  auto invariants = f.ledger->checkInvariants();
  REQUIRE(invariants.isOk());
  CHECK(invariants->empty());
}

TEST_CASE("engine: scale out across update domains, new version in place, scale back in") {
  EngineFixture f;
  firstInstanceRunning(f);

  f.apply(engineDeployment("d2", 3, "1.0"));
  f.settleApproving();
  CHECK(f.deployment("d2").state == model::DeploymentState::kCompleted);
  auto three = f.activeRunning();
  REQUIRE(three.size() == 3);
  std::set<std::string> domains, nodes;
  for (const auto& r : three) {
    nodes.insert(r.node);
    domains.insert(f.ledger->inventory().getNode(r.node)->update_domain);
  }
  CHECK(nodes.size() == 3);    // anti-affinity
  CHECK(domains.size() == 2);  // spread over both update domains
  // Same coordinates: the first instance was adopted, not updated.
  for (const auto& op : f.operations()) CHECK(op.type != model::OperationType::kUpdate);

  f.apply(engineDeployment("d3", 1, "2.0"));
  f.settleApproving();
  CHECK(f.deployment("d3").state == model::DeploymentState::kCompleted);
  auto one = f.activeRunning();
  REQUIRE(one.size() == 1);
  CHECK(httpGet(hostPort(one[0]), "/version").find("2.0") != std::string::npos);
  CHECK(f.driverInventory() == 1);  // the other processes are gone
  auto invariants = f.ledger->checkInvariants();
  REQUIRE(invariants.isOk());
  CHECK(invariants->empty());
}

TEST_CASE("engine: relocate is make-before-break, stop frees the node, restart brings it back") {
  EngineFixture f({"auto_approve_dev.lua"});
  f.apply(kEngineNodes);
  f.apply(enginePlan("web-dev"));
  f.apply(engineDeployment("d1", 1, "1.0"));
  f.engine->settle();
  auto before = f.activeRunning();
  REQUIRE(before.size() == 1);
  CHECK(f.operations("PENDING_APPROVAL").empty());  // the policy approved
  const std::string meta = before[0].meta_instance;
  const std::string old_node = before[0].node;

  // Watch, while the relocation runs, that some active instance is always healthy.
  std::atomic<bool> done{false};
  std::atomic<int> gaps{0};
  std::thread watcher([&] {
    while (!done) {
      ledger::ListOptions o;
      o.filters["meta_instance"] = meta;
      auto page = f.ledger->instances().listRuntimeInstances(o);
      bool serving = false;
      if (page.isOk()) {
        for (const auto& r : page->items)
          serving |= r.is_active && r.state == model::RuntimeState::kRunning && r.healthy;
      }
      if (!serving) ++gaps;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  requestOperation(f, meta, "RELOCATE");
  f.engine->settle();
  done = true;
  watcher.join();
  CHECK(gaps == 0);
  auto after = f.activeRunning();
  REQUIRE(after.size() == 1);
  CHECK(after[0].meta_instance == meta);
  CHECK(after[0].node != old_node);
  CHECK(f.driverInventory() == 1);
  CHECK_FALSE(httpGet(hostPort(after[0]), "/healthz").empty());

  const double free_before_stop = f.ledger->inventory().getNode(after[0].node)->remaining.cores;
  requestOperation(f, meta, "STOP");
  f.engine->settle();
  CHECK(f.activeRunning().empty());
  CHECK(f.driverInventory() == 0);
  CHECK(f.ledger->instances().getMetaInstance(meta)->state == model::MetaState::kStopped);
  CHECK(f.ledger->inventory().getNode(after[0].node)->remaining.cores == doctest::Approx(free_before_stop + 2));

  requestOperation(f, meta, "RESTART");
  f.engine->settle();
  auto back = f.activeRunning();
  REQUIRE(back.size() == 1);
  CHECK(f.ledger->instances().getMetaInstance(meta)->state == model::MetaState::kActive);
  CHECK_FALSE(httpGet(hostPort(back[0]), "/healthz").empty());
}

TEST_CASE("engine: an instance whose process dies is marked FAILED and restarted through the policies") {
  EngineFixture f({"auto_approve_dev.lua"});
  f.apply(kEngineNodes);
  f.apply(enginePlan("web-dev"));
  f.apply(engineDeployment("d1", 1, "1.0"));
  f.engine->settle();
  auto before = f.activeRunning();
  REQUIRE(before.size() == 1);
  const auto identity = testing::parseHandle(before[0].driver_handle);
  REQUIRE(::kill(-identity.pid, SIGKILL) == 0);
  REQUIRE(testing::eventually([&] { return !testing::processAlive(identity.pid); }));

  f.engine->settle();
  auto failed = f.ledger->instances().getRuntimeInstance(before[0].meta.id);
  CHECK(failed->state == model::RuntimeState::kFailed);
  auto after = f.activeRunning();
  REQUIRE(after.size() == 1);
  CHECK(after[0].meta_instance == before[0].meta_instance);
  CHECK(after[0].meta.id != before[0].meta.id);
  bool restarted = false;
  // Asked for on the deployment's behalf: requested by whoever added it (f.apply's actor).
  for (const auto& op : f.operations("SUCCEEDED"))
    restarted |= op.type == model::OperationType::kRestart && op.requested_by == "test";
  CHECK(restarted);
}

TEST_CASE("engine: a rejected operation releases its reservation and fails the rollout") {
  EngineFixture f;
  const model::Operation waiting = firstCreateWaiting(f);
  const std::string node = waiting.target["node"];
  const double reserved = f.ledger->inventory().getNode(node)->remaining.cores;
  REQUIRE(
      f.ledger
          ->operations().setOperationState(waiting.meta.id, model::OperationState::kRejected, std::nullopt, "alice", "no", "alice")
          .isOk());
  f.engine->settle();
  CHECK(f.ledger->inventory().getNode(node)->remaining.cores == doctest::Approx(reserved + 2));
  CHECK(f.deployment("d1").state == model::DeploymentState::kFailed);
  CHECK(f.driverInventory() == 0);
  // Nothing runs it and nothing will start it unless someone asks: STOPPED, not ACTIVE.
  CHECK(f.ledger->instances().getMetaInstance(waiting.meta_instance)->state == model::MetaState::kStopped);
  CHECK(f.operations("PENDING").empty());
  CHECK(f.operations("PENDING_APPROVAL").empty());
}

TEST_CASE("engine: a cancelled operation is never executed, and its instance takes the next one") {
  EngineFixture f;
  const model::Operation waiting = firstCreateWaiting(f);
  const int64_t reserved = waiting.target["runtime_instance"];
  // Approved, but cancelled before any pass could dispatch it.
  REQUIRE(
      f.ledger
          ->operations().setOperationState(waiting.meta.id, model::OperationState::kApproved, std::nullopt, "alice", "ok", "alice")
          .isOk());
  REQUIRE(f.ledger->operations().cancelOperation(waiting.meta.id, std::nullopt, "bob", "cancelled by bob").isOk());
  f.engine->settle();
  CHECK(f.ledger->operations().getOperation(waiting.meta.id)->state == model::OperationState::kCancelled);
  CHECK(f.ledger->operations().getOperation(waiting.meta.id)->attempts == 0);
  CHECK(f.ledger->instances().getRuntimeInstance(reserved)->state == model::RuntimeState::kTerminated);
  CHECK(f.driverInventory() == 0);

  // The rollout still wants the instance: the controller asks again, and that one runs.
  f.settleApproving();
  auto running = f.activeRunning();
  REQUIRE(running.size() == 1);
  CHECK(running[0].meta_instance == waiting.meta_instance);
  CHECK(running[0].meta.id != reserved);
  CHECK(f.deployment("d1").state == model::DeploymentState::kCompleted);
  CHECK(f.ledger->checkInvariants()->empty());
}

TEST_CASE("engine: a DELETE whose host died after marking its instance DELETED succeeds after a restart") {
  // The crash harness's find: DELETE marks its meta instance DELETED, then, in a commit of
  // its own, the operation SUCCEEDED. A host killed between the two left the operation
  // RUNNING on an instance the world leaves out, so nothing ever finished it.
  EngineFixture f;
  const std::string meta = firstInstanceRunning(f).meta_instance;
  const int64_t id = requestOperation(f, meta, "DELETE");
  f.settleApproving();
  REQUIRE(f.ledger->operations().getOperation(id)->state == model::OperationState::kSucceeded);
  REQUIRE(f.ledger->instances().getMetaInstance(meta)->state == model::MetaState::kDeleted);

  // The host is gone, and its last commit was the instance's: the operation still RUNNING.
  f.engine.reset();
  testing::execRawSql(f.dir.file("tide.db"), "UPDATE operations SET state = 'RUNNING' WHERE id = " + std::to_string(id));
  REQUIRE(f.ledger->operations().getOperation(id)->state == model::OperationState::kRunning);

  engine::EngineOptions options = EngineFixture::fastOptions();
  options.hooks_output_dir = f.hooksOutputDir();
  f.engine = std::make_unique<engine::Engine>(*f.ledger, *f.scripts, *f.drivers, f.clock, options);
  f.engine->settle();
  const model::Operation after = *f.ledger->operations().getOperation(id);
  CHECK(after.state == model::OperationState::kSucceeded);
  CHECK(f.ledger->checkInvariants()->empty());
  CHECK(f.driverInventory() == 0);
}

TEST_CASE("engine: a new deployment supersedes one that waits for approval") {
  EngineFixture f;
  f.apply(kEngineNodes);
  f.apply(enginePlan());
  f.apply(engineDeployment("d1", 2, "1.0"));
  f.engine->settle();
  REQUIRE(f.operations("PENDING_APPROVAL").size() == 2);
  f.apply(engineDeployment("d2", 1, "1.0"));
  f.settleApproving();
  CHECK(f.deployment("d1").state == model::DeploymentState::kCancelled);
  CHECK(f.deployment("d1").message == "superseded by d2");
  CHECK(f.deployment("d2").state == model::DeploymentState::kCompleted);
  CHECK(f.activeRunning().size() == 1);
  auto invariants = f.ledger->checkInvariants();
  REQUIRE(invariants.isOk());
  CHECK(invariants->empty());
}

TEST_CASE("engine: a plan's max_per_node and bin_pack decide where the approval stage places its instances") {
  EngineFixture f;
  f.apply(R"(
capabilities:
  - {name: intel-xeon, type: CPU, score: 10}
clusters:
  - {name: local, driver: process}
nodes:
  - {name: worker-1, cluster: local, update_domain: ud-1, total: {cores: 16, memory_gib: 32}, capabilities: [intel-xeon]}
  - {name: worker-2, cluster: local, update_domain: ud-1, total: {cores: 16, memory_gib: 32}, capabilities: [intel-xeon]}
)");
  auto plan = [](const std::string& name, bool bin_pack) {
    return "plans:\n  - name: " + name + "\n    namespace: web-prod\n    service_name: " + name +
           "\n    placement: {max_per_node: 3, bin_pack: " + (bin_pack ? "true" : "false") +
           "}\n    applications:\n      - payload_name: web\n        resources: {cores: 2, memory_gib: 4}\n"
           "        ports: [{protocol: TCP, port: 80}]\n"
           "        health_check: {type: http, port: 80, path: /healthz, interval_seconds: 0.2, timeout_seconds: 1}\n";
  };
  auto deployment = [](const std::string& plan, int count) {
    return "deployments:\n  - plan: " + plan + "\n    deployment_id: d1\n    instance_count: " + std::to_string(count) +
           "\n    payload_coordinates: [{payload_name: web, coordinates: {image: \"nginx:1.0\"}}]\n";
  };
  // The nodes of a plan's runtime instances in the order they were reserved.
  auto nodesInOrder = [&](const std::string& plan) {
    ledger::ListOptions o;
    o.limit = ledger::kMaxPageSize;
    o.filters["plan"] = plan;
    auto page = f.ledger->instances().listRuntimeInstances(o);
    REQUIRE(page.isOk());
    std::vector<std::string> nodes;
    for (const auto& r : page->items) nodes.push_back(r.node);
    return nodes;
  };

  // Six instances on two nodes, three each; bin_pack fills worker-1 before it starts worker-2.
  f.apply(plan("packed", true));
  f.apply(deployment("packed", 6));
  f.settleApproving();
  CHECK(f.ledger->plans().getDeployment("packed", "d1")->state == model::DeploymentState::kCompleted);
  CHECK(f.activeRunning().size() == 6);
  CHECK(nodesInOrder("packed") ==
        std::vector<std::string>{"worker-1", "worker-1", "worker-1", "worker-2", "worker-2", "worker-2"});
  for (const auto& r : f.activeRunning()) CHECK(httpGet(hostPort(r), "/version").find("1.0") != std::string::npos);

  // Least-allocated (the default) alternates between the equally full nodes instead.
  f.apply(plan("spread", false));
  f.apply(deployment("spread", 6));
  f.engine->settle();
  CHECK(nodesInOrder("spread") ==
        std::vector<std::string>{"worker-1", "worker-2", "worker-1", "worker-2", "worker-1", "worker-2"});
  CHECK(f.ledger->inventory().getNode("worker-1")->remaining.cores == doctest::Approx(4));

  auto invariants = f.ledger->checkInvariants();
  REQUIRE(invariants.isOk());
  CHECK(invariants->empty());
}

// The reservation of the runtime instance an operation's target names.
model::Resources reservationOf(EngineFixture& f, const model::Operation& op) {
  REQUIRE(op.target.contains("runtime_instance"));
  auto runtime = f.ledger->instances().getRuntimeInstance(op.target["runtime_instance"].get<int64_t>());
  REQUIRE(runtime.isOk());
  return runtime->reservation;
}

TEST_CASE("engine: a plan change applies to the next deployment, the one under way keeps the plan it was made with") {
  EngineFixture f;
  f.apply(kEngineNodes);
  f.apply(enginePlan());
  f.apply(engineDeployment("d1", 1, "1.0"));  // made with 2 cores an instance

  // Changed before the loop placed anything of d1.
  auto plan = f.ledger->plans().getPlan("web");
  REQUIRE(plan.isOk());
  model::Plan bigger = plan.value();
  bigger.applications[0].resources.cores = 3;
  auto changed = f.ledger->plans().updatePlan(bigger, plan->meta.generation, "test");
  REQUIRE_MESSAGE(changed.isOk(), changed.status().toString());
  CHECK(changed->changed == std::vector<std::string>{"applications"});

  // d1 is placed and runs as it was made: 2 cores, probed by the health check it had.
  f.engine->settle();
  auto waiting = f.operations("PENDING_APPROVAL");
  REQUIRE(waiting.size() == 1);
  CHECK(reservationOf(f, waiting[0]).cores == doctest::Approx(2));
  f.settleApproving();
  REQUIRE(f.deployment("d1").state == model::DeploymentState::kCompleted);
  auto first = f.activeRunning();
  REQUIRE(first.size() == 1);
  CHECK(first[0].reservation.cores == doctest::Approx(2));
  CHECK(first[0].healthy);

  // d2's new instance is placed with the plan as it is now.
  f.apply(engineDeployment("d2", 2, "1.0"));
  f.engine->settle();
  bool created = false;
  for (const auto& op : f.operations("PENDING_APPROVAL")) {
    if (op.type != model::OperationType::kCreate || op.intent != "d2") continue;
    CHECK(reservationOf(f, op).cores == doctest::Approx(3));
    created = true;
  }
  CHECK(created);
}

// The remaining cores and memory of `node`, as the ledger derives them.
model::Resources remainingOn(EngineFixture& f, const std::string& node) {
  auto n = f.ledger->inventory().getNode(node);
  REQUIRE(n.isOk());
  return n->remaining;
}

// Changes plan web's application to `cores` / `memory_gib`, for the deployments added next.
void resizePlan(EngineFixture& f, double cores, double memory_gib) {
  auto plan = f.ledger->plans().getPlan("web");
  REQUIRE(plan.isOk());
  model::Plan changed = plan.value();
  changed.applications[0].resources = {cores, memory_gib};
  auto updated = f.ledger->plans().updatePlan(changed, plan->meta.generation, "test");
  REQUIRE_MESSAGE(updated.isOk(), updated.status().toString());
}

void checkSound(EngineFixture& f) {
  auto report = engine::examine(*f.ledger, *f.drivers);
  REQUIRE(report.isOk());
  for (const auto& finding : report->findings) INFO(finding.kind << " " << finding.subject << ": " << finding.message);
  CHECK(report->sound());
  auto invariants = f.ledger->checkInvariants();
  REQUIRE(invariants.isOk());
  CHECK(invariants->empty());
}

void checkResources(const model::Resources& got, double cores, double memory_gib) {
  CHECK(got.cores == doctest::Approx(cores));
  CHECK(got.memory_gib == doctest::Approx(memory_gib));
}

TEST_CASE("engine: an UPDATE to a plan with other resources re-reserves them in place, growing or shrinking") {
  EngineFixture f;
  const model::RuntimeInstance first = firstInstanceRunning(f);  // 2 cores / 4 GiB of an 8 / 16 node
  const std::string node = first.node;
  checkResources(remainingOn(f, node), 6, 12);

  // Grow to 5 cores / 6 GiB: held on the node from approval on, before anyone approves.
  resizePlan(f, 5, 6);
  f.apply(engineDeployment("d2", 1, "2.0"));
  f.engine->settle();
  auto waiting = f.operations("PENDING_APPROVAL");
  REQUIRE(waiting.size() == 1);
  CHECK(waiting[0].type == model::OperationType::kUpdate);
  CHECK(waiting[0].target["resize"]["node"] == node);
  checkResources(remainingOn(f, node), 3, 10);
  f.settleApproving();
  REQUIRE(f.deployment("d2").state == model::DeploymentState::kCompleted);
  auto grown = f.activeRunning();
  REQUIRE(grown.size() == 1);
  CHECK(grown[0].meta.id == first.meta.id);  // in place: the same runtime instance
  checkResources(grown[0].reservation, 5, 6);
  CHECK(httpGet(hostPort(grown[0]), "/version").find("2.0") != std::string::npos);
  checkResources(remainingOn(f, node), 3, 10);
  CHECK_FALSE(testing::events(f, "runtime_instance.resized").empty());
  checkSound(f);

  // Shrink to 1 core / 2 GiB: the larger size stays held until the UPDATE runs.
  resizePlan(f, 1, 2);
  f.apply(engineDeployment("d3", 1, "3.0"));
  f.engine->settle();
  REQUIRE(f.operations("PENDING_APPROVAL").size() == 1);
  checkResources(remainingOn(f, node), 3, 10);
  f.settleApproving();
  REQUIRE(f.deployment("d3").state == model::DeploymentState::kCompleted);
  auto shrunk = f.activeRunning();
  REQUIRE(shrunk.size() == 1);
  checkResources(shrunk[0].reservation, 1, 2);
  checkResources(remainingOn(f, node), 7, 14);
  checkSound(f);

  // The same coordinates with other resources: not adopted as they are, but updated, which
  // re-reserves without restarting the process.
  resizePlan(f, 2, 4);
  f.apply(engineDeployment("d4", 1, "3.0"));
  f.settleApproving();
  REQUIRE(f.deployment("d4").state == model::DeploymentState::kCompleted);
  auto same = f.activeRunning();
  REQUIRE(same.size() == 1);
  CHECK(same[0].meta.id == first.meta.id);
  checkResources(same[0].reservation, 2, 4);
  checkResources(remainingOn(f, node), 6, 12);
  checkSound(f);
}

TEST_CASE("engine: an UPDATE whose node cannot hold the new size waits, naming the node and what it lacks") {
  EngineFixture f;
  const model::RuntimeInstance first = firstInstanceRunning(f);
  const std::string node = first.node;

  resizePlan(f, 10, 4);  // an 8-core node
  f.apply(engineDeployment("d2", 1, "2.0"));
  f.engine->settle();
  auto pending = f.operations("PENDING");
  REQUIRE(pending.size() == 1);
  CHECK(pending[0].type == model::OperationType::kUpdate);
  CHECK(pending[0].message == "waiting for placement: node '" + node +
                                  "' cannot hold the instance at 10 cores / 4 GiB instead of 2 cores / 4 GiB: it "
                                  "lacks 2 cores (6 cores / 12 GiB left)");
  CHECK_FALSE(testing::events(f, "operation.unschedulable").empty());
  checkResources(remainingOn(f, node), 6, 12);
  auto running = f.activeRunning();
  REQUIRE(running.size() == 1);
  CHECK(httpGet(hostPort(running[0]), "/version").find("1.0") != std::string::npos);
  checkSound(f);

  // A growth that fits is held while the UPDATE waits for a person; cancelling the UPDATE
  // gives it back in the same write.
  resizePlan(f, 4, 8);
  f.apply(engineDeployment("d3", 1, "3.0"));  // supersedes d2 and its waiting UPDATE
  f.engine->settle();
  auto waiting = f.operations("PENDING_APPROVAL");
  REQUIRE(waiting.size() == 1);
  checkResources(remainingOn(f, node), 4, 8);
  REQUIRE(f.ledger->operations().cancelOperation(waiting[0].meta.id, std::nullopt, "alice", "not now").isOk());
  checkResources(remainingOn(f, node), 6, 12);
  checkSound(f);
}

TEST_CASE("engine: a CREATE of a plan naming capabilities no node has waits, naming them") {
  EngineFixture f;
  f.apply(kEngineNodes);
  std::string plan = enginePlan();
  plan.replace(plan.find("names: [intel-xeon]"), 19, "names: [intel-xeon]}, {type: TPU, comparator: IN, names: [tpu-v9]");
  f.apply(plan);
  f.apply(engineDeployment("d1", 1, "1.0"));
  f.engine->settle();
  auto pending = f.operations("PENDING");
  REQUIRE(pending.size() == 1);
  CHECK(pending[0].message.find("waiting for placement: no node has capability tpu-v9; ") == 0);
  CHECK(pending[0].message.find("4 lack capability type TPU in [tpu-v9]") != std::string::npos);
}

}  // namespace
}  // namespace tide
