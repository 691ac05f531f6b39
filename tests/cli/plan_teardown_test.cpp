// `tide deployment delete PLAN [--scale-to-zero [--no-wait]]`: against an in-process API
// server (no control loop: the reply is all there is) and against `tide serve`, whose
// control loop carries the DELETEs out, through the policies.

#include <chrono>
#include <fstream>
#include <future>
#include <regex>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_test_support.h"
#include "tests/cli/serve_process.h"
#include "tests/support/eventually.h"

using namespace tide::testing;

namespace {

using Json = nlohmann::json;

const std::string kTeardownDevPlan = "nginx-dev-plan";

// How many live instances plan `plan` has, -1 when it cannot be read.
int64_t liveInstancesOf(const ServeProcess& serve, const std::string& plan) {
  CliRun show = serve.tide("deployment show " + plan + " -o json");
  if (show.code != 0) return -1;
  return Json::parse(show.out)["instance_summary"].value("total", int64_t{-1});
}

bool planListed(const ServeProcess& serve, const std::string& plan) {
  CliRun list = serve.tide("deployment list -o json");
  REQUIRE_MESSAGE(list.code == 0, list.err);
  const Json plans = Json::parse(list.out);
  for (const Json& item : plans["items"]) {
    if (item.value("name", "") == plan) return true;
  }
  return false;
}

// The dev plan as plan `plan` in namespace prod-web, where prod-delete-manual leaves every
// DELETE for two approvers (and auto-approve-dev approves nothing).
void createProdPlan(const ServeProcess& serve, const std::string& plan) {
  std::ifstream dev(example("nginx-dev-plan.yaml"));
  std::string text((std::istreambuf_iterator<char>(dev)), std::istreambuf_iterator<char>());
  text = std::regex_replace(text, std::regex("nginx-dev-plan"), plan);
  text = std::regex_replace(text, std::regex("namespace: \"nginx-dev\""), "namespace: \"prod-web\"");
  std::ofstream(serve.dataDir() / "prod-plan.yaml") << text;
  REQUIRE(serve.tide("node create -m " + example("nodes.yaml")).code == 0);
  REQUIRE(serve.tide("deployment create -m " + (serve.dataDir() / "prod-plan.yaml").string()).code == 0);
}

// Deployment `id` of one instance added to plan `plan`.
void addProdDeployment(const ServeProcess& serve, const std::string& plan, const std::string& id) {
  const std::filesystem::path file = serve.dataDir() / (id + ".yaml");
  std::ofstream(file) << "deployment_plan_name: " << plan << "\ndeployment_id: " << id << "\n"
                      << "payload_coordinates: [{payload_name: nginx-payload, coordinates: {image: \"nginx:latest\"}}]\n"
                      << "instance_count: 1\n";
  CliRun added = serve.tide("deployment add-deployment -m " + file.string());
  REQUIRE_MESSAGE(added.code == 0, added.err);
}

// Plan `plan` (createProdPlan) with deployment prod-1, once its one instance is recorded.
void startProdPlan(const ServeProcess& serve, const std::string& plan) {
  createProdPlan(serve, plan);
  addProdDeployment(serve, plan, "prod-1");
  REQUIRE(eventually([&] { return liveInstancesOf(serve, plan) == 1; }, std::chrono::seconds(60)));
}

// `tide deployment delete PLAN --scale-to-zero` in the background, its output in a file
// that can be read while it waits.
struct BackgroundTeardown {
  BackgroundTeardown(const ServeProcess& serve, const std::string& plan)
      : progress_file((serve.dataDir() / "teardown.out").string()),
        run(std::async(std::launch::async, [&serve, plan, file = progress_file] {
          return serve.tide("deployment delete " + plan + " --scale-to-zero >" + file, std::chrono::seconds(120));
        })) {}

  std::string progress() const {
    std::ifstream file(progress_file);
    return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  }

  const std::string progress_file;
  std::future<CliRun> run;
};

}  // namespace

