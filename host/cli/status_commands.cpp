// `tide status`: the fleet on one screen, read from the API (docs/api.md): whether the control
// loop runs, the plans, each plan's desired and running instances, the rollouts in flight and
// those held (with why), what waits for a person, the nodes, and the scripts that failed to
// load. It asks one request per list plus GET /v1/status, per plan its deployments, and per
// rollout in flight the plan view that counts its instances.

#include <chrono>
#include <map>

#include "host/cli/commands.h"
#include "host/cli/json_fields.h"
#include "host/cli/rollout_view.h"
#include "host/cli/views.h"
#include "host/model/approvals.h"
#include "host/model/records.h"
#include "host/model/transitions.h"

namespace tide::cli {
namespace {

// {"total": n, "by_state": {STATE: n}} of records with a `state`.
Json countByState(const Json& records) {
  Json by_state = Json::object();
  for (const Json& record : items(records)) {
    const std::string state = text(record, {"state"});
    by_state[state] = by_state.value(state, int64_t{0}) + 1;
  }
  return Json{{"total", items(records).size()}, {"by_state", std::move(by_state)}};
}

// The script a deployment runs: its own strategy's, else its plan's, else the default.
std::string strategyOf(const Json& plan, const Json& deployment) {
  for (const Json* source : {&deployment, &plan}) {
    if (std::string script = text(*source, {"strategy", "script"}); !script.empty()) return script;
  }
  return model::kDefaultStrategy;
}

// Every deployment of every plan whose rollout is not over, as `tide deployment watch -o
// json` describes it (without the time of the look) plus its strategy.
Result<Json> rolloutsInFlight(Session& session, const Json& plans) {
  Json rollouts = Json::array();
  for (const Json& plan : items(plans)) {
    const std::string name = text(plan, {"name"});
    TIDE_ASSIGN_OR_RETURN(Json deployments, session.client.getAll(planPath(name) + "/deployments"));
    Json view;  // read once per plan, when it has a rollout in flight
    for (const Json& deployment : items(deployments["items"])) {
      if (rolloutOver(text(deployment, {"state"}))) continue;
      if (view.is_null()) {
        TIDE_ASSIGN_OR_RETURN(view, session.client.get(planPath(name)));
      }
      Json rollout = watchJson(sampleRollout(view, deployment), std::chrono::system_clock::now());
      rollout.erase("at");
      rollout["strategy"] = strategyOf(plan, deployment);
      rollouts.push_back(std::move(rollout));
    }
  }
  return rollouts;
}

Result<Json> waitingForApproval(Session& session) {
  TIDE_ASSIGN_OR_RETURN(
      Json waiting,
      session.client.getAll("/v1/operations", {{"state", model::toString(model::OperationState::kPendingApproval)}}));
  Json operations = Json::array();
  for (const Json& op : items(waiting["items"])) {
    const std::string requested_by = text(op, {"requested_by"});
    const Json& decision = at(op, {"decision"});
    operations.push_back(
        Json{{"id", at(op, {"metadata", "id"})},
             {"type", text(op, {"type"})},
             {"meta_instance", text(op, {"meta_instance"})},
             {"plan", text(op, {"plan"})},
             {"requested_by", requested_by},
             {"approvals", model::describeApprovals(decision, requested_by)},
             {"still_needed", model::approvalsStillNeeded(model::approvalStateOf(decision), requested_by)},
             {"message", text(op, {"message"})}});
  }
  return operations;
}

// The nodes by state, and those whose agent the host has not heard from in time.
Result<Json> nodesSummary(Session& session) {
  TIDE_ASSIGN_OR_RETURN(Json nodes, session.client.getAll("/v1/nodes"));
  Json summary = countByState(nodes["items"]);
  Json unreachable = Json::array();
  for (const Json& node : items(nodes["items"])) {
    if (at(node, {"agent", "reachable"}) == false) unreachable.push_back(text(node, {"name"}));
  }
  summary["unreachable_agents"] = std::move(unreachable);
  return summary;
}

Status showStatus(Session& session) {
  Json status = Json::object();
  TIDE_ASSIGN_OR_RETURN(status["control_loop"], session.client.get("/v1/control"));
  TIDE_ASSIGN_OR_RETURN(Json plans, session.client.getAll("/v1/plans"));
  status["plans"] = countByState(plans["items"]);
  TIDE_ASSIGN_OR_RETURN(Json fleet, session.client.get("/v1/status"));
  status["plan_instances"] = std::move(fleet["plans"]);
  TIDE_ASSIGN_OR_RETURN(status["rollouts"], rolloutsInFlight(session, plans["items"]));
  status["held_rollouts"] = std::move(fleet["held_rollouts"]);
  TIDE_ASSIGN_OR_RETURN(status["waiting_for_approval"], waitingForApproval(session));
  TIDE_ASSIGN_OR_RETURN(status["nodes"], nodesSummary(session));
  status["failed_scripts"] = std::move(fleet["failed_scripts"]);
  session.print(status, printStatus);
  return Status::ok();
}

}  // namespace

void addStatusCommand(CLI::App& app, Verbs& verbs) {
  verbs.add(app, "status",
            "Show the fleet at a glance: control loop alarms, plans (desired and running instances), rollouts in "
            "flight and held ones, operations waiting for approval, nodes, scripts that failed to load",
            showStatus);
}

}  // namespace tide::cli
