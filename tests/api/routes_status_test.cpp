// GET /v1/status: each plan's desired and running instances, the rollouts held and why, and
// the scripts that failed to load. The control loop is simulated through the ledger.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "host/engine/script_recorder.h"
#include "host/lua/registry/script_registry.h"
#include "host/model/holds.h"
#include "tests/api/api_test_support.h"
#include "tests/support/files.h"

using namespace tide;
using namespace tide::testing;

namespace {

// kMrdsDeployment for `plan`, as deployment `id` of `count` instances.
std::string deploymentOf(const std::string& plan, const std::string& id, int count) {
  return "deployment_plan_name: \"" + plan + "\"\ndeployment_id: \"" + id +
         "\"\npayload_coordinates:\n  - payload_name: \"nginx-payload\"\n    coordinates:\n      image: "
         "\"nginx:latest\"\ninstance_count: " +
         std::to_string(count) + "\n";
}

// A fleet as the control loop leaves it partway, written through the ledger:
// - nginx-deployment-plan, deployment-1 of 3 instances: one runs; the CREATE of another waits
//   for approval, one is vetoed by a hook, one waits for placement;
// - other-plan: other-1 (1 instance) completed and running; other-2 (1 instance) paused by otto;
// - empty-plan: no deployment.
struct Fleet {
  ApiHarness h;
  int64_t waiting = 0, vetoed = 0, unplaced = 0;

  Fleet() {
    REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
    for (const std::string& plan : {kMrdsPlanName, std::string("other-plan"), std::string("empty-plan")}) {
      REQUIRE(h.post("/v1/plans", mrdsPlanNamed(plan), "application/yaml").status == 201);
    }
    addDeployment(kMrdsPlanName, "deployment-1", 3);
    addDeployment("other-plan", "other-1", 1);
    for (model::DeploymentState state : {model::DeploymentState::kInProgress, model::DeploymentState::kCompleted}) {
      REQUIRE(h.ledger->plans().setDeploymentState("other-plan", "other-1", state, std::nullopt, "controller").isOk());
    }
    run("other-plan", "other-1");
    addDeployment("other-plan", "other-2", 1);
    REQUIRE(h.ledger
                ->plans().setDeploymentState("other-plan", "other-2", model::DeploymentState::kInProgress, std::nullopt,
                                     "controller")
                .isOk());
    REQUIRE(h.ledger->plans().controlDeployment("other-plan", "other-2", "pause", "", kOperatorName).isOk());

    REQUIRE(h.ledger
                ->plans().setDeploymentState(kMrdsPlanName, "deployment-1", model::DeploymentState::kInProgress, std::nullopt,
                                     "controller")
                .isOk());
    run(kMrdsPlanName, "deployment-1");
    waiting = create(kMrdsPlanName, "deployment-1").meta.id;
    REQUIRE(
        h.ledger->operations().setOperationState(waiting, model::OperationState::kPendingApproval, std::nullopt, "approval").isOk());
    vetoed = create(kMrdsPlanName, "deployment-1").meta.id;
    REQUIRE(h.ledger->operations().setOperationState(vetoed, model::OperationState::kApproved, std::nullopt, "approval").isOk());
    ledger::OperationUpdate veto;
    veto.message = model::hookHoldMessage(true, "gate", "no deploys at night");
    REQUIRE(h.ledger->operations().updateOperation(vetoed, veto, "executor").isOk());
    unplaced = create(kMrdsPlanName, "deployment-1").meta.id;
    ledger::OperationUpdate wait;
    wait.message = model::placementWaitMessage("no node has 4 cores free");
    REQUIRE(h.ledger->operations().updateOperation(unplaced, wait, "approval").isOk());
  }

  void addDeployment(const std::string& plan, const std::string& id, int count) {
    Reply added = h.post("/v1/plans/" + plan + "/deployments", deploymentOf(plan, id, count), "application/yaml");
    REQUIRE_MESSAGE(added.status == 201, added.body);
  }

  // A new meta instance of the deployment with its CREATE, left PENDING.
  model::Operation create(const std::string& plan, const std::string& deployment) {
    model::Operation operation;
    operation.type = model::OperationType::kCreate;
    operation.intent = deployment;
    operation.requested_by = kOperatorName;
    auto created = h.ledger->operations().createInstanceWithOperation(plan, deployment, operation, "controller");
    REQUIRE_MESSAGE(created.isOk(), created.status().toString());
    return *created;
  }

  // A new meta instance of the deployment, placed, RUNNING, its CREATE SUCCEEDED.
  void run(const std::string& plan, const std::string& deployment) {
    const model::Operation op = create(plan, deployment);
    auto reserved = h.ledger->instances().reserveForOperation(op.meta.id, runtimeOn(op.meta_instance, "kind-worker"), "approval");
    REQUIRE_MESSAGE(reserved.isOk(), reserved.status().toString());
    moveRuntime(h, reserved->meta.id, {"STARTING", "RUNNING"});
    for (model::OperationState state :
         {model::OperationState::kApproved, model::OperationState::kRunning, model::OperationState::kSucceeded}) {
      REQUIRE(h.ledger->operations().setOperationState(op.meta.id, state, std::nullopt, "executor").isOk());
    }
  }

