// `tide status` against an in-process server: each plan's desired and running instances,
// the under-replicated ones called out, the rollouts held and why, and the scripts that
// failed to load, in the table and in `-o json`. The control loop is simulated through the
// ledger (GET /v1/status's own tests are tests/api/routes_status_test.cpp).

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "host/engine/script_recorder.h"
#include "host/lua/registry/script_registry.h"
#include "tests/cli/cli_test_support.h"

using namespace tide;
using namespace tide::testing;
using Json = nlohmann::json;

namespace {

// A policies dir holding one policy that does not compile beside the shipped scripts (the
// rolling strategy a plan is checked against among them), and a registry that loaded them.
struct BrokenScripts {
  TempDir dir;
  std::unique_ptr<ledger::Ledger> recorder_ledger;
  std::unique_ptr<engine::LedgerScriptRecorder> recorder;
  std::unique_ptr<lua::ScriptRegistry> registry;

  BrokenScripts() {
    std::filesystem::create_directories(dir.path() / "policies");
    std::filesystem::copy(kSourceTree / "scripts", dir.path() / "scripts", std::filesystem::copy_options::recursive);
    std::ofstream(dir.path() / "policies" / "broken.lua") << "return {name = 'broken', decide = function(op)\n";
    auto opened = ledger::Ledger::open("sqlite://:memory:", clock);
    REQUIRE(opened.isOk());
    recorder_ledger = std::move(opened).value();
    recorder = std::make_unique<engine::LedgerScriptRecorder>(*recorder_ledger);
    lua::ScriptRegistryOptions options;
    options.policies_dir = dir.path() / "policies";
    options.scripts_dir = dir.path() / "scripts";
    registry = std::make_unique<lua::ScriptRegistry>(options, *recorder, clock);
    REQUIRE(registry->reloadAll().failed == 1);
  }

  SystemClock clock;
};

}  // namespace

TEST_CASE("cli: status shows an under-replicated plan, its held rollout and a script that failed to load") {
  BrokenScripts scripts;
  LiveServer live([&](api::ServerOptions& options) { options.scripts = scripts.registry.get(); });
  REQUIRE(live.run({"node", "create", "-m", example("nodes.yaml")}).code == 0);
  REQUIRE(live.run({"deployment", "create", "-m", example("nginx-plan.yaml")}).code == 0);
  REQUIRE(live.run({"deployment", "add-deployment", "-m", example("deployment-2.yaml")}).code == 0);
  // deployment-2 asks for three instances: one runs, the CREATE of a second waits for people.
  REQUIRE(live.ledger
              ->plans().setDeploymentState(kExamplePlan, "deployment-2", model::DeploymentState::kInProgress, std::nullopt,
                                   "controller")
              .isOk());
  model::Operation create;
  create.type = model::OperationType::kCreate;
  create.intent = "deployment-2";
  create.requested_by = "deployer";
  auto running = live.ledger->operations().createInstanceWithOperation(kExamplePlan, "deployment-2", create, "controller");
  REQUIRE(running.isOk());
  model::RuntimeInstance runtime;
  runtime.meta_instance = running->meta_instance;
  runtime.node = "kind-worker";
  runtime.reservation = {1, 1};
  auto placed = live.ledger->instances().reserveForOperation(running->meta.id, runtime, "approval");
  REQUIRE_MESSAGE(placed.isOk(), placed.status().toString());
  for (model::RuntimeState state : {model::RuntimeState::kStarting, model::RuntimeState::kRunning}) {
    REQUIRE(live.ledger->instances().setRuntimeInstanceState(placed->meta.id, state, std::nullopt, "executor").isOk());
  }
  auto waiting = live.ledger->operations().createInstanceWithOperation(kExamplePlan, "deployment-2", create, "controller");
  REQUIRE(waiting.isOk());
  REQUIRE(live.ledger
              ->operations().setOperationState(waiting->meta.id, model::OperationState::kPendingApproval, std::nullopt, "approval")
              .isOk());
  const std::string id = std::to_string(waiting->meta.id);

  CliRun status = live.run({"status"});
  REQUIRE_MESSAGE(status.code == 0, status.err);
  CHECK(contains(status.out,
                 "Nodes:                    4 (ALLOCATED 4)\n"
                 "Under-Replicated Plans:   " +
                     kExamplePlan + " (1 of 3 running)\n"));
  CHECK(contains(status.out, "Scripts That Failed to Load\n"));
  CHECK(contains(status.out, "broken.lua"));
  CHECK(contains(status.out, "Deployment Plan Instances\n"));
  CHECK(contains(status.out, "| " + kExamplePlan + " |    deployment-2    |    3    |    1    |"));
  CHECK(contains(status.out, "Held Rollouts\n"));
  CHECK(contains(status.out, "| approval | waiting for approval of operation " + id + " (CREATE of " +
                                 waiting->meta_instance + ")"));
  CHECK(status.out.ends_with("Total: 1\n"));  // the operation waiting for approval

  const Json json = Json::parse(live.run({"status", "-o", "json"}).out);
  for (const char* key : {"control_loop", "plans", "plan_instances", "rollouts", "held_rollouts",
                          "waiting_for_approval", "nodes", "failed_scripts"}) {
    CHECK_MESSAGE(json.contains(key), key);
  }
  REQUIRE(json["plan_instances"].size() == 1);
  CHECK(json["plan_instances"][0]["name"] == kExamplePlan);
  CHECK(json["plan_instances"][0]["desired"] == 3);
  CHECK(json["plan_instances"][0]["instances"]["running"] == 1);
  CHECK(json["plan_instances"][0]["under_replicated"] == true);
  REQUIRE(json["held_rollouts"].size() == 1);
  CHECK(json["held_rollouts"][0]["deployment_id"] == "deployment-2");
  REQUIRE(json["held_rollouts"][0]["holds"].size() == 1);
  CHECK(json["held_rollouts"][0]["holds"][0]["kind"] == "approval");
  CHECK(json["held_rollouts"][0]["holds"][0]["operation"] == waiting->meta.id);
  REQUIRE(json["failed_scripts"].size() == 1);
  CHECK(json["failed_scripts"][0]["path"].get<std::string>().ends_with("broken.lua"));
  CHECK(json["failed_scripts"][0]["status"] == "failed");
}

TEST_CASE("cli: status of a quiet host says nothing is held and raises no alarm") {
  LiveServer live;
  CliRun status = live.run({"status"});
  REQUIRE_MESSAGE(status.code == 0, status.err);
  CHECK_FALSE(contains(status.out, "Under-Replicated"));
  CHECK_FALSE(contains(status.out, "Scripts That Failed to Load"));
  CHECK(contains(status.out, "Deployment Plan Instances\nNo deployment plans\n"));
  CHECK(contains(status.out, "Held Rollouts\nNo rollouts are held\n"));
  const Json json = Json::parse(live.run({"status", "-o", "json"}).out);
  CHECK(json["plan_instances"].empty());
  CHECK(json["held_rollouts"].empty());
  CHECK(json["failed_scripts"].empty());
}
