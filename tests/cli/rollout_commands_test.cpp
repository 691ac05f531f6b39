// `tide deployment promote | abort | pause | resume | rollback | retry | watch` and the
// Rollout section of `tide deployment show`: against an in-process API server (no control
// loop, so deployments stay where the test puts them) and against `tide serve`, whose
// control loop runs the dev plan's rollouts with the operations a shipped policy approves.

#include <chrono>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_test_support.h"
#include "tests/cli/serve_process.h"
#include "tests/support/eventually.h"

using namespace tide::testing;
namespace model = tide::model;

namespace {

using Json = nlohmann::json;

const std::string kDevPlan = "nginx-dev-plan";

// The examples' nodes and the nginx plan, with no deployment yet.
struct CliRolloutFixture {
  LiveServer live;

  CliRolloutFixture() {
    REQUIRE(live.run({"node", "create", "-m", example("nodes.yaml")}).code == 0);
    REQUIRE(live.run({"deployment", "create", "-m", example("nginx-plan.yaml")}).code == 0);
  }

  void addDeployment(const std::string& manifest) {
    CliRun added = live.run({"deployment", "add-deployment", "-m", example(manifest)});
    REQUIRE_MESSAGE(added.code == 0, added.err);
  }
};

}  // namespace

TEST_CASE("cli: deployment show ends the deployments with the Rollout section of the newest one") {
  CliRolloutFixture fixture;
  fixture.addDeployment("deployment-1.yaml");
  fixture.addDeployment("deployment-2.yaml");

  CliRun show = fixture.live.run({"deployment", "show", kExamplePlan});
  REQUIRE_MESSAGE(show.code == 0, show.err);
  CHECK(contains(show.out,
                 "Total: 2\n"
                 "\n"
                 "Rollout\n"
                 "    Deployment ID:        deployment-2\n"
                 "    Strategy:             rolling\n"
                 "    State:                PENDING\n"
                 "    Message:              <unset>\n"
                 "    Progress Time:        not started\n"
                 "\n"
                 "Instance Summary\n"));
  // -o json is the server's view as it was.
  Json view = Json::parse(fixture.live.run({"deployment", "show", kExamplePlan, "-o", "json"}).out);
  CHECK(view["deployments"].size() == 2);
  CHECK_FALSE(view.contains("rollout"));
}

TEST_CASE("cli: rollout verbs on a plan without deployments or an unknown plan say so") {
  CliRolloutFixture fixture;
  for (const char* verb : {"promote", "abort", "pause", "resume", "rollback", "retry", "watch"}) {
    CAPTURE(verb);
    CliRun none = fixture.live.run({"deployment", verb, kExamplePlan});
    CHECK(none.code == 1);
    CHECK(none.out.empty());
    CHECK(none.err == "error: plan " + kExamplePlan + " has no deployments\n");
  }
  CliRun unknown = fixture.live.run({"deployment", "watch", "no-such-plan"});
  CHECK(unknown.code == 1);
  CHECK(contains(unknown.err, "no-such-plan"));

  fixture.addDeployment("deployment-1.yaml");
  CliRun missing = fixture.live.run({"deployment", "watch", kExamplePlan, "-D", "deployment-9"});
  CHECK(missing.code == 1);
  CHECK(missing.err == "error: plan " + kExamplePlan + " has no deployment deployment-9\n");

  CliRun bad_interval = fixture.live.run({"deployment", "watch", kExamplePlan, "--interval", "0"});
  CHECK(bad_interval.code == 2);
}