  Json status() {
    Reply reply = h.get("/v1/status", kViewerToken);
    REQUIRE_MESSAGE(reply.status == 200, reply.body);
    return reply.json();
  }
};

// The holds of `plan`'s deployment `id` in a GET /v1/status reply, by kind; null when the
// rollout is not held.
Json holdsOf(const Json& status, const std::string& plan, const std::string& id) {
  for (const Json& rollout : status["held_rollouts"]) {
    if (rollout["plan"] != plan || rollout["deployment_id"] != id) continue;
    Json by_kind = Json::object();
    for (const Json& hold : rollout["holds"]) by_kind[hold["kind"].get<std::string>()] = hold;
    return by_kind;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("api: status counts each plan's desired and running instances and calls out the under-replicated") {
  Fleet fleet;
  const Json status = fleet.status();
  REQUIRE(status["plans"].size() == 3);
  const Json& empty = status["plans"][0];
  const Json& nginx = status["plans"][1];
  const Json& other = status["plans"][2];

  CHECK(empty["name"] == "empty-plan");
  CHECK(empty["deployment_id"] == "");
  CHECK(empty["desired"] == 0);
  CHECK(empty["under_replicated"] == false);

  CHECK(nginx["name"] == kMrdsPlanName);
  CHECK(nginx["namespace"] == "nginx-namespace");
  CHECK(nginx["state"] == "ACTIVE");
  CHECK(nginx["deployment_id"] == "deployment-1");
  CHECK(nginx["desired"] == 3);
  CHECK(nginx["instances"]["total"] == 4);
  CHECK(nginx["instances"]["running"] == 1);
  CHECK(nginx["instances"]["pending"] == 3);
  CHECK(nginx["under_replicated"] == true);

  // The paused rollout is the plan's current deployment; the completed one's instance runs.
  CHECK(other["deployment_id"] == "other-2");
  CHECK(other["desired"] == 1);
  CHECK(other["instances"]["running"] == 1);
  CHECK(other["under_replicated"] == false);

  CHECK(status["failed_scripts"] == Json::array());  // this host runs no scripts
}

TEST_CASE("api: status names each held rollout with every reason it is held") {
  Fleet fleet;
  Json status = fleet.status();
  REQUIRE(status["held_rollouts"].size() == 2);

  const Json nginx = holdsOf(status, kMrdsPlanName, "deployment-1");
  REQUIRE(nginx.is_object());
  CHECK(nginx.size() == 3);
  CHECK(nginx["approval"]["operation"] == fleet.waiting);
  CHECK(contains(nginx["approval"]["reason"], "waiting for approval of operation " + std::to_string(fleet.waiting)));
  CHECK(nginx["hook"]["operation"] == fleet.vetoed);
  CHECK(contains(nginx["hook"]["reason"], "held by hook gate: no deploys at night"));
  CHECK(nginx["placement"]["operation"] == fleet.unplaced);
  CHECK(contains(nginx["placement"]["reason"], "waiting for placement: no node has 4 cores free"));

  const Json other = holdsOf(status, "other-plan", "other-2");
  REQUIRE(other.is_object());
  CHECK(other.size() == 1);
  CHECK(other["paused"]["reason"] == "paused by " + kOperatorName);
  CHECK_FALSE(other["paused"].contains("operation"));
  CHECK(holdsOf(status, "other-plan", "other-1").is_null());  // completed: not a rollout any more

  // Once approved and no longer vetoed or waiting, the rollout is not held.
  REQUIRE(
      fleet.h.ledger->operations().setOperationState(fleet.waiting, model::OperationState::kApproved, std::nullopt, kApproverName)
          .isOk());
  for (int64_t id : {fleet.vetoed, fleet.unplaced}) {
    REQUIRE(fleet.h.ledger->operations().cancelOperation(id, std::nullopt, kOperatorName, "not now").isOk());
  }
  status = fleet.status();
  CHECK(holdsOf(status, kMrdsPlanName, "deployment-1").is_null());

  // A halted control loop holds every rollout.
  REQUIRE(
      fleet.h.ledger->audit().haltControlLoop("alarm.discrepancy", "6 instances disagree", Json::object(), "observer").isOk());
  status = fleet.status();
  CHECK(holdsOf(status, kMrdsPlanName, "deployment-1")["halted"]["reason"] ==
        "the control loop is halted: 6 instances disagree");
  CHECK(holdsOf(status, "other-plan", "other-2").size() == 2);
}

TEST_CASE("api: status lists the scripts whose current content failed to load") {
  const std::filesystem::path root = freshDir("status", "scripts");
  std::filesystem::create_directories(root / "policies");
  std::filesystem::create_directories(root / "scripts");
  std::ofstream(root / "policies" / "broken.lua") << "return {name = 'broken', decide = function(op) return end\n";
  SystemClock clock;
  auto recorder_ledger = ledger::Ledger::open("sqlite://:memory:", clock);
  REQUIRE(recorder_ledger.isOk());
  engine::LedgerScriptRecorder recorder(**recorder_ledger);
  lua::ScriptRegistryOptions options;
  options.policies_dir = root / "policies";
  options.scripts_dir = root / "scripts";
  lua::ScriptRegistry registry(options, recorder, clock);
  REQUIRE(registry.reloadAll().failed == 1);
  api::ServerOptions server = testServerOptions();
  server.scripts = &registry;
  {
    ApiHarness h(server);
    Reply reply = h.get("/v1/status", kViewerToken);
    REQUIRE_MESSAGE(reply.status == 200, reply.body);
    const Json failed = reply.json()["failed_scripts"];
    REQUIRE(failed.size() == 1);
    CHECK(failed[0]["path"].get<std::string>().ends_with("broken.lua"));
    CHECK(failed[0]["status"] == "failed");
    CHECK_FALSE(failed[0]["last_error"].get<std::string>().empty());
    CHECK(reply.json()["plans"] == Json::array());
    CHECK(h.get("/v1/status?verbose=1", kViewerToken).detailNames("verbose"));
    CHECK(h.get("/v1/status", "").status == 401);
  }
  std::filesystem::remove_all(root);
}
