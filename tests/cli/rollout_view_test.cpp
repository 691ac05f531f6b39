#include <sstream>

#include <doctest/doctest.h>

#include "host/cli/rollout_view.h"

using namespace tide::cli;

namespace {

tide::TimePoint at(const char* stamp) { return tide::parseTimestamp(stamp).value(); }

const tide::TimePoint kNow = at("2026-11-21T12:00:00Z");

Json canaryPlan() {
  return Json::parse(R"({"name": "web", "strategy": {"script": "canary", "params": {"steps": [10, 50, 100]}}})");
}

// A canary at its second step, held by alice for two minutes now after a one-minute pause
// earlier, with bob's promotion not yet consumed.
Json pausedCanary() {
  return Json::parse(R"({
    "metadata": {"id": 12, "created_at": "2026-11-21T11:49:00.000Z", "updated_at": "2026-11-21T11:59:00.000Z"},
    "plan": "web", "deployment_id": "deployment-2", "instance_count": 2,
    "strategy": {"params": {"pause_seconds": 0}},
    "rollout_state": {"step": 2, "steps": [10, 50, 100], "weights": {"new": 50, "old": 50},
                      "waiting_for": "promotion"},
    "signals": {"hold": {"by": "alice", "at": "2026-11-21T11:58:00.000Z", "reason": "checking dashboards"},
                "promote": {"by": "bob", "at": "2026-11-21T11:59:00.000Z"}},
    "state": "PAUSED", "message": "paused by alice",
    "started_at": "2026-11-21T11:50:00.000Z", "completed_at": "",
    "paused_seconds": 60, "paused_since": "2026-11-21T11:58:00.000Z"
  })");
}

// The plan view's summary around pausedCanary(): one new instance serving, two old ones of
// which one is not healthy (instances deleted or leaving are not counted by the host).
Json canaryView() {
  return Json::parse(R"({
    "deployments": [],
    "instance_summary": {"by_deployment": {
      "deployment-2": {"total": 1, "running": 1, "pending": 0, "failed": 0, "ready": 1},
      "deployment-1": {"total": 2, "running": 2, "pending": 0, "failed": 0, "ready": 1}}},
    "instances": []
  })");
}

std::string rolloutSection(const Json& plan, const Json& deployment) {
  std::ostringstream out;
  printRolloutSection(out, plan, deployment, kNow);
  return out.str();
}

}  // namespace

TEST_CASE("cli: the Rollout section shows step, weights, the hold, times and pending signals") {
  CHECK(rolloutSection(canaryPlan(), pausedCanary()) ==
        "Rollout\n"
        "    Deployment ID:        deployment-2\n"
        "    Strategy:             canary\n"
        "    Strategy Params:      {\"pause_seconds\":0,\"steps\":[10,50,100]}\n"
        "    State:                PAUSED\n"
        "    Message:              paused by alice\n"
        "    Step:                 2/3\n"
        "    Weights:              new 50 / old 50\n"
        "    Waiting For:          promotion\n"
        "    Paused By:            alice at 2026-11-21T11:58:00.000Z: checking dashboards\n"
        "    Progress Time:        7m00s\n"
        "    Paused Time:          3m00s\n"
        "    Pending Signals:      promote by bob at 2026-11-21T11:59:00.000Z\n");
}

TEST_CASE("cli: the Rollout section of a rollout a hook holds names the hold, not as a pending signal") {
  Json deployment = pausedCanary();
  deployment["signals"] = Json::parse(R"({"hook_hold": {"operation": 41, "kind": "veto",
    "message": "held by hook freeze: change freeze", "since": "2026-11-21T11:58:00.000Z"}})");
  deployment["message"] = "held by hook freeze: change freeze";
  const std::string section = rolloutSection(canaryPlan(), deployment);
  CHECK(section.find("    Message:              held by hook freeze: change freeze\n") != std::string::npos);
  const std::string hold = "    Held By Hook:         held by hook freeze: change freeze (since 2026-11-21T11:58:00.000Z)\n";
  CHECK(section.find(hold) != std::string::npos);
  CHECK(section.find("Pending Signals") == std::string::npos);
  CHECK(section.find("Paused By") == std::string::npos);
}

