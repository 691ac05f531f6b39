// The deployment controller against writes that land while it works on a picture of the
// ledger taken before them.

#include <doctest/doctest.h>

#include "host/engine/controller.h"
#include "host/engine/world.h"
#include "host/lua/strategy/strategy_engine.h"
#include "tests/engine/engine_test_support.h"

using namespace tide;
using namespace tide::testing;

TEST_CASE("controller: a deployment aborted while PENDING stays FAILED though the pass saw it PENDING") {
  // Found by the blue-green walkthrough (docs/rollouts.md): bg-v3, added and aborted at once, was
  // started by a pass that had read it PENDING, and rolled out after all.
  EngineFixture f({"auto_approve_dev.lua"});
  f.apply(kEngineNodes);
  f.apply(rolloutPlan("blue_green", "{auto_promotion: never}"));
  f.apply(engineDeployment("d1", 1, "v1"));
  auto before_abort = engine::World::load(*f.ledger);
  REQUIRE(before_abort.isOk());
  REQUIRE(f.deployment("d1").state == model::DeploymentState::kPending);
  REQUIRE(f.ledger->plans().controlDeployment("web", "d1", "abort", "changed my mind", "alice").isOk());

  lua::StrategyEngine strategies(*f.scripts, f.clock);
  engine::DeploymentController controller(*f.ledger, strategies, f.clock, {});
  controller.pass(*before_abort, {});
  CHECK(f.deployment("d1").state == model::DeploymentState::kFailed);
  CHECK(f.deployment("d1").message == "aborted by alice: changed my mind");
}
