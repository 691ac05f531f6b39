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

  CHECK(f.deployment("v1").state == "COMPLETED");
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
  auto log = engine::readMetaInstanceLog(*f.ledger, *f.drivers, running.front().meta_instance, 1024);
  CHECK(log.status().code() == Code::kUnprocessable);
  CHECK(log.status().message().find("sim driver keeps no logs") != std::string::npos);
}

}  // namespace
}  // namespace tide
