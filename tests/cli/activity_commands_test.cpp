// `tide status`, `tide operations show`, `tide instances show|list`, `tide logs -f` and
// `tide events --kind|--subject [-f]` against `tide serve`, through the real binary.

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_process.h"
#include "tests/cli/cli_test_support.h"
#include "tests/cli/serve_process.h"
#include "tests/support/eventually.h"

using namespace tide::testing;

namespace {

using Json = nlohmann::json;

const std::string kActivityDevPlan = "nginx-dev-plan";

// `tide <args> -o json` parsed; null when the command failed.
Json tideJson(const ServeProcess& serve, const std::string& args, const std::string& token = "") {
  CliRun run = serve.tide(args + " -o json", std::chrono::seconds(0), token);
  return run.code == 0 ? Json::parse(run.out) : Json();
}

// The operations of `plan` waiting for approval, oldest first.
Json waitingOperationsOf(const ServeProcess& serve, const std::string& plan) {
  Json list = tideJson(serve, "operations list --state PENDING_APPROVAL --plan " + plan);
  return list.is_object() ? list["items"] : Json::array();
}

// The names of `plan`'s meta instances in `state`, as `instances list --all` has them.
std::vector<std::string> instancesIn(const ServeProcess& serve, const std::string& plan, const std::string& state) {
  std::vector<std::string> names;
  Json list = tideJson(serve, "instances list --all --plan " + plan);
  if (!list.is_object()) return names;
  for (const Json& entry : list["items"]) {
    if (entry["meta_instance"]["state"] == state) names.push_back(entry["meta_instance"]["name"]);
  }
  return names;
}

// The row of `table` that has a cell holding exactly `cell`: its lines up to the border under it.
std::string rowOf(const std::string& table, const std::string& cell) {
  std::istringstream lines(table);
  std::string row;
  for (std::string line; std::getline(lines, line);) {
    if (!row.empty()) {
      if (line.starts_with("+-")) return row;
      row += "\n" + line;
      continue;
    }
    std::istringstream cells(line);
    for (std::string part; std::getline(cells, part, '|');) {
      const size_t start = part.find_first_not_of(' ');
      if (start != std::string::npos && part.substr(start, part.find_last_not_of(' ') - start + 1) == cell) row = line;
    }
  }
  return row;
}

// `text` from the heading `heading` on: where rowOf looks for a row of that section's table.
std::string sectionOf(const std::string& text, const std::string& heading) {
  const size_t at = text.find("\n" + heading + "\n");
  return at == std::string::npos ? "" : text.substr(at + 1);
}

// examples/<plan> with `extra` lines appended, written to `dir`; its path.
std::string examplePlanWith(const std::filesystem::path& dir, const std::string& plan, const std::string& extra) {
  std::stringstream text;
  text << std::ifstream(example(plan)).rdbuf();
  const std::filesystem::path path = dir / ("with-" + plan);
  std::ofstream(path) << text.str() << extra;
  return path.string();
}

// The dev plan rolled out: three RUNNING instances that policies/auto_approve_dev.lua approved.
void rollOutDevPlan(const ServeProcess& serve) {
  REQUIRE(serve.tide("node create -m " + example("nodes.yaml")).code == 0);
  REQUIRE(serve.tide("deployment create -m " + example("nginx-dev-plan.yaml")).code == 0);
  REQUIRE(serve.tide("deployment add-deployment -m " + example("dev-deployment.yaml")).code == 0);
  CliRun watched = serve.tide("deployment watch " + kActivityDevPlan, std::chrono::seconds(120));
  REQUIRE_MESSAGE(watched.code == 0, watched.err);
}

}  // namespace