TEST_CASE("cli: deployment delete --scale-to-zero --no-wait answers what it asked for") {
  LiveServer live;
  REQUIRE(live.run({"node", "create", "-m", example("nodes.yaml")}).code == 0);
  REQUIRE(live.run({"deployment", "create", "-m", example("nginx-plan.yaml")}).code == 0);
  REQUIRE(live.run({"deployment", "add-deployment", "-m", example("deployment-1.yaml")}).code == 0);

  // No control loop: deployment-1 stays PENDING, which the plan's deletion refuses.
  CliRun unfinished = live.run({"deployment", "delete", kExamplePlan});
  CHECK(unfinished.code == 1);
  CHECK(unfinished.err == "error: plan '" + kExamplePlan +
                              "' still has 0 instance(s) and 1 unfinished deployment(s); scale it to 0 first "
                              "(`tide deployment delete " + kExamplePlan +
                              " --scale-to-zero` deletes its instances, through approval, and then the plan)\n");

  CliRun asked = live.run({"deployment", "delete", kExamplePlan, "--scale-to-zero", "--no-wait"});
  REQUIRE_MESSAGE(asked.code == 0, asked.err);
  CHECK(asked.out == "Cancelled the unfinished deployment(s) of plan " + kExamplePlan +
                         ": deployment-1\n"
                         "Asked to delete 0 instance(s) of plan " + kExamplePlan + "\n"
                         "Not waiting: once no instance is left, `tide deployment delete " + kExamplePlan +
                         "` deletes the plan\n");
  CliRun again = live.run({"deployment", "delete", kExamplePlan, "--scale-to-zero", "--no-wait", "-o", "json"});
  REQUIRE_MESSAGE(again.code == 0, again.err);
  CHECK(Json::parse(again.out) ==
        Json{{"plan", kExamplePlan}, {"operations", Json::array()}, {"cancelled_deployments", Json::array()}});

  // An operator may scale a plan to zero; deleting the plan is an admin's, and the answer says so.
  CliRun operator_token = live.run({"token", "create", "--name", "ops", "--role", "operator", "-o", "json"});
  REQUIRE_MESSAGE(operator_token.code == 0, operator_token.err);
  CliRun by_operator = runCli({"deployment", "delete", kExamplePlan, "--scale-to-zero", "--server", live.url, "--token",
                               Json::parse(operator_token.out)["token"].get<std::string>()});
  CHECK(by_operator.code == 1);
  CHECK(by_operator.err.find("error: no instance of plan " + kExamplePlan +
                             " is left, but deleting the plan itself needs the admin role (") == 0);
  CHECK(by_operator.err.find("an admin runs `tide deployment delete " + kExamplePlan + "`\n") != std::string::npos);

  CliRun deleted = live.run({"deployment", "delete", kExamplePlan});
  REQUIRE_MESSAGE(deleted.code == 0, deleted.err);
  CHECK(deleted.out == "Deployment plan deleted: " + kExamplePlan + "\n");
  CliRun gone = live.run({"deployment", "delete", kExamplePlan, "--scale-to-zero"});
  CHECK(gone.code == 1);
  CHECK(gone.err == "error: plan '" + kExamplePlan + "' not found\n");
}

TEST_CASE("cli: deployment delete --scale-to-zero tears a running plan down and deletes it") {
  ServeProcess serve;
  REQUIRE(serve.tide("node create -m " + example("nodes.yaml")).code == 0);
  REQUIRE(serve.tide("deployment create -m " + example("nginx-dev-plan.yaml")).code == 0);
  REQUIRE(serve.tide("deployment add-deployment -m " + example("dev-deployment.yaml")).code == 0);
  CliRun rolled_out = serve.tide("deployment watch " + kTeardownDevPlan + " -o json", std::chrono::seconds(120));
  REQUIRE_MESSAGE(rolled_out.code == 0, rolled_out.err);

  CliRun refused = serve.tide("deployment delete " + kTeardownDevPlan);
  CHECK(refused.code == 1);
  CHECK(refused.err == "error: plan '" + kTeardownDevPlan +
                           "' still has 3 instance(s) and 0 unfinished deployment(s); scale it to 0 first "
                           "(`tide deployment delete " + kTeardownDevPlan +
                           " --scale-to-zero` deletes its instances, through approval, and then the plan)\n");

  // The dev policy approves the DELETEs; the command follows them to the end.
  CliRun torn = serve.tide("deployment delete " + kTeardownDevPlan + " --scale-to-zero --reason retired",
                           std::chrono::seconds(120));
  REQUIRE_MESSAGE(torn.code == 0, torn.err);
  CHECK(std::regex_search(torn.out, std::regex("^Asked to delete 3 instance\\(s\\) of plan " + kTeardownDevPlan +
                                               ": operation\\(s\\) \\d+, \\d+, \\d+\n")));
  CHECK(std::regex_search(torn.out, std::regex("\n[0-9T:-]+Z  0 instance\\(s\\) left\nDeployment plan deleted: " +
                                               kTeardownDevPlan + "\n$")));
  CHECK_FALSE(planListed(serve, kTeardownDevPlan));
  // The event log tells what was asked for, and why.
  CliRun events = serve.tide("events -o json");
  REQUIRE_MESSAGE(events.code == 0, events.err);
  const Json log = Json::parse(events.out);
  int teardowns = 0;
  for (const Json& event : log["items"]) {
    if (event.value("kind", "") != "plan.scale_to_zero") continue;
    ++teardowns;
    CHECK(event["actor"] == kBootstrapAdmin);
    CHECK(event["data"]["operations"].size() == 3);
    CHECK(event["data"]["reason"] == "retired");
  }
  CHECK(teardowns == 1);
  // Each DELETE carries the reason too, from its operation.created event on.
  int reasoned_deletes = 0;
  for (const Json& event : log["items"]) {
    if (event.value("kind", "") == "operation.created" && event["data"].value("type", "") == "DELETE") {
      CHECK(event["data"].value("reason", "") == "retired");
      ++reasoned_deletes;
    }
  }
  CHECK(reasoned_deletes == 3);

  // The deleted plan's DELETEs stay listed and can be shown.
  CliRun listed = serve.tide("operations list --plan " + kTeardownDevPlan + " --type DELETE -o json");
  REQUIRE_MESSAGE(listed.code == 0, listed.err);
  const Json deletes = Json::parse(listed.out)["items"];
  REQUIRE(deletes.size() == 3);
  for (const Json& operation : deletes) {
    CHECK(operation["state"] == "SUCCEEDED");
    const std::string id = std::to_string(operation["metadata"]["id"].get<int64_t>());
    CliRun shown = serve.tide("operations show " + id);
    REQUIRE_MESSAGE(shown.code == 0, shown.err);
    CHECK(contains(shown.out, "Deployment Plan:          " + kTeardownDevPlan + "\n"));
    CHECK(contains(shown.out, "Type:                     DELETE\n"));
  }
  CliRun table = serve.tide("operations list --plan " + kTeardownDevPlan + " --state SUCCEEDED,FAILED");
  REQUIRE_MESSAGE(table.code == 0, table.err);
  CHECK(contains(table.out, "Total: 6\n"));  // three CREATEs, three DELETEs
}