TEST_CASE("cli: the Rollout section of a restored deployment measures progress to its completion") {
  Json deployment = Json::parse(R"({
    "metadata": {"id": 3, "updated_at": "2026-11-21T11:59:00.000Z"},
    "plan": "web", "deployment_id": "deployment-1",
    "strategy": {"script": "blue_green"}, "rollout_state": {},
    "signals": {"restore": {"from": "deployment-2", "kind": "rollback", "reason": "error rate 5%",
                            "at": "2026-11-21T11:40:00.000Z"}},
    "state": "COMPLETED", "message": "rolled back: error rate 5%",
    "started_at": "2026-11-21T11:00:00.000Z", "completed_at": "2026-11-21T11:45:30.000Z",
    "paused_seconds": 0, "paused_since": ""
  })");
  CHECK(rolloutSection(canaryPlan(), deployment) ==
        "Rollout\n"
        "    Deployment ID:        deployment-1\n"
        "    Strategy:             blue_green\n"
        "    Strategy Params:      {\"steps\":[10,50,100]}\n"
        "    State:                COMPLETED\n"
        "    Message:              rolled back: error rate 5%\n"
        "    Progress Time:        45m30s\n"
        "    Paused Time:          0s\n"
        "    Restored:             after deployment-2 was rolled back at 2026-11-21T11:40:00.000Z: error rate 5%\n");

  // A failed rollout has no completion time: it stopped when its record last changed. What
  // its strategy last waited for is history, not something to wait for.
  deployment["state"] = "FAILED";
  deployment["completed_at"] = "";
  deployment["rollout_state"] = {{"step", 1}, {"steps", 3}, {"waiting_for", "promotion"}};
  std::string failed = rolloutSection(Json::object(), deployment);
  CHECK(failed.find("    Step:                 1/3\n") != std::string::npos);
  CHECK(failed.find("Waiting For") == std::string::npos);
  CHECK(failed.find("    Progress Time:        59m00s\n") != std::string::npos);
}

TEST_CASE("cli: the Rollout section names the strategy the rollout runs with, not the plan's since") {
  // The plan was updated to other steps while deployment-2 rolls out with its own.
  Json deployment = pausedCanary();
  deployment["strategy_in_force"] = Json::parse(R"({"script": "canary", "params": {"steps": [25, 100]}})");
  Json plan = canaryPlan();
  plan["strategy"] = Json::parse(R"({"script": "rolling", "params": {"max_surge": 2}})");
  const std::string section = rolloutSection(plan, deployment);
  CHECK(section.find("    Strategy:             canary\n") != std::string::npos);
  CHECK(section.find("    Strategy Params:      {\"steps\":[25,100]}\n") != std::string::npos);
}

TEST_CASE("cli: the newest deployment is the one with the highest id") {
  Json deployments = Json::parse(R"([
    {"metadata": {"id": 3}, "deployment_id": "deployment-1"},
    {"metadata": {"id": 12}, "deployment_id": "deployment-3"},
    {"metadata": {"id": 7}, "deployment_id": "deployment-2"}
  ])");
  REQUIRE(newestDeployment(deployments) != nullptr);
  CHECK(newestDeployment(deployments)->at("deployment_id") == "deployment-3");
  CHECK(newestDeployment(Json::array()) == nullptr);
  CHECK(newestDeployment(Json()) == nullptr);
}

TEST_CASE("cli: durations read as seconds, minutes and hours") {
  CHECK(formatDuration(0) == "0s");
  CHECK(formatDuration(59.9) == "59s");
  CHECK(formatDuration(125) == "2m05s");
  CHECK(formatDuration(3723) == "1h02m03s");
  CHECK(formatDuration(-5) == "0s");
}