TEST_CASE("cli: status and the show verbs follow a CREATE that needs two approvals") {
  ServeProcess serve;
  serve.actAs(serve.newToken("ops", "admin"));  // alice and bob below are not its own tokens
  tide::testing::TempDir scratch;
  REQUIRE(serve.tide("node create -m " + example("nodes.yaml")).code == 0);
  CliRun plan =
      serve.tide("deployment create -m " + examplePlanWith(scratch.path(), "nginx-plan.yaml", "approval: {min_approvals: 2}\n"));
  REQUIRE_MESSAGE(plan.code == 0, plan.err);
  REQUIRE(serve.tide("deployment add-deployment -m " + example("deployment-1.yaml")).code == 0);
  REQUIRE(eventually([&] { return waitingOperationsOf(serve, kExamplePlan).size() == 1; }));
  const Json waiting = waitingOperationsOf(serve, kExamplePlan)[0];
  const std::string id = std::to_string(waiting["metadata"]["id"].get<int64_t>());
  const std::string instance = waiting["meta_instance"];

  // The fleet at a glance: the rollout waits for the CREATE, which waits for two approvals.
  CliRun status = serve.tide("status");
  REQUIRE_MESSAGE(status.code == 0, status.err);
  CHECK(
      status.out.starts_with("Control Loop\n    State:                running\n\n"
                             "Deployment Plans:         1 (ACTIVE 1)\n"
                             "Nodes:                    4 (ALLOCATED 4)\n"));
  const std::string rollouts = sectionOf(status.out, "Rollouts in Flight");
  CHECK(contains(rowOf(rollouts, kExamplePlan), " deployment-1 "));
  CHECK(contains(rowOf(rollouts, kExamplePlan), " rolling "));
  const std::string waiting_rows = sectionOf(status.out, "Waiting for Approval");
  CHECK(contains(rowOf(waiting_rows, id), " CREATE "));
  CHECK(contains(rowOf(waiting_rows, id), " 0 of 2 approvals "));
  Json status_json = tideJson(serve, "status");
  REQUIRE(status_json.is_object());
  CHECK(status_json["control_loop"]["halted"] == false);
  CHECK(status_json["plans"] == Json{{"total", 1}, {"by_state", {{"ACTIVE", 1}}}});
  REQUIRE(status_json["rollouts"].size() == 1);
  CHECK(status_json["rollouts"][0]["deployment_id"] == "deployment-1");
  CHECK(status_json["rollouts"][0]["strategy"] == "rolling");
  REQUIRE(status_json["waiting_for_approval"].size() == 1);
  CHECK(status_json["waiting_for_approval"][0]["meta_instance"] == instance);
  CHECK(status_json["waiting_for_approval"][0]["still_needed"] == 2);
  CHECK(status_json["nodes"]["unreachable_agents"].empty());

  // The operation with each shipped policy's verdict and the script it ran.
  Json shown = tideJson(serve, "operations show " + id);
  REQUIRE(shown.is_object());
  REQUIRE_FALSE(shown["decisions"].empty());
  const std::string sha = shown["decisions"][0]["script_sha256"];
  CliRun show = serve.tide("operations show " + id);
  REQUIRE_MESSAGE(show.code == 0, show.err);
  CHECK(
      show.out.starts_with("Operation Info\nID:                       " + id + "\nType:                     CREATE\n"));
  CHECK(contains(show.out, "Meta Instance:            " + instance + "\n"));
  CHECK(contains(show.out, "    State:                PENDING_APPROVAL\n"));
  CHECK(contains(show.out, "Approvals\n    Progress:             0 of 2 approvals\n    Still Needed:         2\n"));
  CHECK(contains(show.out, "Policy Decisions\n    Outcome:              PENDING_APPROVAL\n"));
  for (const Json& decision : shown["decisions"]) {
    CHECK(contains(rowOf(show.out, decision["policy"]), " " + decision["verdict"].get<std::string>() + " "));
  }
  CHECK(contains(show.out, " " + sha.substr(0, 12) + " "));
  CHECK_FALSE(contains(show.out, sha));

  CliRun missing = serve.tide("operations show 999");
  CHECK(missing.code == 1);
  CHECK(missing.err == "error: operation 999 not found\n");

  // One approval of two: status and show say how far it got.
  const std::string alice = serve.newToken("alice", "approver");
  const std::string bob = serve.newToken("bob", "approver");
  REQUIRE(serve.tide("operations approve " + id, std::chrono::seconds(0), alice).code == 0);
  CHECK(contains(rowOf(sectionOf(serve.tide("status").out, "Waiting for Approval"), id), " 1 of 2 approvals (alice) "));
  show = serve.tide("operations show " + id);
  CHECK(contains(show.out, "    Progress:             1 of 2 approvals (alice)\n    Still Needed:         1\n"));
  CHECK(contains(show.out, "    Given:                alice (approver) at "));

  // The second approval: the instance runs, and nothing waits any more.
  REQUIRE(serve.tide("operations approve " + id, std::chrono::seconds(0), bob).code == 0);
  CHECK(
      eventually([&] { return contains(rowOf(serve.tide("instances show " + instance).out, "CREATE"), " SUCCEEDED "); },
                 std::chrono::seconds(90)));
  CliRun shown_instance = serve.tide("instances show " + instance);
  REQUIRE_MESSAGE(shown_instance.code == 0, shown_instance.err);
  CHECK(shown_instance.out.starts_with("Meta Instance Info\nName:                     " + instance + "\n"));
  CHECK(contains(shown_instance.out, "Deployment Plan:          " + kExamplePlan + "\n"));
  CHECK(contains(shown_instance.out, "Status\n    State:                ACTIVE\n"));
  const std::string runtime = rowOf(shown_instance.out, "RUNNING");
  CHECK(contains(runtime, " Image: nginx:latest "));
  CHECK(contains(runtime, " tcp/80 -> "));
  CHECK(contains(runtime, " true "));
  CHECK(contains(rowOf(shown_instance.out, "CREATE"), "alice,bob"));
  Json instance_json = tideJson(serve, "instances show " + instance);
  CHECK(instance_json["operations"].size() == 1);
  CliRun no_instance = serve.tide("instances show nginx-service-nope");
  CHECK(no_instance.code == 1);
  CHECK(contains(no_instance.err, "nginx-service-nope"));

  CHECK(eventually([&] { return contains(serve.tide("status").out, "No rollouts in flight\n"); },
                   std::chrono::seconds(90)));
  CHECK(serve.tide("status").out.ends_with("Waiting for Approval\nNo operations are waiting for approval\n"));
}

