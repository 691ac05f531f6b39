// The discrepancy halt and the orphan sweep (docs/architecture.md#observer), over a sim
// cluster (sim_test_support.h): a halt stops every writer of the control loop until an admin
// resumes it, survives a restart, and an object the ledger does not know is removed after the
// grace period, not before.

#include <algorithm>

#include "tests/engine/agent_cluster_support.h"
#include "tests/engine/sim_test_support.h"

namespace tide {
namespace {

using testing::CountingDriver;
using testing::deploySimFleet;
using testing::engineDeployment;
using testing::eventually;
using testing::EngineFixture;
using testing::installCountingSim;
using testing::kSimCapabilities;
using testing::simCluster;

constexpr int kThreshold = 3;

engine::EngineOptions haltOptions() {
  auto options = EngineFixture::fastOptions();
  options.observer.discrepancy_threshold = kThreshold;
  return options;
}

// Removes `n` of the running instances from their driver behind tide's back.
void loseBehindTidesBack(EngineFixture& f, CountingDriver& driver, int n) {
  auto running = f.activeRunning();
  REQUIRE(static_cast<int>(running.size()) >= n);
  for (int i = 0; i < n; ++i) {
    REQUIRE(driver.remove({std::to_string(running[i].meta.id), running[i].node, ""}).isOk());
  }
}

TEST_CASE("halt: more instances missing than the threshold halts every writer until an admin resumes") {
  EngineFixture f({"auto_approve_dev.lua"}, haltOptions());
  CountingDriver& driver = deploySimFleet(f, 12, 8);
  f.engine->settle();
  REQUIRE(f.activeRunning().size() == 8);

  loseBehindTidesBack(f, driver, kThreshold + 1);
  f.engine->runPass();
  auto halt = f.ledger->audit().controlHalt();
  REQUIRE(halt.isOk());
  REQUIRE(halt->has_value());
  CHECK((*halt)->kind == "alarm.discrepancy");
  CHECK((*halt)->by == "observer");
  CHECK((*halt)->details["instances"].size() == kThreshold + 1);
  CHECK(f.eventCount("alarm.discrepancy") == 1);
  CHECK(f.activeRunning().size() == 8);  // refuse rather than "repair": nothing marked FAILED

  // Work for every stage: a new deployment for the controller, a user operation for the
  // approval stage (and then the executor).
  f.apply(engineDeployment("v2", 8, "2"));
  model::Operation restart;
  restart.meta_instance = f.activeRunning().back().meta_instance;
  restart.type = model::OperationType::kRestart;
  restart.requested_by = "bob";
  restart.priority = 10;
  auto asked = f.ledger->operations().createOperation(restart, "bob");
  REQUIRE(asked.isOk());

  const int64_t writes = f.ledger->writeStats().writes;
  const int64_t seq = f.ledger->audit().lastEventSeq();
  for (int pass = 0; pass < 5; ++pass) CHECK(f.engine->runPass().halted);
  f.engine->settle();
  CHECK(f.engine->halted());
  CHECK(f.ledger->writeStats().writes == writes);
  CHECK(f.ledger->audit().lastEventSeq() == seq);
  CHECK(f.deployment("v2").state == model::DeploymentState::kPending);
  CHECK(f.ledger->operations().getOperation(asked->meta.id)->state == model::OperationState::kPending);

  // The halt is in the ledger: a restarted engine is halted as well, and writes nothing.
  f.engine.reset();
  f.engine = std::make_unique<engine::Engine>(*f.ledger, *f.scripts, *f.drivers, f.clock, haltOptions());
  f.engine->settle();
  CHECK(f.engine->halted());
  CHECK(f.ledger->writeStats().writes == writes);

  // An admin resumes: the missing instances are acknowledged and repaired, the rollout and
  // the user's operation go on.
  auto resumed = f.ledger->audit().resumeControlLoop("root");
  REQUIRE(resumed.isOk());
  CHECK(resumed->kind == "alarm.discrepancy");
  CHECK(f.eventCount("control.resumed") == 1);
  CHECK(f.ledger->audit().resumeControlLoop("root").status().code() == Code::kConflict);
  f.engine->settle();
  CHECK_FALSE(f.engine->halted());
  CHECK(f.eventCount("alarm.discrepancy") == 1);  // not halted again on what was acknowledged
  CHECK(f.ledger->operations().getOperation(asked->meta.id)->state == model::OperationState::kSucceeded);
  CHECK(f.deployment("v2").state == model::DeploymentState::kCompleted);
  CHECK(f.activeRunning().size() == 8);
}

TEST_CASE("halt: as many missing instances as the threshold are repaired without a halt") {
  EngineFixture f({"auto_approve_dev.lua"}, haltOptions());
  CountingDriver& driver = deploySimFleet(f, 8, 6);
  f.engine->settle();
  REQUIRE(f.activeRunning().size() == 6);

  loseBehindTidesBack(f, driver, kThreshold);
  f.engine->settle();
  CHECK_FALSE(f.engine->halted());
  CHECK_FALSE(f.ledger->audit().controlHalt()->has_value());
  CHECK(f.eventCount("alarm.discrepancy") == 0);
  CHECK(f.activeRunning().size() == 6);
}

// A sim cluster with one driver object the ledger does not know (runtime id 987654), the
// observer's orphan grace 60 s.
struct StrayFixture {
  EngineFixture f{{"auto_approve_dev.lua"}, withOrphanGrace(std::chrono::seconds(60))};
  CountingDriver* driver = nullptr;

