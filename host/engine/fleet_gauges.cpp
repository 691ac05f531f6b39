#include "host/engine/fleet_gauges.h"

#include "host/engine/world.h"
#include "host/model/states.h"

namespace tide::engine {
namespace {

std::string rolloutOf(model::DeploymentState deployment_state) {
  using enum model::DeploymentState;
  if (deployment_state == kPending || deployment_state == kInProgress) return "in_progress";
  if (deployment_state == kPaused) return "held";
  if (deployment_state == kFailed) return "failed";
  if (deployment_state == kRolledBack) return "rolled_back";
  return "";
}

std::optional<TimePoint> timeOf(const std::string& timestamp) {
  auto parsed = parseTimestamp(timestamp);
  if (!parsed.isOk()) return std::nullopt;
  return parsed.value();
}

}  // namespace

std::optional<TimePoint> waitingSince(const model::Operation& op) {
  if (op.decision.is_object()) {
    const Json& since = op.decision.value("waiting_since", Json());
    if (since.is_string()) {
      if (auto at = timeOf(since.get<std::string>())) return at;
    }
  }
  return timeOf(op.meta.updated_at);
}

FleetGauges fleetGauges(const World& world) {
  FleetGauges out;
  for (const model::Plan& plan : world.plans) {
    if (plan.state != model::PlanState::kActive) continue;
    PlanGauges& g = out.plans[plan.name];
    g.active = true;
    g.running_instances = world.runningInstances(plan.name);
    if (const model::Deployment* current = world.currentDeployment(plan.name)) {
      g.desired_instances = current->instance_count;
    }
    auto deployments = world.deployments.find(plan.name);
    if (deployments != world.deployments.end() && !deployments->second.empty()) {
      const model::Deployment& newest = deployments->second.back();
      g.rollout = rolloutOf(newest.state);
      if (g.rollout == "held") g.held_since = timeOf(newest.paused_since);
    }
  }
  for (const std::string& name : world.operating) {
    const model::Operation& op = *world.instances.at(name).unfinished;
    if (op.state != model::OperationState::kPendingApproval) continue;
    PlanGauges& g = out.plans[op.plan];
    ++g.waiting_approval;
    const std::optional<TimePoint> since = waitingSince(op);
    if (since && (!g.oldest_waiting_since || *since < *g.oldest_waiting_since)) g.oldest_waiting_since = since;
  }
  return out;
}

}  // namespace tide::engine