TEST_CASE("cli: instances list hides DELETED meta instances unless --all and shows why a CREATE waits") {
  ServeProcess serve;
  tide::testing::TempDir scratch;
  rollOutDevPlan(serve);
  const std::vector<std::string> running = instancesIn(serve, kActivityDevPlan, "ACTIVE");
  REQUIRE(running.size() == 3);
  const std::string gone = running[0];
  CliRun deleted = serve.tide("deployment operate " + kActivityDevPlan + " --delete -x " + gone);
  REQUIRE_MESSAGE(deleted.code == 0, deleted.err);
  REQUIRE(eventually([&] { return instancesIn(serve, kActivityDevPlan, "DELETED").size() == 1; },
                     std::chrono::seconds(90)));

  CliRun listed = serve.tide("instances list --plan " + kActivityDevPlan);
  REQUIRE_MESSAGE(listed.code == 0, listed.err);
  CHECK_FALSE(contains(listed.out, gone));
  CHECK(contains(rowOf(listed.out, running[1]), " ACTIVE "));
  const Json listed_json = tideJson(serve, "instances list");  // the loop below must not outlive it
  for (const Json& entry : listed_json["items"]) CHECK(entry["meta_instance"]["name"] != gone);

  CliRun all = serve.tide("instances list --all --plan " + kActivityDevPlan);
  const std::string row = rowOf(all.out, gone);
  CHECK(contains(row, " DELETED "));
  CHECK(contains(row, "State: TERMINATED"));
  CHECK_FALSE(contains(row, "Healthy: true"));
  CHECK(contains(serve.tide("instances list --state DELETED").out, gone));

  // A plan asking for a capability no node has: its CREATE waits, and the list says why.
  const std::string tpu_plan = (scratch.path() / "tpu-plan.yaml").string();
  std::ofstream(tpu_plan) << "name: tpu-plan\nnamespace: nginx-dev\nserviceName: tpu\n"
                             "matchingComputeCapabilities:\n"
                             "  - {capabilityType: TPU, comparator: eq, capabilityNames: [tpu-v9]}\n"
                             "applications:\n  - payloadName: p\n    resources: {cores: 1, memory: 1}\n";
  const std::string tpu_deployment = (scratch.path() / "tpu-deployment.yaml").string();
  std::ofstream(tpu_deployment)
      << "deployment_plan_name: tpu-plan\ndeployment_id: tpu-1\n"
         "payload_coordinates:\n  - {payload_name: p, coordinates: {image: \"nginx:latest\"}}\n"
         "instance_count: 1\n";
  REQUIRE(serve.tide("deployment create -m " + tpu_plan).code == 0);
  REQUIRE(serve.tide("deployment add-deployment -m " + tpu_deployment).code == 0);
  const std::string waiting = "waiting for placement: no node has capability tpu-v9";
  CHECK(eventually([&] { return contains(serve.tide("instances list --plan tpu-plan").out, "Message: " + waiting); }));
  Json tpu = tideJson(serve, "instances list --plan tpu-plan");
  REQUIRE(tpu["items"].size() == 1);
  CHECK(tpu["items"][0]["unfinished_operation"]["type"] == "CREATE");
  CHECK(tpu["items"][0]["unfinished_operation"]["message"].get<std::string>().starts_with(waiting));
}