  StrayFixture() {
    f.apply(std::string(kSimCapabilities) + simCluster("sim", 2));
    driver = &installCountingSim(f, "sim");
    drivers::RuntimeSpec stray;
    stray.id = "987654";
    stray.meta_instance = "stray";
    stray.node = "sim-1";
    stray.coordinates = model::Json{{"image", "nginx:1"}};
    stray.resources = {1, 1};
    REQUIRE(driver->ensure(stray).isOk());
  }
  static engine::EngineOptions withOrphanGrace(std::chrono::seconds grace) {
    auto options = EngineFixture::fastOptions();
    options.observer.orphan_grace = grace;
    return options;
  }
  // How many times the driver lists the stray object.
  long inventory() {
    auto listed = driver->list();
    REQUIRE(listed.isOk());
    return std::count_if(listed->begin(), listed->end(), [](const auto& ref) { return ref.id == "987654"; });
  }
};

TEST_CASE("orphans: a driver object the ledger does not know is removed after the grace period, not before") {
  StrayFixture stray;
  EngineFixture& f = stray.f;
  auto inventory = [&] { return stray.inventory(); };

  f.engine->runPass();
  CHECK(f.eventCount("driver.orphan") == 1);
  CHECK(inventory() == 1);
  f.clock.advance(std::chrono::seconds(50));
  f.engine->runPass();
  CHECK(inventory() == 1);
  CHECK(f.eventCount("driver.orphan_removed") == 0);
  f.clock.advance(std::chrono::seconds(11));
  f.engine->runPass();
  CHECK(inventory() == 0);
  CHECK(f.eventCount("driver.orphan_removed") == 1);
  CHECK(f.eventCount("driver.orphan") == 1);
}

TEST_CASE("orphans: a pass whose inventory could not be read does not restart an orphan's grace period") {
  StrayFixture stray;
  EngineFixture& f = stray.f;
  f.engine->runPass();
  REQUIRE(f.eventCount("driver.orphan") == 1);

  // The driver cannot list for a pass (a flaky runtime): the orphan is not forgotten.
  stray.driver->before_call = [](const std::string& call, const std::string&) {
    return call == "list" ? Status::unavailable("the test's runtime does not answer") : Status::ok();
  };
  f.clock.advance(std::chrono::seconds(30));
  f.engine->runPass();
  stray.driver->before_call = nullptr;
  f.clock.advance(std::chrono::seconds(31));
  f.engine->runPass();
  CHECK(stray.inventory() == 0);
  CHECK(f.eventCount("driver.orphan_removed") == 1);
  CHECK(f.eventCount("driver.orphan") == 1);
}

TEST_CASE("orphans: what a node agent runs and the ledger does not know leaves its node's document after the grace period") {
  auto options = EngineFixture::fastOptions();
  options.observer.orphan_grace = std::chrono::seconds(60);
  testing::AgentClusterFixture c(options);
  EngineFixture& f = c.f;
  // Listed by the node's document, unknown to the ledger (left by an older host, say).
  drivers::DesiredInstance stray;
  stray.spec.id = "987654";
  stray.spec.node = testing::kAgentNode;
  REQUIRE(c.hub->setInstance(stray).isOk());
  REQUIRE(eventually([&] {
    auto report = c.hub->lastReport(testing::kAgentNode);
    return report && report->instances.size() == 1;
  }));

  f.engine->runPass();
  CHECK(f.eventCount("driver.orphan") == 1);
  f.clock.advance(std::chrono::seconds(61));
  f.engine->runPass();
  CHECK(c.documentIds().empty());
  CHECK(f.eventCount("driver.orphan_removed") == 1);
}

}  // namespace
}  // namespace tide
