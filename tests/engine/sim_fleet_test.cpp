// The control loop over a fleet of sim nodes (sim_test_support.h): hundreds of instances
// roll out with no process started and no probe run.

#include "drivers/sim/sim_driver.h"
#include "tests/engine/sim_test_support.h"

namespace tide {
namespace {

using testing::engineDeployment;
using testing::EngineFixture;
using testing::kSimCapabilities;
using testing::kSimPlan;
using testing::simCluster;

TEST_CASE("engine: a plan on a sim cluster rolls 200 instances out to RUNNING and healthy") {
  EngineFixture f({"auto_approve_dev.lua"});
  f.apply(std::string(kSimCapabilities) + simCluster("sim", 200, {{"seed", 1}}));
  f.apply(kSimPlan);
  f.apply(engineDeployment("v1", 200, "1"));
  f.engine->settle(1000);

  CHECK(f.deployment("v1").state == model::DeploymentState::kCompleted);
  auto running = f.running();
  CHECK(running.size() == 200);
  std::set<std::string> nodes;
  for (const auto& r : running) {
    CHECK(r.healthy);
    CHECK(r.driver_handle.rfind("sim:", 0) == 0);
    nodes.insert(r.node);
  }
  CHECK(nodes.size() == 200);
  auto driver = f.drivers->forCluster("sim");
  REQUIRE(driver.isOk());
  CHECK(driver.value()->list()->size() == 200);

  // tide logs of a sim instance: a clear refusal.
  auto log = engine::readMetaInstanceLog(*f.ledger, *f.drivers, running.front().meta_instance, "", std::nullopt, 1024);
  CHECK(log.status().code() == Code::kUnprocessable);
  CHECK(log.status().message().find("sim driver keeps no logs") != std::string::npos);
}

TEST_CASE("engine: a rollout completes when pushing its snapshot to the strategy takes longer than the Lua deadline") {
  // Issue 11's stall: past a few thousand instances the host's own work building r took the
  // whole Lua deadline, so every strategy call failed, the rollout stopped asking for
  // anything and never completed. Here 1,000 instances against a 2 ms deadline.
  engine::EngineOptions options = EngineFixture::fastOptions();
  options.lua_limits.deadline = std::chrono::milliseconds(2);
  options.chunk = 500;
  EngineFixture f({"auto_approve_dev.lua"}, options);
  f.apply(std::string(kSimCapabilities) + simCluster("sim", 1000, {{"seed", 1}}));
  f.apply(kSimPlan);
  f.apply(engineDeployment("v1", 1000, "1"));

  // A policy preempted past its 2 ms says `manual`: approving those keeps the test about
  // the strategy. A pass whose strategy call still timed out changes nothing, which ends a
  // settle early: settle again.
  for (int round = 0; round < 20 && f.deployment("v1").state != model::DeploymentState::kCompleted; ++round)
    f.settleApproving();
  CHECK(f.deployment("v1").state == model::DeploymentState::kCompleted);
  CHECK(f.running().size() == 1000);
}

TEST_CASE("engine: the controller creates at most max_creates_per_pass instances a pass until the strategy has all") {
  engine::EngineOptions options = EngineFixture::fastOptions();
  options.controller.max_creates_per_pass = 8;
  EngineFixture f({"auto_approve_dev.lua"}, options);
  f.apply(std::string(kSimCapabilities) + simCluster("sim", 20, {{"seed", 1}}));
  f.apply(kSimPlan);
  f.apply(engineDeployment("v1", 20, "1"));

  f.engine->runPass();
  CHECK(f.operations().size() == 8);
  f.engine->runPass();
  CHECK(f.operations().size() == 16);
  f.engine->runPass();
  CHECK(f.operations().size() == 20);
  f.engine->settle(1000);
  CHECK(f.deployment("v1").state == model::DeploymentState::kCompleted);
  CHECK(f.running().size() == 20);
}

TEST_CASE("engine: the approval stage decides at most approval_chunk operations a pass and reaches every one") {
  engine::EngineOptions options = EngineFixture::fastOptions();
  options.approval.max_per_pass = 7;
  EngineFixture f({"auto_approve_dev.lua"}, options);
  f.apply(std::string(kSimCapabilities) + simCluster("sim", 20, {{"seed", 1}}));
  f.apply(kSimPlan);
  f.apply(engineDeployment("v1", 30, "1"));  // 20 nodes fit 20: ten can never be placed

  // Nothing runs the executor here: each pass only creates and decides.
  auto decided = [&] {
    int n = 0;
    for (const auto& op : f.operations()) {
      if (op.state != model::OperationState::kPending || op.message.rfind("waiting for placement", 0) == 0) ++n;
    }
    return n;
  };
  f.engine->runPass();
  CHECK(f.operations().size() == 30);
  CHECK(f.operations("APPROVED").size() == 7);
  CHECK(decided() == 7);
  f.engine->runPass();
  f.engine->runPass();
  CHECK(decided() == 21);
  CHECK(f.operations("APPROVED").size() == 20);  // the 21st found no node
  // The unplaceable ones stay PENDING; the next passes go on after them instead of
  // deciding the same ones again, so every operation gets its answer.
  f.engine->runPass();
  f.engine->runPass();
  CHECK(decided() == 30);
  CHECK(f.operations("PENDING").size() == 10);
}

// The sim plan with one instance per node at most, rolled out with max_surge 2 and
// max_unavailable 0.
std::string onePerNodeSurgingPlan() {
  std::string plan = kSimPlan;
  const std::string applications = "    applications:";
  plan.replace(plan.find(applications), applications.size(),
               "    placement: {max_per_node: 1}\n"
               "    strategy: {script: rolling, params: {max_surge: 2, max_unavailable: 0}}\n" +
                   applications);
  return plan;
}

TEST_CASE("engine: a rolling surge that has no room until old instances go completes") {
  // One instance per node on three nodes, two instances, a surge of two: the first new
  // instance takes the free node, the second has no room until an old one is removed.
  EngineFixture f({"auto_approve_dev.lua"});
  f.apply(std::string(kSimCapabilities) + simCluster("sim", 3));
  f.apply(onePerNodeSurgingPlan());
  f.apply(engineDeployment("v1", 2, "1"));
  f.engine->settle();
  REQUIRE(f.deployment("v1").state == model::DeploymentState::kCompleted);

  f.apply(engineDeployment("v2", 2, "2"));
  f.engine->settle();
  CHECK(f.deployment("v2").state == model::DeploymentState::kCompleted);
  auto serving = f.activeRunning();
  REQUIRE(serving.size() == 2);
  for (const auto& r : serving) CHECK(r.coordinates.dump().find("nginx:2") != std::string::npos);
}

TEST_CASE("engine: a rolling rollout that cannot go on fails at its progress deadline") {
  // Four instances, one per node, on three nodes: the fourth never finds room.
  EngineFixture f({"auto_approve_dev.lua"});
  f.apply(std::string(kSimCapabilities) + simCluster("sim", 3));
  f.apply(onePerNodeSurgingPlan());
  f.apply(engineDeployment("v1", 4, "1"));
  f.engine->settle();
  REQUIRE(f.deployment("v1").state == model::DeploymentState::kInProgress);
  CHECK(f.activeRunning().size() == 3);

  // Ten minutes without progress (the default progress_deadline_seconds) are not enough;
  // a little more is.
  f.clock.advance(std::chrono::seconds(590));
  f.engine->settle();
  CHECK(f.deployment("v1").state == model::DeploymentState::kInProgress);
  f.clock.advance(std::chrono::seconds(20));
  f.engine->settle();
  const model::Deployment failed = f.deployment("v1");
  CHECK(failed.state == model::DeploymentState::kFailed);
  CHECK(failed.message.find("progress deadline exceeded") != std::string::npos);
  INFO(failed.message);
  CHECK(failed.message.find("3 of 4 new instances to be ready") != std::string::npos);
}

}  // namespace
}  // namespace tide
