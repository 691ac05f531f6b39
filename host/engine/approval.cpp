#include "host/engine/approval.h"

#include <algorithm>

#include "host/engine/policy_data_source.h"
#include "host/model/holds.h"
#include "host/model/states.h"
#include "host/sched/scheduler.h"

namespace tide::engine {
namespace {

// A RESTART of an instance that runs nowhere, and an UPDATE of an ACTIVE one that runs
// nowhere (its process died after the operation was asked for), start it on a placement of
// its own, as a CREATE would. A STOPPED instance stays stopped: its UPDATE fails.
bool needsPlacement(const InstanceView& view, const model::Operation& op) {
  if (op.type == model::OperationType::kCreate || op.type == model::OperationType::kRelocate) return true;
  if (op.type == model::OperationType::kUpdate) return !view.active && view.meta.state == model::MetaState::kActive;
  return op.type == model::OperationType::kRestart && !view.active;
}

Json coordinatesList(const Json& by_payload) {
  Json out = Json::array();
  if (!by_payload.is_object()) return out;
  for (const auto& [payload, coordinates] : by_payload.items()) {
    out.push_back(Json{{"payload_name", payload}, {"coordinates", coordinates}});
  }
  return out;
}

// The deployment whose plan an operation is judged and placed by: the one it rolls out
// (its intent), else the one its instance belongs to.
const std::string& deploymentOf(const World& world, const InstanceView* view, const model::Operation& op) {
  if (world.deployment(op.plan, op.intent) != nullptr || view == nullptr) return op.intent;
  return view->meta.deployment_id;
}

}  // namespace

Json targetCoordinates(const World& world, const InstanceView& view, const model::Operation& op) {
  if (op.type == model::OperationType::kCreate || op.type == model::OperationType::kUpdate) {
    if (const auto* d = world.deployment(op.plan, op.intent)) return coordinatesOf(*d);
  }
  if (view.active && op.type != model::OperationType::kCreate) return view.active->coordinates;
  if (const auto* newest = view.newest();
      newest && op.type != model::OperationType::kCreate && op.type != model::OperationType::kUpdate) {
    return newest->coordinates;
  }
  if (const auto* d = world.deployment(op.plan, view.meta.deployment_id)) return coordinatesOf(*d);
  return Json::object();
}

ApprovalStage::ApprovalStage(ledger::Ledger& ledger, lua::PolicyEngine& policies, const Clock& clock,
                             ApprovalOptions options)
    : ledger_(ledger), policies_(policies), clock_(clock), options_(std::move(options)) {}

namespace {

// op.plan in the snapshot policies see.
Json planSnapshot(const model::Plan& p) {
  Json plan{{"name", p.name}, {"namespace", p.ns}, {"service_name", p.service_name}};
  if (!p.approval_policies.empty()) plan["approval"] = Json{{"policies", p.approval_policies}};
  return plan;
}

}  // namespace

Json ApprovalStage::opSnapshot(const World& world, const model::Operation& op, const std::string& node) {
  Json plan = Json::object();
  auto v = world.instances.find(op.meta_instance);
  const InstanceView* view = v == world.instances.end() ? nullptr : &v->second;
  if (const model::Plan* deployed = world.planAsDeployed(op.plan, deploymentOf(world, view, op))) {
    plan = planSnapshot(*deployed);
  }
  // A person's operation ("user"), a node drain's ("drain") or a lost node's replacement
  // ("unreachable") serves no deployment.
  const bool for_deployment = op.intent != "user" && op.intent != "drain" && op.intent != "unreachable";
  Json deployment{
      {"id", for_deployment ? op.intent : ""}, {"old_coordinates", Json::array()}, {"new_coordinates", Json::array()}};
  if (view != nullptr) {
    if (view->active) deployment["old_coordinates"] = coordinatesList(view->active->coordinates);
    deployment["new_coordinates"] = coordinatesList(op.target.value("coordinates", targetCoordinates(world, *view, op)));
  }
  Json node_json{{"name", node}, {"update_domain", ""}, {"labels", Json::object()}};
  if (auto n = world.node_by_name.find(node); n != world.node_by_name.end()) {
    node_json["update_domain"] = n->second->update_domain;
    node_json["labels"] = n->second->labels;
  }
  return Json{{"id", op.meta.id},
              {"type", op.type},
              {"intent", op.intent},
              {"requested_by", op.requested_by},
              {"meta_instance", op.meta_instance},
              {"attempt", op.attempts + 1},
              {"plan", plan},
              {"deployment", deployment},
              {"node", node_json}};
}

Json previewOpSnapshot(const model::Plan& plan, const model::Deployment* current, const model::Deployment& next,
                       model::OperationType type, const std::string& requested_by) {
  Json deployment{{"id", next.deployment_id},
                  {"old_coordinates", current != nullptr && type != model::OperationType::kCreate
                                          ? coordinatesList(coordinatesOf(*current))
                                          : Json::array()},
                  {"new_coordinates", coordinatesList(coordinatesOf(next))}};
  return Json{{"id", 0},
              {"type", type},
              {"intent", next.deployment_id},
              {"requested_by", requested_by},
              {"meta_instance", ""},
              {"attempt", 1},
              {"plan", planSnapshot(model::planAsDeployed(plan, next))},
              {"deployment", deployment},
              {"node", Json{{"name", ""}, {"update_domain", ""}, {"labels", Json::object()}}}};
}

const std::vector<std::string>& ApprovalStage::otherVersions(const World& world, const std::string& plan,
                                                             const std::string& deployment) {
  auto [it, added] = other_versions_.try_emplace({plan, deployment});
  if (added) {
    for (const auto* other : world.instancesOf(plan)) {
      if (other->meta.deployment_id != deployment) it->second.push_back(other->meta.name);
    }
  }
  return it->second;
}

Status ApprovalStage::namingMissingCapabilities(const World& world, const model::Plan& plan,
                                                const Status& unplaceable) {
  if (!node_capabilities_) {
    node_capabilities_.emplace();
    for (const auto& node : world.nodes) node_capabilities_->insert(node.capabilities.begin(), node.capabilities.end());
  }
  std::vector<std::string> missing;
  for (const auto& rule : plan.matching_capabilities) {
    if (rule.comparator == "NOT_IN") continue;
    for (const auto& name : rule.names) {
      if (!node_capabilities_->count(name) && std::find(missing.begin(), missing.end(), name) == missing.end()) {
        missing.push_back(name);
      }
    }
  }
  if (missing.empty()) return unplaceable;
  std::string names;
  for (const auto& name : missing) names += (names.empty() ? "" : ", ") + name;
  return Status(unplaceable.code(),
                "no node has " + std::string(missing.size() == 1 ? "capability " : "capabilities ") + names + "; " +
                    unplaceable.message(),
                unplaceable.details());
}

int ApprovalStage::pass(const World& world, const UnreachableNodes& unreachable) {
  other_versions_.clear();
  node_capabilities_.reset();
  releaseUnused(world);
  int changed = 0;
  if (const uint64_t version = policies_.currentVersion(); version != reevaluation_.done_version) {
    changed += reevaluateWaiting(world, version);
  }
  int decided = 0;
  std::optional<sched::ClusterSnapshot> snapshot;
  // From after where the last pass stopped to the end, then from the start up to there.
  const auto resume = world.operating.upper_bound(resume_after_);
  std::string stopped_after;
  auto visit = [&](auto first, auto last) {
    for (auto it = first; it != last && stopped_after.empty(); ++it) {
      const InstanceView& view = world.instances.at(*it);
      if (view.unfinished->state != model::OperationState::kPending) continue;
      if (!snapshot) snapshot = world.schedulerSnapshot(unreachable.nodes());
      if (decide(world, *snapshot, view, *view.unfinished).isOk()) ++changed;
      if (++decided >= options_.max_per_pass) stopped_after = *it;
    }
  };
  visit(resume, world.operating.end());
  visit(world.operating.begin(), resume);
  resume_after_ = stopped_after;
  return changed;
}

Result<std::string> ApprovalStage::reserve(const World& world, sched::ClusterSnapshot& snapshot,
                                           const InstanceView& view, model::Operation& op) {
  const Json coordinates = targetCoordinates(world, view, op);
  if (!op.target.contains("coordinates") || (view.active && !op.target.contains("from_runtime_instance"))) {
    ledger::OperationUpdate update;
    Json target = op.target.is_object() ? op.target : Json::object();
    target["coordinates"] = coordinates;
    if (view.active && op.type == model::OperationType::kRelocate)
      target["from_runtime_instance"] = view.active->meta.id;
    update.target = target;
    TIDE_ASSIGN_OR_RETURN(op, ledger_.operations().updateOperation(op.meta.id, update, options_.actor));
  }
  if (!needsPlacement(view, op)) {
    if (!view.active) return std::string();
    if (op.type == model::OperationType::kUpdate) TIDE_RETURN_IF_ERROR(resizeInPlace(world, snapshot, view, op));
    return view.active->node;
  }
  if (op.target.contains("runtime_instance")) return op.target.value("node", "");

  const model::Plan* deployed = world.planAsDeployed(op.plan, deploymentOf(world, &view, op));
  if (deployed == nullptr) return Status::notFound("plan '" + op.plan + "' not found");
  const model::Plan& plan = *deployed;
  sched::PlacementOptions placement_options;
  placement_options.max_per_node = plan.placement.max_per_node;
  placement_options.bin_pack = plan.placement.bin_pack;
  if (op.type == model::OperationType::kRelocate && view.active)
    placement_options.exclude_nodes.push_back(view.active->node);
  if (op.type == model::OperationType::kCreate && op.intent != "user") {
    // Anti-affinity between versions where possible: a canary lands away from the nodes
    // of the version it is compared with, so a bad node does not look like a bad version.
    placement_options.avoid_nodes_of = otherVersions(world, op.plan, op.intent);
  }
  auto placements = sched::Scheduler(snapshot).place(plan, 1, placement_options);
  if (!placements.isOk()) return namingMissingCapabilities(world, plan, placements.status());
  const sched::Placement& placement = placements->front();

  model::RuntimeInstance instance;
  instance.meta_instance = view.meta.name;
  instance.node = placement.node;
  instance.is_active = op.type != model::OperationType::kRelocate || !view.active;  // a relocation starts passive
  instance.coordinates = coordinates;
  instance.reservation = placement.reservation;
  instance.volumes = Json::array();
  int index = 0;
  for (const auto& v : placement.volumes) {
    instance.volumes.push_back(Json{{"id", view.meta.name + "-" + std::to_string(index++)},
                                    {"payload_name", v.payload_name},
                                    {"mount_path", v.mount_path},
                                    {"storage_class", v.storage_class},
                                    {"capacity_gib", v.capacity_gib},
                                    {"local_volume", v.local_volume}});
  }
  TIDE_ASSIGN_OR_RETURN(auto reserved, ledger_.instances().reserveForOperation(op.meta.id, instance, options_.actor));
  // Cannot fail: the scheduler placed it on this snapshot just now.
  (void)snapshot.commit(plan.name, view.meta.name, placement);
  op.target["runtime_instance"] = reserved.meta.id;
  op.target["node"] = reserved.node;
  return reserved.node;
}

Status ApprovalStage::resizeInPlace(const World& world, sched::ClusterSnapshot& snapshot, const InstanceView& view,
                                    model::Operation& op) {
  if (op.target.contains("resize")) return Status::ok();
  const model::Plan* deployed = world.planAsDeployed(op.plan, deploymentOf(world, &view, op));
  if (deployed == nullptr) return Status::ok();
  const model::RuntimeInstance& active = *view.active;
  const model::Resources to = sched::instanceResources(*deployed);
  if (sched::sameResources(active.reservation, to)) return Status::ok();
  TIDE_RETURN_IF_ERROR(sched::Scheduler(snapshot).checkResize(active.node, active.reservation, to));
  TIDE_ASSIGN_OR_RETURN(op, ledger_.operations().resizeForOperation(op.meta.id, to, options_.actor));
  // Cannot fail: checkResize() passed on this snapshot just now.
  (void)snapshot.commitResize(active.node, active.reservation, op.target["resize"]["held"].get<model::Resources>());
  return Status::ok();
}

Status ApprovalStage::decide(const World& world, sched::ClusterSnapshot& snapshot, const InstanceView& view,
                             const model::Operation& pending) {
  model::Operation op = pending;
  auto node = reserve(world, snapshot, view, op);
  if (!node.isOk()) {
    // Not placeable now: say why on the operation (once per change) and try next pass.
    const std::string message = model::placementWaitMessage(node.status().message());
    if (op.message != message) {
      ledger::OperationUpdate update;
      update.message = message;
      // Best effort: an unwritten message still differs next pass, which writes both again.
      (void)ledger_.operations().updateOperation(op.meta.id, update, options_.actor);
      (void)ledger_.audit().appendEvent("operation.unschedulable", "operation/" + std::to_string(op.meta.id),
                                Json{{"instance", op.meta_instance}, {"message", node.status().message()}},
                                options_.actor);
    }
    return node.status();
  }

  TIDE_ASSIGN_OR_RETURN(const lua::Evaluation evaluation, evaluate(world, op, node.value()));
  return conclude(world, op, evaluation, {}, std::nullopt).status();
}

Result<lua::Evaluation> ApprovalStage::evaluate(const World& world, const model::Operation& op,
                                                const std::string& node) {
  LedgerPolicyDataSource data(ledger_, clock_, op.meta.id);
  lua::Evaluation evaluation = policies_.evaluate(opSnapshot(world, op, node), data);
  std::vector<model::Decision> decisions;
  for (auto& d : evaluation.decisions) {
    d.record.operation_id = op.meta.id;
    decisions.push_back(d.record);
  }
  if (Status recorded = ledger_.operations().recordDecisions(decisions); !recorded.isOk()) {
    // Best effort: the event may fail for the same reason; the operation stays undecided
    // either way, and the next pass evaluates it again.
    (void)ledger_.audit().appendEvent("operation.decision_unrecorded", "operation/" + std::to_string(op.meta.id),
                              Json{{"instance", op.meta_instance},
                                   {"outcome", lua::outcomeName(evaluation.outcome)},
                                   {"error", recorded.message()}},
                              options_.actor);
    return recorded;
  }
  return evaluation;
}

Result<bool> ApprovalStage::conclude(const World& world, const model::Operation& op,
                                     const lua::Evaluation& evaluation, std::vector<model::GivenApproval> given,
                                     ledger::Generation generation) {
  Json decision{{"outcome", lua::outcomeName(evaluation.outcome)},
                {"summary", evaluation.summary},
                {"overridable", evaluation.overridable},
                {"script_set_version", evaluation.script_set_version}};
  model::OperationState state = lua::outcomeState(evaluation.outcome);
  std::string approved_by;
  if (evaluation.outcome == lua::Outcome::kPendingApproval) {
    // When it began to wait for a person (/metrics: tide_operations_waiting_approval_oldest_seconds):
    // kept across re-evaluations, so a script reload does not make an old wait look new.
    const Json kept = op.state == model::OperationState::kPendingApproval && op.decision.is_object()
                          ? op.decision.value("waiting_since", Json())
                          : Json();
    decision["waiting_since"] = kept.is_string() ? kept : Json(formatTimestamp(clock_.now()));
    model::ApprovalCase waiting{
        op.meta.id, op.requested_by, {evaluation.approvals, evaluation.overridable, std::move(given)}, 1, false, {}};
    // The plan as the operation's deployment was made with it, like everything else it is judged by.
    auto v = world.instances.find(op.meta_instance);
    const InstanceView* view = v == world.instances.end() ? nullptr : &v->second;
    if (const model::Plan* deployed = world.planAsDeployed(op.plan, deploymentOf(world, view, op))) {
      waiting.plan_min_approvals = deployed->approval_min_approvals;
    }
    const model::ApprovalRuling ruling = model::judgeApproval(waiting, std::nullopt);
    decision["approvals"] = model::approvalsJson(ruling.after);
    // What people approved before the policies changed still counts, and may be enough.
    if (!ruling.after.given.empty() && ruling.complete) {
      state = model::OperationState::kApproved;
      approved_by = ruling.approved_by;
    }
  } else if (evaluation.outcome == lua::Outcome::kApproved) {
    for (const auto& d : evaluation.decisions) {
      if (d.record.verdict == "approve" && d.level != "advisory") {
        approved_by += (approved_by.empty() ? "policy:" : ",policy:") + d.record.policy;
      }
    }
  } else {
    approved_by = "policy";
  }
  ledger::OperationUpdate update;
  update.generation = generation;
  update.decision = std::move(decision);
  TIDE_RETURN_IF_ERROR(ledger_.operations().updateOperation(op.meta.id, update, options_.actor).status());
  if (state == op.state) return false;
  TIDE_RETURN_IF_ERROR(
      ledger_.operations().setOperationState(op.meta.id, state, std::nullopt, options_.actor, evaluation.summary, approved_by)
          .status());
  if (state == model::OperationState::kPendingApproval) giveRolloutApprovals(world, op);
  return true;
}

void ApprovalStage::giveRolloutApprovals(const World& world, const model::Operation& op) {
  if (world.deployment(op.plan, op.intent) == nullptr) return;  // a person's, a drain's: no rollout
  // Read now, not from the pass's snapshot: a rollout approval given since is either read
  // here or, given after this operation came to wait, finds it waiting (the API approves
  // those at once).
  Result<model::Deployment> deployment = ledger_.plans().getDeployment(op.plan, op.intent);
  if (!deployment.isOk() || !model::inRolloutOf(op, *deployment)) return;
  for (const model::GivenApproval& approval : model::rolloutApprovals(deployment->signals)) {
    Result<model::Operation> given =
        ledger_.operations().addApproval(op.meta.id, std::nullopt, model::fromRolloutApproval(approval));
    if (given.isOk()) {
      if (given->state != model::OperationState::kPendingApproval) return;  // approved
      continue;
    }
    // Best effort: the operation waits for people either way; this says why it still does.
    (void)ledger_.audit().appendEvent("operation.rollout_approval_refused", "operation/" + std::to_string(op.meta.id),
                              Json{{"instance", op.meta_instance},
                                   {"deployment", op.intent},
                                   {"actor", approval.actor},
                                   {"error", given.status().message()}},
                              options_.actor);
  }
}

int ApprovalStage::reevaluateWaiting(const World& world, uint64_t script_set_version) {
  int changed = 0;
  int evaluated = 0;
  bool more = false;    // undecided operations beyond this pass's chunk
  bool failed = false;  // a decision that could not be written: tried again next pass
  std::string stopped_after;
  auto undecided = [&](const model::Operation& op) {
    return op.state == model::OperationState::kPendingApproval &&
           !(op.decision.is_object() && op.decision.value("script_set_version", uint64_t{0}) == script_set_version);
  };
  // From after where the last pass stopped to the end, then from the start up to there, as
  // pass() walks the PENDING ones.
  const auto resume = world.operating.upper_bound(reevaluation_.resume_after);
  auto visit = [&](auto first, auto last) {
    for (auto it = first; it != last; ++it) {
      const InstanceView& view = world.instances.at(*it);
      const model::Operation& op = *view.unfinished;
      if (!undecided(op)) continue;
      if (!stopped_after.empty()) {
        more = true;
        return;
      }
      const std::string node = op.target.contains("runtime_instance") ? op.target.value("node", "")
                               : view.active                         ? view.active->node
                                                                     : "";
      const Result<lua::Evaluation> evaluated_op = evaluate(world, op, node);
      if (++evaluated >= options_.max_per_pass) stopped_after = *it;
      if (!evaluated_op.isOk()) {
        failed = true;
        continue;
      }
      const lua::Evaluation& evaluation = *evaluated_op;
      // With the generation the pass read: an approval given meanwhile wins, and a later
      // pass evaluates the operation again with it.
      const Result<bool> moved =
          conclude(world, op, evaluation, model::approvalStateOf(op.decision).given, op.meta.generation);
      if (!moved.isOk()) {
        failed = true;
        continue;
      }
      // Best effort: the decision itself is written; this event only announces it.
      (void)ledger_.audit().appendEvent("operation.reevaluated", "operation/" + std::to_string(op.meta.id),
                                Json{{"instance", op.meta_instance},
                                     {"script_set_version", script_set_version},
                                     {"outcome", lua::outcomeName(evaluation.outcome)},
                                     {"summary", evaluation.summary}},
                                options_.actor);
      if (*moved) ++changed;
    }
  };
  visit(resume, world.operating.end());
  if (!more) visit(world.operating.begin(), resume);
  reevaluation_.resume_after = stopped_after;
  reevaluation_.pending = more;
  if (!more && !failed) reevaluation_.done_version = script_set_version;
  return changed;
}

void ApprovalStage::releaseUnused(const World& world) {
  // A PENDING runtime instance is a reservation held for the unfinished operation whose
  // target names it. One that no unfinished operation names (its operation was rejected,
  // cancelled or superseded) will never be used: give the resources back.
  for (const std::string& name : world.reserving) {
    const InstanceView& view = world.instances.at(name);
    int64_t wanted = 0;
    if (view.unfinished && view.unfinished->target.contains("runtime_instance")) {
      wanted = view.unfinished->target["runtime_instance"].get<int64_t>();
    }
    auto release = [&](const model::RuntimeInstance& r) {
      if (r.state != model::RuntimeState::kPending || r.meta.id == wanted) return;
      // With the generation the pass read: one an operation claimed since is left alone.
      // Best effort: one not released now is still unclaimed next pass, which tries again.
      (void)ledger_.instances().setRuntimeInstanceState(r.meta.id, model::RuntimeState::kTerminated, r.meta.generation,
                                            options_.actor, "reservation released: no operation will use it");
    };
    if (view.active) release(*view.active);
    for (const auto& p : view.passive) release(p);
  }
}

}  // namespace tide::engine