TEST_CASE("cli: logs -f prints what an instance writes after it started and across a restart") {
  ServeProcess serve;
  rollOutDevPlan(serve);
  const std::string instance = instancesIn(serve, kActivityDevPlan, "ACTIVE").at(0);

  RunningTide follow({"logs", "-f", instance, "--server", serve.url(), "--token", serve.token()});
  REQUIRE_MESSAGE(follow.waitForText(" listening on "), follow.output());
  // With -o json, one object per piece of the log.
  RunningTide follow_json({"logs", "-f", instance, "-o", "json", "--server", serve.url(), "--token", serve.token()});
  REQUIRE_MESSAGE(follow_json.waitForText("}\n"), follow_json.output());
  const Json piece = Json::parse(follow_json.output().substr(0, follow_json.output().find('\n')));
  CHECK(piece["meta_instance"] == instance);
  CHECK(contains(piece["log"].get<std::string>(), " listening on "));
  // The workload says so when it is stopped: a line written after `logs -f` started.
  REQUIRE(serve.tide("deployment operate " + kActivityDevPlan + " --stop -x " + instance).code == 0);
  CHECK_MESSAGE(follow.waitForText("tide workload: stopping on signal"), follow.output());
  // Restarted, it runs as a new runtime instance with a new log, which follows a header.
  REQUIRE(eventually([&] { return instancesIn(serve, kActivityDevPlan, "STOPPED").size() == 1; }));
  REQUIRE(serve.tide("deployment operate " + kActivityDevPlan + " --restart -x " + instance).code == 0);
  CHECK_MESSAGE(follow.waitFor([](const std::string& out) {
    const size_t header = out.find("==> ");
    return header != std::string::npos && out.find(" listening on ", header) != std::string::npos;
  }),
                follow.output());
  // Nothing was printed twice: one start before the stop, one after the header.
  const std::string out = follow.output();
  const size_t first = out.find(" listening on ");
  CHECK(out.find(" listening on ", first + 1) > out.find("==> " + instance + ": runtime instance "));
  CHECK(out.find("stopping on signal") == out.rfind("stopping on signal"));
}

TEST_CASE("cli: events --kind and --subject filter the log and -f follows only what matches") {
  ServeProcess serve;
  REQUIRE(serve.tide("node create -m " + example("nodes.yaml")).code == 0);

  Json nodes = tideJson(serve, "events --kind node.*");
  REQUIRE(nodes["items"].size() >= 4);
  for (const Json& event : nodes["items"]) CHECK(event["kind"].get<std::string>().starts_with("node."));
  Json one = tideJson(serve, "events --subject node/kind-worker");
  REQUIRE_FALSE(one["items"].empty());
  for (const Json& event : one["items"]) CHECK(event["subject"] == "node/kind-worker");
  CHECK(tideJson(serve, "events --kind node.created --subject node/kind-worker2")["items"].size() == 1);
  CHECK(contains(serve.tide("events --kind capability.created").out, "capability/nvidia-v100"));

  RunningTide follow(
      {"events", "-f", "--kind", "node.*", "-o", "json", "--server", serve.url(), "--token", serve.token()});
  REQUIRE_MESSAGE(follow.waitForText("\"node/kind-worker2\""), follow.output());  // the events so far
  const size_t before = follow.output().size();
  serve.newToken("vera", "viewer");  // an event of another kind
  REQUIRE(serve.tide("node cordon kind-worker3").code == 0);
  CHECK_MESSAGE(follow.waitFor([&](const std::string& out) {
    const size_t cordoned = out.find("\"node.state\"", before);
    return cordoned != std::string::npos && out.find('\n', cordoned) != std::string::npos;
  }),
                follow.output());
  CHECK(contains(serve.tide("events --kind token.*").out, "vera"));
  std::istringstream lines(follow.output());
  for (std::string line; std::getline(lines, line);) {
    CHECK(Json::parse(line)["kind"].get<std::string>().starts_with("node."));
  }
}