TEST_CASE("cli: watch wakes up on the deployment's events and exits 1 with the final message") {
  CliRolloutFixture fixture;
  fixture.addDeployment("deployment-1.yaml");

  // Long enough that only the events long poll can wake the watch in time.
  auto watch = std::async(std::launch::async, [&] {
    return fixture.live.run({"deployment", "watch", kExamplePlan, "--interval", "30", "-o", "table"});
  });
  // The watch prints its first line before it waits; cancel only once it waits.
  REQUIRE(eventually([&] { return fixture.live.server->waitingRequests() == 1; }));
  auto started = std::chrono::steady_clock::now();
  REQUIRE(fixture.live.run({"deployment", "cancel-deployment", kExamplePlan, "-D", "deployment-1"}).code == 0);
  REQUIRE(watch.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));

  CliRun watched = watch.get();
  CHECK(watched.code == 1);
  std::vector<std::string> lines = linesOf(watched.out);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "Watching deployment deployment-1 of plan " + kExamplePlan + " (the newest)");
  CHECK(lines[1].ends_with("Z  PENDING  new 0/0 ready, old 0/0 ready"));
  CHECK(lines[2].ends_with("Z  CANCELLED  new 0/0 ready, old 0/0 ready  cancelled through the API"));
  CHECK(watched.err ==
        "error: deployment deployment-1 of plan " + kExamplePlan + " ended CANCELLED: cancelled through the API\n");

  // A finished deployment is one line; -o json makes it one object.
  CliRun again = fixture.live.run({"deployment", "watch", kExamplePlan, "-D", "deployment-1", "-o", "json"});
  CHECK(again.code == 1);
  std::vector<std::string> json_lines = linesOf(again.out);
  REQUIRE(json_lines.size() == 1);
  Json last = Json::parse(json_lines[0]);
  CHECK(last["deployment_id"] == "deployment-1");
  CHECK(last["state"] == "CANCELLED");
  CHECK(last["message"] == "cancelled through the API");
  CHECK(last["instances"]["new"]["total"] == 0);
}

TEST_CASE("cli: rollout controls act on the newest deployment and print its new state") {
  CliRolloutFixture fixture;
  fixture.addDeployment("deployment-1.yaml");
  const std::string newest = "Deployment deployment-1 of plan " + kExamplePlan + " (the newest): ";

  CliRun early = fixture.live.run({"deployment", "pause", kExamplePlan});
  CHECK(early.code == 1);
  CHECK(early.err == "error: deployment 'deployment-1' is PENDING; only a rollout in progress can be paused\n");

  // No control loop runs here: nothing takes the promotion up, and promote says so.
  CliRun promoted = fixture.live.run({"deployment", "promote", kExamplePlan, "--wait", "0"});
  REQUIRE_MESSAGE(promoted.code == 0, promoted.err);
  CHECK(promoted.out == newest + "PENDING; the promotion is recorded, the rollout has not taken it up yet\n");
  CliRun full = fixture.live.run(
      {"deployment", "promote", kExamplePlan, "--full", "--reason", "looks good", "--wait", "0", "-o", "json"});
  REQUIRE_MESSAGE(full.code == 0, full.err);
  Json deployment = Json::parse(full.out);
  CHECK(deployment["signals"]["promote_full"]["by"] == kBootstrapAdmin);
  CHECK(deployment["signals"]["promote_full"]["reason"] == "looks good");
  CliRun show = fixture.live.run({"deployment", "show", kExamplePlan});
  CHECK(contains(show.out, "    Pending Signals:      promote by bootstrap-admin at "));
  CHECK(contains(show.out, "\n                          promote_full by bootstrap-admin at "));

  CliRun aborted = fixture.live.run({"deployment", "abort", kExamplePlan, "--reason", "wrong image"});
  REQUIRE_MESSAGE(aborted.code == 0, aborted.err);
  CHECK(aborted.out == newest + "FAILED (aborted by bootstrap-admin: wrong image)\n");

  CliRun retried = fixture.live.run({"deployment", "retry", kExamplePlan});
  REQUIRE_MESSAGE(retried.code == 0, retried.err);
  CHECK(retried.out == newest + "IN_PROGRESS (retried by bootstrap-admin)\n");

  CliRun paused = fixture.live.run({"deployment", "pause", kExamplePlan, "-D", "deployment-1", "--reason", "lunch"});
  REQUIRE_MESSAGE(paused.code == 0, paused.err);
  CHECK(paused.out == "Deployment deployment-1 of plan " + kExamplePlan + ": PAUSED (paused by bootstrap-admin: lunch)\n");
  show = fixture.live.run({"deployment", "show", kExamplePlan});
  CHECK(contains(show.out,
                 "    State:                PAUSED\n"
                 "    Message:              paused by bootstrap-admin: lunch\n"
                 "    Paused By:            bootstrap-admin at "));
  CHECK(contains(show.out, ": lunch\n    Progress Time:        "));

  CliRun resumed = fixture.live.run({"deployment", "resume", kExamplePlan});
  REQUIRE_MESSAGE(resumed.code == 0, resumed.err);
  CHECK(resumed.out == newest + "IN_PROGRESS (resumed by bootstrap-admin)\n");
  CliRun not_paused = fixture.live.run({"deployment", "resume", kExamplePlan});
  CHECK(not_paused.code == 1);
  CHECK(not_paused.err == "error: deployment 'deployment-1' is IN_PROGRESS; it is not paused\n");

  CliRun nothing = fixture.live.run({"deployment", "rollback", kExamplePlan});
  CHECK(nothing.code == 1);
  CHECK(contains(nothing.err, "has nothing to roll back to"));
}