TEST_CASE("cli: a watch line carries state, step, weights, ready counts and what the rollout waits for") {
  RolloutSample sample = sampleRollout(canaryView(), pausedCanary());
  CHECK(sample.new_instances == InstanceCount{1, 1});
  CHECK(sample.old_instances == InstanceCount{2, 1});
  CHECK(formatWatchLine(sample, kNow) ==
        "2026-11-21T12:00:00Z  PAUSED  step 2/3  weights new 50 / old 50  new 1/1 ready, old 1/2 ready  "
        "paused by alice; waiting for: promotion");

  Json json = watchJson(sample, kNow);
  CHECK(json["at"] == "2026-11-21T12:00:00.000Z");
  CHECK(json["plan"] == "web");
  CHECK(json["deployment_id"] == "deployment-2");
  CHECK(json["state"] == "PAUSED");
  CHECK(json["step"] == 2);
  CHECK(json["steps"] == 3);
  CHECK(json["weights"] == Json{{"new", 50}, {"old", 50}});
  CHECK(json["waiting_for"] == "promotion");
  CHECK(json["instances"] == Json::parse(R"({"new": {"total": 1, "ready": 1}, "old": {"total": 2, "ready": 1}})"));

  // A strategy that keeps no steps or weights (rolling) gets a shorter line.
  Json rolling = Json::parse(R"({"plan": "web", "deployment_id": "deployment-3", "rollout_state":
                                 {"domain": "ud-1", "waiting_for": "update domain 'ud-1' to be replaced"},
                                 "state": "IN_PROGRESS", "message": ""})");
  RolloutSample plain = sampleRollout(canaryView(), rolling);
  CHECK(formatWatchLine(plain, kNow) ==
        "2026-11-21T12:00:00Z  IN_PROGRESS  new 0/0 ready, old 2/3 ready  "
        "waiting for: update domain 'ud-1' to be replaced");
  CHECK(watchJson(plain, kNow)["step"].is_null());
  CHECK(watchJson(plain, kNow)["waiting_for"] == "update domain 'ud-1' to be replaced");
}

TEST_CASE("cli: watch reports a change of state, step, weights or readiness but not of the clock") {
  const RolloutSample before = sampleRollout(canaryView(), pausedCanary());

  Json later = pausedCanary();
  later["paused_seconds"] = 90;  // time passing is not a change worth a line
  later["metadata"]["updated_at"] = "2026-11-21T12:00:30.000Z";
  CHECK(sampleRollout(canaryView(), later) == before);

  Json promoted = pausedCanary();
  promoted["rollout_state"]["weights"] = {{"new", 100}, {"old", 0}};
  CHECK(sampleRollout(canaryView(), promoted) != before);

  Json stepped = pausedCanary();
  stepped["rollout_state"]["step"] = 3;
  CHECK(sampleRollout(canaryView(), stepped) != before);

  Json resumed = pausedCanary();
  resumed["state"] = "IN_PROGRESS";
  CHECK(sampleRollout(canaryView(), resumed) != before);

  Json healthier = canaryView();
  healthier["instance_summary"]["by_deployment"]["deployment-1"]["ready"] = 2;
  CHECK(sampleRollout(healthier, pausedCanary()) != before);
}

TEST_CASE("cli: the progress line of a watch on a terminal, cut to the terminal's width") {
  const RolloutSample paused = sampleRollout(canaryView(), pausedCanary());
  CHECK(formatProgressLine(paused, 200) ==
        "deployment-2  PAUSED  [##########..........] 1/2 ready  step 2/3  weights new 50 / old 50  old 1/2 ready  "
        "paused by alice; waiting for: promotion");
  CHECK(formatProgressLine(paused, 40) == "deployment-2  PAUSED  [##########......");
  CHECK(redrawProgressLine(paused, 40) == "\rdeployment-2  PAUSED  [##########......\x1b[K");
  // An unknown width (not a terminal's) is taken as 80 columns.
  CHECK(formatProgressLine(paused, 0) == formatProgressLine(paused, 80));
  CHECK(formatProgressLine(paused, 0).size() == 79);

  // A rolling deployment that completed: no step, no weights, no old instances.
  Json completed = Json::parse(R"({"plan": "web", "deployment_id": "dev-1", "instance_count": 3,
                                   "state": "COMPLETED", "message": "3 instances run the new version"})");
  Json view = Json::parse(R"({"instance_summary": {"by_deployment": {"dev-1": {"total": 3, "ready": 3}}}})");
  CHECK(formatProgressLine(sampleRollout(view, completed), 120) ==
        "dev-1  COMPLETED  [####################] 3/3 ready  3 instances run the new version");

  // The server's text cannot move the cursor or break the line, and a cut never splits a character.
  Json failed = Json::parse(R"({"plan": "web", "deployment_id": "dev-1", "instance_count": 1, "state": "FAILED"})");
  failed["message"] = "bad\x1b[31m\nthing";
  CHECK(formatProgressLine(sampleRollout(Json::object(), failed), 120) ==
        "dev-1  FAILED  [....................] 0/1 ready  bad thing");
  failed["message"] = "größe";
  CHECK(formatProgressLine(sampleRollout(Json::object(), failed), 53) ==
        "dev-1  FAILED  [....................] 0/1 ready  grö");
}