namespace {

// An in-process server holding the example plan (prod: its CREATEs wait for people) and
// deployment-2, three CREATEs the test asks for as the controller would, requested by
// kDeployer (who holds no token here, so any approver may decide them): one moved on to
// PENDING_APPROVAL by "approval", two left PENDING. Returns the id of the one that waits.
const std::string kDeployer = "deployer";

int64_t recordActivity(const LiveServer& live) {
  REQUIRE(live.run({"node", "create", "-m", example("nodes.yaml")}).code == 0);
  REQUIRE(live.run({"deployment", "create", "-m", example("nginx-plan.yaml")}).code == 0);
  REQUIRE(live.run({"deployment", "add-deployment", "-m", example("deployment-2.yaml")}).code == 0);
  int64_t waiting = 0;
  for (int i = 0; i < 3; ++i) {
    tide::model::Operation create;
    create.type = tide::model::OperationType::kCreate;
    create.intent = "deployment-2";
    create.requested_by = kDeployer;
    auto created = live.ledger->operations().createInstanceWithOperation(kExamplePlan, "deployment-2", create, "controller");
    REQUIRE_MESSAGE(created.isOk(), created.status().toString());
    if (i == 0) {
      waiting = created->meta.id;
      REQUIRE(live.ledger
                  ->operations().setOperationState(waiting, tide::model::OperationState::kPendingApproval, std::nullopt, "approval")
                  .isOk());
    }
  }
  return waiting;
}

Json runJson(const LiveServer& live, std::vector<std::string> args) {
  args.insert(args.end(), {"-o", "json"});
  CliRun run = live.run(args);
  REQUIRE_MESSAGE(run.code == 0, run.err);
  return Json::parse(run.out);
}

}  // namespace

TEST_CASE("cli: events take --actor, --plan, --state, --since, --until and --limit, alone and together") {
  LiveServer live;
  recordActivity(live);
  const Json all = runJson(live, {"events"})["items"];
  REQUIRE(all.size() > 10);

  const Json of_plan = runJson(live, {"events", "--plan", kExamplePlan})["items"];
  REQUIRE(of_plan.size() >= 8);  // the plan, its deployment, three instances and their CREATEs
  for (const Json& event : of_plan) {
    const std::string subject = event["subject"];
    CHECK_MESSAGE((subject == "plan/" + kExamplePlan || subject.starts_with("deployment/" + kExamplePlan + "/") ||
                   subject.starts_with("instance/") || subject.starts_with("operation/")),
                  subject);
  }

  const Json by_approval = runJson(live, {"events", "--actor", "approval"})["items"];
  REQUIRE(by_approval.size() == 1);
  CHECK(by_approval[0]["data"]["to"] == "PENDING_APPROVAL");
  const Json into = runJson(live, {"events", "--state", "PENDING_APPROVAL,REJECTED"})["items"];
  CHECK(into == by_approval);

  // Split at the plan's creation: what came before and after make up the whole log.
  const std::string created_at = of_plan[0]["at"];
  const Json since = runJson(live, {"events", "--since", created_at})["items"];
  const Json until = runJson(live, {"events", "--until", created_at})["items"];
  CHECK(since.size() + until.size() == all.size());
  for (const Json& event : since) CHECK(event["at"].get<std::string>() >= created_at);
  for (const Json& event : until) CHECK(event["at"].get<std::string>() < created_at);
  CHECK(runJson(live, {"events", "--since", "1h"})["items"] == all);
  CHECK(runJson(live, {"events", "--since", "2h", "--until", "1h"})["items"].empty());
  CHECK(runJson(live, {"events", "--plan", kExamplePlan, "--state", "PENDING_APPROVAL", "--actor", "approval",
                       "--since", "30m", "--kind", "operation.*"})["items"] == by_approval);

  // --limit: the first N, and where the next ones start.
  const Json first = runJson(live, {"events", "--limit", "3"});
  REQUIRE(first["items"].size() == 3);
  CHECK(first["items"][0] == all[0]);
  const int64_t next = first["next_after"];
  CHECK(next == all[2]["seq"]);
  CliRun table = live.run({"events", "--limit", "3"});
  REQUIRE(table.code == 0);
  CHECK(contains(table.out, "Total: 3\n"));
  CHECK(table.out.ends_with("More follow: --after " + std::to_string(next) + "\n"));
  const Json rest = runJson(live, {"events", "--after", std::to_string(next), "--limit", "1000"});
  CHECK(rest["items"].size() == all.size() - 3);
  CHECK_FALSE(rest.contains("next_after"));
}

