// What holds a rollout back, read from the records the engine leaves: each message the
// engine writes through the builders is read back as its hold, and nothing else is one.

#include <doctest/doctest.h>

#include <string>

#include "host/model/holds.h"
#include "tests/support/vocabulary.h"

using namespace tide;
using namespace tide::model;

namespace {

Operation operationIn(const std::string& state, const std::string& message = "") {
  Operation op;
  op.meta.id = 12;
  op.type = model::OperationType::kUpdate;
  op.meta_instance = "web-x";
  op.state = testing::parsed<model::OperationState>(state);
  op.message = message;
  return op;
}

}  // namespace

TEST_CASE("model: an operation's hold is read back from what the engine wrote, by its state") {
  const std::optional<Hold> approval = operationHold(operationIn("PENDING_APPROVAL", "a policy asked for a person"));
  REQUIRE(approval);
  CHECK(approval->kind == "approval");
  CHECK(approval->operation == 12);
  CHECK(approval->reason == "waiting for approval of operation 12 (UPDATE of web-x)");

  for (bool veto : {true, false}) {
    const std::optional<Hold> hook = operationHold(operationIn("APPROVED", hookHoldMessage(veto, "gate", "night")));
    REQUIRE(hook);
    CHECK(hook->kind == "hook");
    CHECK(hook->reason ==
          std::string("operation 12 (UPDATE of web-x) ") + (veto ? "held" : "delayed") + " by hook gate: night");
  }
  const std::optional<Hold> placement = operationHold(operationIn("PENDING", placementWaitMessage("no room")));
  REQUIRE(placement);
  CHECK(placement->kind == "placement");
  CHECK(placement->reason == "operation 12 (UPDATE of web-x) is waiting for placement: no room");

  // Running, queued, retried, finished, or a message in a state it does not belong to: not held.
  CHECK_FALSE(operationHold(operationIn("PENDING")));
  CHECK_FALSE(operationHold(operationIn("APPROVED")));
  CHECK_FALSE(operationHold(operationIn("APPROVED", "attempt 1 failed: timeout; retrying in 2.00 s")));
  CHECK_FALSE(operationHold(operationIn("RUNNING", hookHoldMessage(true, "gate", "night"))));
  CHECK_FALSE(operationHold(operationIn("PENDING", hookHoldMessage(true, "gate", "night"))));
  CHECK_FALSE(operationHold(operationIn("CANCELLED", placementWaitMessage("no room"))));
}

TEST_CASE("model: a deployment holds itself when paused or waiting for the router, and not once over") {
  Deployment d;
  d.state = model::DeploymentState::kPaused;
  d.message = "paused by alice";
  REQUIRE(deploymentHolds(d).size() == 1);
  CHECK(deploymentHolds(d)[0].kind == "paused");
  CHECK(deploymentHolds(d)[0].reason == "paused by alice");
  d.message = "";
  CHECK(deploymentHolds(d)[0].reason == "paused");

  d.state = model::DeploymentState::kInProgress;
  d.message = std::string(kRouterWaitPrefix) + ": asked new 10 / old 90, applied new 0 / old 100";
  REQUIRE(deploymentHolds(d).size() == 1);
  CHECK(deploymentHolds(d)[0].kind == "router");
  d.message = std::string(kRouterDownPrefix) + ": connection refused";
  CHECK(deploymentHolds(d)[0].kind == "router");
  d.message = "rolling out";
  CHECK(deploymentHolds(d).empty());

  d.state = model::DeploymentState::kCompleted;
  d.message = "paused by alice";
  CHECK(deploymentHolds(d).empty());
}