TEST_CASE("cli: rollback acts on the newest deployment not rolled back already, --to on an earlier one") {
  CliRolloutFixture fixture;
  // Deployments 1 and 2 completed; 3 rolled back on its own (as a failed analysis does), which
  // re-opened 2; the control loop does not run here, so the test completes it again.
  auto complete = [&](const std::string& id) {
    for (tide::model::DeploymentState state : {tide::model::DeploymentState::kInProgress, tide::model::DeploymentState::kCompleted}) {
      auto moved = fixture.live.ledger->plans().setDeploymentState(kExamplePlan, id, state, std::nullopt, "controller", "");
      REQUIRE_MESSAGE(moved.isOk(), moved.status().toString());
    }
  };
  for (const char* manifest : {"deployment-1.yaml", "deployment-2.yaml", "deployment-3.yaml"}) {
    fixture.addDeployment(manifest);
  }
  complete("deployment-1");
  complete("deployment-2");
  REQUIRE(fixture.live.ledger
              ->plans().setDeploymentState(kExamplePlan, "deployment-3", model::DeploymentState::kInProgress, std::nullopt,
                                   "controller", "")
              .isOk());
  REQUIRE(
      fixture.live.ledger->plans().controlDeployment(kExamplePlan, "deployment-3", "rollback", "failed analysis", "controller")
          .isOk());
  REQUIRE(fixture.live.ledger
              ->plans().setDeploymentState(kExamplePlan, "deployment-2", model::DeploymentState::kCompleted, std::nullopt,
                                   "controller", "")
              .isOk());

  CliRun rolled = fixture.live.run({"deployment", "rollback", kExamplePlan, "--reason", "v2 too"});
  REQUIRE_MESSAGE(rolled.code == 0, rolled.err);
  CHECK(rolled.out == "Deployment deployment-2 of plan " + kExamplePlan +
                          " (the newest not rolled back): ROLLED_BACK (rolled back by bootstrap-admin: v2 too)\n");

  // deployment-1 is being restored; rolling it back to itself, or to a later one, is refused.
  CliRun to_self = fixture.live.run({"deployment", "rollback", kExamplePlan, "--to", "deployment-1"});
  CHECK(to_self.code == 1);
  CHECK(to_self.err ==
        "error: cannot roll deployment 'deployment-1' back to 'deployment-1': it is not an earlier "
        "deployment of the plan\n");
  CliRun unknown = fixture.live.run({"deployment", "rollback", kExamplePlan, "-D", "deployment-1", "--to", "v0"});
  CHECK(unknown.code == 1);
  CHECK(unknown.err == "error: plan '" + kExamplePlan + "' has no deployment 'v0'\n");
  CliRun help = fixture.live.run({"deployment", "rollback", "--help"});
  CHECK(contains(help.out, "--to"));
}