TEST_CASE("cli: operations list takes --actor, --since, --until and --limit with its other filters") {
  LiveServer live;
  const int64_t waiting = recordActivity(live);
  const Json waits = runJson(live, {"operations", "list", "--actor", kDeployer, "--state", "PENDING_APPROVAL", "--plan",
                                    kExamplePlan, "--since", "1h"})["items"];
  REQUIRE(waits.size() == 1);
  CHECK(waits[0]["metadata"]["id"] == waiting);
  CHECK(runJson(live, {"operations", "list", "--actor", "nobody"})["items"].empty());
  CHECK(runJson(live, {"operations", "list", "--since", "10m", "--plan", kExamplePlan})["items"].size() == 3);
  CHECK(runJson(live, {"operations", "list", "--until", "10m"})["items"].empty());

  const Json two = runJson(live, {"operations", "list", "--limit", "2"});
  REQUIRE(two["items"].size() == 2);
  const Json last = runJson(live, {"operations", "list", "--after", two["next_after"].dump()});
  REQUIRE(last["items"].size() == 1);
  CHECK(last["items"][0]["metadata"]["id"] > two["items"][1]["metadata"]["id"]);
  CHECK(live.run({"operations", "list", "--limit", "2"})
            .out.ends_with("More follow: --after " + two["next_after"].dump() + "\n"));
}

TEST_CASE("cli: events and operations list refuse bad filter values naming the flag, before asking the host") {
  LiveServer live;
  for (const auto& [args, flag, value] : std::vector<std::tuple<std::vector<std::string>, std::string, std::string>>{
           {{"events", "--since", "yesterday"}, "--since", "'yesterday'"},
           {{"events", "--until", "2026-11-21 12:00"}, "--until", "'2026-11-21 12:00'"},
           {{"events", "--since", "0d"}, "--since", "'0d'"},
           {{"events", "--state", "DONE"}, "--state", "'DONE'"},
           {{"events", "--state", "FAILED,Paused"}, "--state", "'Paused'"},
           {{"events", "--limit", "0"}, "--limit", "'0'"},
           {{"operations", "list", "--state", "PENDING,PAUSED"}, "--state", "'PAUSED'"},
           {{"operations", "list", "--since", "5x"}, "--since", "'5x'"},
           {{"operations", "list", "--limit", "many"}, "--limit", "'many'"}}) {
    const auto& asked = args;  // clang captures no structured binding
    CAPTURE(asked);
    CliRun run = live.run(args);
    CHECK(run.code == 2);
    CHECK_MESSAGE(run.err.starts_with("error: " + flag + ": " + value + " is not "), run.err);
  }
  CliRun following = live.run({"events", "-f", "--until", "1h"});
  CHECK(following.code == 2);
  CHECK(contains(following.err, "--until"));
  CHECK(live.run({"events", "-f", "--limit", "5"}).code == 2);
}

TEST_CASE("cli: the kind events --help gives as an example is one the host writes") {
  LiveServer live;
  const int64_t waiting = recordActivity(live);
  CliRun help = runCli({"events", "--help"});
  REQUIRE(help.code == 0);
  CHECK(contains(help.out, "(operation.approval)"));
  CliRun token = live.run({"token", "create", "--name", "alice", "--role", "approver", "-o", "json"});
  REQUIRE_MESSAGE(token.code == 0, token.err);
  const std::string alice = Json::parse(token.out)["token"];
  CliRun approved = runCli({"operations", "approve", std::to_string(waiting), "--server", live.url, "--token", alice});
  REQUIRE_MESSAGE(approved.code == 0, approved.err);
  const Json approvals = runJson(live, {"events", "--kind", "operation.approval"})["items"];
  REQUIRE(approvals.size() == 1);
  CHECK(approvals[0]["actor"] == "alice");
}