TEST_CASE("cli: a teardown whose DELETEs wait for approvers says so until they approve them") {
  ServeProcess serve;
  serve.actAs(serve.newToken("ops", "admin"));  // alice and bob below are not its own tokens
  const std::string plan = "nginx-prod-plan";
  // Its CREATE waits for a person too; nobody approves it: the teardown cancels the rollout.
  startProdPlan(serve, plan);

  BackgroundTeardown teardown(serve, plan);
  auto progress = [&] { return teardown.progress(); };
  // prod-delete-manual leaves the DELETE for two approvers, neither the one who asked for it.
  const std::string alice = serve.newToken("alice", "approver");
  const std::string bob = serve.newToken("bob", "approver");
  int64_t waiting_delete = 0;
  INFO("the teardown printed: " << progress());
  REQUIRE(eventually(
      [&] {
        CliRun waiting = serve.tide("operations list --plan " + plan + " --state PENDING_APPROVAL -o json");
        if (waiting.code != 0) return false;
        const Json operations = Json::parse(waiting.out);
        for (const Json& operation : operations["items"]) {
          if (operation.value("type", "") == "DELETE") waiting_delete = operation["metadata"]["id"].get<int64_t>();
        }
        return waiting_delete != 0;
      },
      std::chrono::seconds(60)));
  const std::string waiting_line = "1 instance(s) left; waiting for approval: operation(s) " +
                                   std::to_string(waiting_delete) + " (tide operations approve ID)\n";
  REQUIRE(eventually([&] { return contains(progress(), waiting_line); }, std::chrono::seconds(60)));
  for (const std::string& approver : {alice, bob}) {
    CliRun approved = serve.tide("operations approve " + std::to_string(waiting_delete), {}, approver);
    REQUIRE_MESSAGE(approved.code == 0, approved.err);
  }

  REQUIRE(teardown.run.wait_for(std::chrono::seconds(150)) == std::future_status::ready);
  CliRun torn = teardown.run.get();
  CHECK(torn.code == 0);
  const std::string out = progress();
  CHECK(contains(out, "Cancelled the unfinished deployment(s) of plan " + plan + ": prod-1\n"));
  CHECK(contains(out, "Asked to delete 1 instance(s) of plan " + plan + ": operation(s) " +
                          std::to_string(waiting_delete) + "\n"));
  CHECK(contains(out, "Deployment plan deleted: " + plan + "\n"));
  CHECK_FALSE(planListed(serve, plan));
}

TEST_CASE("cli: a teardown stops, naming it, when a deployment is added to the plan while it waits") {
  ServeProcess serve;
  const std::string plan = "nginx-prod-plan";
  startProdPlan(serve, plan);

  BackgroundTeardown teardown(serve, plan);
  auto progress = [&] { return teardown.progress(); };
  // The DELETE waits for two approvers; meanwhile someone rolls out another deployment.
  INFO("the teardown printed: " << progress());
  REQUIRE(eventually([&] { return contains(progress(), "waiting for approval: operation(s) "); },
                     std::chrono::seconds(60)));
  addProdDeployment(serve, plan, "prod-2");

  REQUIRE(teardown.run.wait_for(std::chrono::seconds(150)) == std::future_status::ready);
  CliRun stopped = teardown.run.get();
  CHECK(stopped.code == 1);
  CHECK_MESSAGE(stopped.err.starts_with("error: deployment prod-2 was added to plan " + plan +
                                        " after its teardown began (it is "),
                stopped.err);
  CHECK(contains(stopped.err, "stop it with `tide deployment cancel-deployment " + plan +
                                  " -D prod-2`, then run `tide deployment delete " + plan + " --scale-to-zero` again\n"));
  CHECK(planListed(serve, plan));

  // Doing what it says finishes the teardown: the second one cancels prod-2 and its CREATE.
  CliRun cancelled = serve.tide("deployment cancel-deployment " + plan + " -D prod-2");
  REQUIRE_MESSAGE(cancelled.code == 0, cancelled.err);
  CliRun again = serve.tide("deployment delete " + plan + " --scale-to-zero --no-wait");
  REQUIRE_MESSAGE(again.code == 0, again.err);
}