TEST_CASE("cli: pause, resume and watch a rollout of tide serve to its end") {
  ServeProcess serve;
  serve.actAs(serve.newToken("ops", "admin"));  // alice below is not its own token
  REQUIRE(serve.tide("node create -m " + example("nodes.yaml")).code == 0);

  // nginx-namespace has no approving policy: the rollout waits in IN_PROGRESS for a person.
  REQUIRE(serve.tide("deployment create -m " + example("nginx-plan.yaml")).code == 0);
  REQUIRE(serve.tide("deployment add-deployment -m " + example("deployment-1.yaml")).code == 0);
  auto state = [&](const std::string& plan) {
    CliRun show = serve.tide("deployment show " + plan + " -o json");
    return show.code == 0 ? Json::parse(show.out)["deployments"].back()["state"].get<std::string>() : "";
  };
  for (int i = 0; i < 300 && state(kExamplePlan) != "IN_PROGRESS"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(state(kExamplePlan) == "IN_PROGRESS");

  CliRun paused = serve.tide("deployment pause " + kExamplePlan + " --reason maintenance");
  REQUIRE_MESSAGE(paused.code == 0, paused.err);
  CHECK(paused.out ==
        "Deployment deployment-1 of plan " + kExamplePlan + " (the newest): PAUSED (paused by ops: maintenance)\n");
  CliRun show = serve.tide("deployment show " + kExamplePlan);
  CHECK(contains(show.out,
                 "Rollout\n    Deployment ID:        deployment-1\n    Strategy:             rolling\n"
                 "    State:                PAUSED\n"));
  CHECK(contains(show.out, "    Paused By:            ops at "));
  CliRun resumed = serve.tide("deployment resume " + kExamplePlan + " -D deployment-1");
  REQUIRE_MESSAGE(resumed.code == 0, resumed.err);
  CHECK(resumed.out == "Deployment deployment-1 of plan " + kExamplePlan + ": IN_PROGRESS (resumed by ops)\n");

  // The rollout completes once someone other than the admin who added the deployment
  // approves its CREATE (the four-eyes rule); watch sees it through and exits 0.
  const std::string alice = serve.newToken("alice", "approver");
  for (int i = 0; i < 300 && serve.tide("deployment approve-operation " + kExamplePlan, {}, alice).code != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CliRun watched = serve.tide("deployment watch " + kExamplePlan + " -o table", std::chrono::seconds(120));
  CHECK_MESSAGE(watched.code == 0, watched.err);
  std::vector<std::string> lines = linesOf(watched.out);
  REQUIRE(lines.size() >= 2);
  CHECK(lines.front() == "Watching deployment deployment-1 of plan " + kExamplePlan + " (the newest)");
  CHECK(contains(lines.back(), "Z  COMPLETED  new 1/1 ready, old 0/0 ready"));

  CliRun late = serve.tide("deployment promote " + kExamplePlan);
  CHECK(late.code == 1);
  CHECK(late.err == "error: deployment 'deployment-1' is COMPLETED; only a rollout in progress can be promoted\n");
  CliRun nothing = serve.tide("deployment rollback " + kExamplePlan + " -D deployment-1");
  CHECK(nothing.code == 1);
  CHECK(contains(nothing.err, "has nothing to roll back to"));
}

TEST_CASE("cli: watch follows a rollout the dev policy approves and prints NDJSON into a pipe") {
  ServeProcess serve;
  REQUIRE(serve.tide("node create -m " + example("nodes.yaml")).code == 0);
  REQUIRE(serve.tide("deployment create -m " + example("nginx-dev-plan.yaml")).code == 0);
  REQUIRE(serve.tide("deployment add-deployment -m " + example("dev-deployment.yaml")).code == 0);

  CliRun watched = serve.tide("deployment watch " + kDevPlan, std::chrono::seconds(120));
  CHECK_MESSAGE(watched.code == 0, watched.err);
  std::vector<std::string> lines = linesOf(watched.out);
  REQUIRE(!lines.empty());
  for (const std::string& line : lines) {
    Json change = Json::parse(line);
    CHECK(change["plan"] == kDevPlan);
    CHECK(change["deployment_id"] == "dev-1");
  }
  Json last = Json::parse(lines.back());
  CHECK(last["state"] == "COMPLETED");
  CHECK(last["instances"]["new"] == Json{{"total", 3}, {"ready", 3}});
}

TEST_CASE("cli: deployment approve approves the rollout's waiting operations and says what became of each") {
  LiveServer live;
  // Two people with tokens the bootstrap admin minted (two parties: docs/architecture.md#four-eyes).
  auto mint = [&](const std::string& name, const std::string& role) {
    CliRun created = live.run({"token", "create", "--name", name, "--role", role, "-o", "json"});
    REQUIRE_MESSAGE(created.code == 0, created.err);
    const std::string secret = Json::parse(created.out).value("token", "");
    REQUIRE_FALSE(secret.empty());
    return secret;
  };
  const std::string ops = mint("ops", "admin");
  const std::string alice = mint("alice", "approver");
  auto as = [&](std::vector<std::string> args, const std::string& token) {
    args.insert(args.end(), {"--server", live.url, "--token", token});
    return runCli(std::move(args));
  };
  REQUIRE(as({"node", "create", "-m", example("nodes.yaml")}, ops).code == 0);
  REQUIRE(as({"deployment", "create", "-m", example("nginx-plan.yaml")}, ops).code == 0);
  REQUIRE(as({"deployment", "add-deployment", "-m", example("deployment-1.yaml")}, ops).code == 0);
  // An operation of its rollout waiting for a person, as the controller and the policies
  // leave it: requested on behalf of whoever added the deployment.
  auto meta = live.ledger->instances().createMetaInstance(kExamplePlan, "deployment-1", "test");
  REQUIRE(meta.isOk());
  tide::model::Operation asked;
  asked.meta_instance = meta->name;
  asked.type = model::OperationType::kCreate;
  asked.intent = "deployment-1";
  asked.requested_by = "ops";
  auto created = live.ledger->operations().createOperation(asked, "controller");
  REQUIRE(created.isOk());
  REQUIRE(live.ledger
              ->operations().setOperationState(created->meta.id, model::OperationState::kPendingApproval, std::nullopt, "approval",
                                  "a person")
              .isOk());

  // Whoever added it may not approve it.
  CliRun own = as({"deployment", "approve", kExamplePlan}, ops);
  CHECK(own.code == 1);
  CHECK_MESSAGE(contains(own.err, "approver_must_differ"), own.err << own.out);

  // deployment show names what the rollout waits for people on.
  CliRun shown = as({"deployment", "show", kExamplePlan}, ops);
  REQUIRE_MESSAGE(shown.code == 0, shown.err);
  CHECK_MESSAGE(contains(shown.out, "Waiting For Approval: operation " + std::to_string(created->meta.id) +
                                        " (CREATE " + meta->name + ")"),
                shown.out);

  CliRun approved = as({"deployment", "approve", kExamplePlan, "--reason", "reviewed"}, alice);
  REQUIRE_MESSAGE(approved.code == 0, approved.err);
  CHECK(contains(approved.out, "Approved the rollout of deployment deployment-1 of plan " + kExamplePlan +
                                   " (the newest) (PENDING): "));
  CHECK(contains(approved.out, "Waiting now:\n  operation " + std::to_string(created->meta.id) + " (CREATE " +
                                   meta->name + "): approved\n"));
  CHECK(live.ledger->operations().getOperation(created->meta.id)->approved_by == "alice");
  shown = as({"deployment", "show", kExamplePlan}, ops);
  CHECK_MESSAGE(contains(shown.out, "Rollout Approved By:  alice at "), shown.out);
  CHECK_MESSAGE(contains(shown.out, ": reviewed\n"), shown.out);
  CHECK_FALSE(contains(shown.out, "Waiting For Approval:"));
  CHECK_FALSE(contains(shown.out, "Pending Signals:"));

  // -o json is the API's reply: the deployment with what became of each operation.
  CliRun again = as({"deployment", "approve", kExamplePlan, "-o", "json"}, alice);
  REQUIRE_MESSAGE(again.code == 0, again.err);
  Json reply = Json::parse(again.out);
  CHECK(reply["deployment_id"] == "deployment-1");
  CHECK(reply["operations"] == Json::array());
}
