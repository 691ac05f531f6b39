#include "host/engine/controller.h"

#include <algorithm>

#include "host/model/holds.h"
#include "host/sched/scheduler.h"

namespace tide::engine {
namespace {

Json operationJson(const OperationSummary& o) {
  Json j{{"id", o.id}, {"type", o.type}, {"state", o.state}, {"intent", o.intent}};
  if (!o.message.empty()) j["message"] = o.message;
  return j;
}

double unixSeconds(const TimePoint& t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

bool restoring(const model::Deployment& d) { return d.signals.is_object() && d.signals.contains("restore"); }

bool held(const model::Deployment& d) { return d.signals.is_object() && d.signals.contains("hold"); }

bool heldForHook(const model::Deployment& d) {
  return d.signals.is_object() && d.signals.contains(model::kHookHoldSignal);
}

// The oldest operation of `d`'s rollout that a runtime hook holds back, or null.
const model::Operation* operationHeldByHook(const World& world, const model::Deployment& d) {
  const model::Operation* oldest = nullptr;
  for (const auto* view : world.instancesOf(d.plan)) {
    const model::Operation* op = view->unfinished.get();
    if (op == nullptr || op->intent != d.deployment_id || model::hookHoldKind(*op).empty()) continue;
    if (oldest == nullptr || op->meta.id < oldest->meta.id) oldest = op;
  }
  return oldest;
}

// The deployment that still wants `view`'s instance running, or null: not when its last
// operation FAILED or was REJECTED (a person decides), nor when its deployment was
// superseded, aborted or rolled back (the current strategy decides, usually removing it).
const model::Deployment* wantingRepair(const World& world, const InstanceView& view) {
  if (view.last &&
      (view.last->state == model::OperationState::kFailed || view.last->state == model::OperationState::kRejected))
    return nullptr;
  const model::Deployment* own = world.deployment(view.meta.plan, view.meta.deployment_id);
  if (!own || (own->state != model::DeploymentState::kCompleted && model::isRolloutOver(own->state))) return nullptr;
  return own;
}

// Seconds between two instants, 0 when either is missing.
double secondsSince(const std::string& from, const TimePoint& now) {
  if (from.empty()) return 0;
  auto at = parseTimestamp(from);
  return at.isOk() ? std::max(0.0, std::chrono::duration<double>(now - *at).count()) : 0;
}

}  // namespace

DeploymentController::DeploymentController(ledger::Ledger& ledger, lua::StrategyEngine& strategies, const Clock& clock,
                                           ControllerOptions options, MetricFetcher* metrics,
                                           TrafficController* traffic)
    : ledger_(ledger),
      strategies_(strategies),
      clock_(clock),
      options_(std::move(options)),
      metrics_(metrics),
      traffic_(traffic) {}

int DeploymentController::pass(const World& world, const UnreachableNodes& unreachable) {
  creates_left_ = options_.max_creates_per_pass;
  creates_cut_ = false;
  metric_answers_ = metrics_ != nullptr ? metrics_->answers() : Json::object();
  metric_asked_.clear();
  const int changes = reconcileAll(world, unreachable);
  // Fetched off this pass and off every Lua deadline; the next passes read the answers.
  if (metrics_ != nullptr && !metric_asked_.empty()) metrics_->request(metric_asked_);
  return changes;
}

int DeploymentController::reconcileAll(const World& world, const UnreachableNodes& unreachable) {
  int changes = repair(world);
  changes += withdrawRelocations(world, unreachable);
  changes += relocateOffNodes(world, unreachable);
  for (const auto& plan : world.plans) {
    if (plan.state != model::PlanState::kActive) continue;
    auto it = world.deployments.find(plan.name);
    if (it == world.deployments.end()) continue;
    std::vector<model::Deployment> unfinished;
    for (const auto& d : it->second) {
      if (!model::isRolloutOver(d.state)) unfinished.push_back(d);
    }
    if (unfinished.empty()) continue;
    changes += supersede(world, unfinished);
    changes += reconcile(world, unfinished.back());
  }
  return changes;
}

int DeploymentController::supersede(const World& world, const std::vector<model::Deployment>& deployments) {
  int changes = 0;
  const std::string& newest = deployments.back().deployment_id;
  for (size_t i = 0; i + 1 < deployments.size(); ++i) {
    const model::Deployment& old = deployments[i];
    for (const auto* view : world.instancesOf(old.plan)) {
      const auto& op = view->unfinished;
      if (!op || op->intent != old.deployment_id) continue;
      if (op->state != model::OperationState::kPending && op->state != model::OperationState::kPendingApproval)
        continue;
      if (ledger_
              .operations().setOperationState(op->meta.id, model::OperationState::kCancelled, std::nullopt, options_.actor,
                                 "deployment " + old.deployment_id + " superseded by " + newest)
              .isOk()) {
        ++changes;
      }
    }
    // One being restored had completed before: it stays a rollback target.
    auto ended =
        restoring(old)
            ? ledger_.plans().finishRestore(old.plan, old.deployment_id, "restored; superseded by " + newest, options_.actor)
            : ledger_.plans().setDeploymentState(old.plan, old.deployment_id, model::DeploymentState::kCancelled, std::nullopt,
                                         options_.actor, "superseded by " + newest);
    if (ended.isOk()) ++changes;
  }
  return changes;
}

int DeploymentController::adopt(const World& world, const model::Deployment& deployment) {
  int changes = 0;
  const Json wanted = coordinatesOf(deployment);
  const model::Plan* deployed = world.planAsDeployed(deployment.plan, deployment.deployment_id);
  const std::optional<model::Resources> size =
      deployed ? std::optional(sched::instanceResources(*deployed)) : std::nullopt;
  for (const auto* view : world.instancesOf(deployment.plan)) {
    if (view->meta.deployment_id == deployment.deployment_id || view->meta.state != model::MetaState::kActive) continue;
    if (view->unfinished && view->unfinished->type == model::OperationType::kDelete) continue;
    const model::Deployment* own = world.deployment(deployment.plan, view->meta.deployment_id);
    const Json runs = view->coordinates(own ? coordinatesOf(*own) : Json::object());
    if (runs != wanted) continue;
    // One that runs them with another reservation than the deployment's plan asks for is
    // left to the strategy, whose UPDATE re-reserves it (docs/architecture.md#changing-a-plan).
    if (view->active && size && !sched::sameResources(view->active->reservation, *size)) continue;
    if (ledger_.instances().setMetaInstanceDeployment(view->meta.name, deployment.deployment_id, options_.actor).isOk()) {
      ++changes;
    }
  }
  return changes;
}

int DeploymentController::repair(const World& world) {
  int changes = 0;
  for (const std::string& name : world.unplaced) {
    const InstanceView& view = world.instances.at(name);
    const model::Deployment* own = wantingRepair(world, view);
    if (!own) continue;
    // Nothing runs it and nobody works on it: its process died (the observer marked the
    // runtime FAILED) or its CREATE was cancelled before it ran.
    const model::Operation op =
        operationFor(*own, view.newest() ? model::OperationType::kRestart : model::OperationType::kCreate, name);
    if (ledger_.operations().createOperation(op, options_.actor).isOk()) ++changes;
  }
  // docs/architecture.md#stopping-workloads-on-exit: a host that stopped its workloads when it
  // exited left them STOPPED on their nodes, reservations held; each is asked to start again
  // there, through approval like every RESTART (and left alone once such a RESTART failed).
  for (const std::string& name : world.stopped_on_exit) {
    const model::Deployment* own = wantingRepair(world, world.instances.at(name));
    if (own && ledger_.operations().createOperation(operationFor(*own, model::OperationType::kRestart, name), options_.actor).isOk())
      ++changes;
  }
  return changes;
}

int DeploymentController::relocateOffNodes(const World& world, const UnreachableNodes& unreachable) {
  // Who asks for the RELOCATEs off a node, and why (the operation's intent).
  struct Leaving {
    std::string intent;
    std::string requested_by;
  };
  std::map<std::string, Leaving> leaving;
  for (const auto& node : world.nodes) {
    if (node.state == model::NodeState::kDraining) {
      leaving[node.name] = {"drain", node.drained_by.empty() ? options_.actor : node.drained_by};
    }
  }
  for (const std::string& node : unreachable.to_replace) leaving[node] = {"unreachable", options_.actor};
  if (leaving.empty()) return 0;
  // A scan of every instance, but only while some node drains or is lost.
  int changes = 0;
  for (const auto& [name, view] : world.instances) {
    if (!view.active || view.unfinished || view.meta.state != model::MetaState::kActive) continue;
    if (view.active->state != model::RuntimeState::kRunning) continue;  // anything else is the observer's or repair's
    auto node = leaving.find(view.active->node);
    if (node == leaving.end()) continue;
    // A relocation that failed or was refused is not asked for again and again: a person decides.
    if (view.last && view.last->type == model::OperationType::kRelocate &&
        (view.last->state == model::OperationState::kFailed || view.last->state == model::OperationState::kRejected))
      continue;
    model::Operation op;
    op.meta_instance = name;
    op.type = model::OperationType::kRelocate;
    op.intent = node->second.intent;
    op.requested_by = node->second.requested_by;
    if (ledger_.operations().createOperation(op, options_.actor).isOk()) ++changes;
  }
  return changes;
}

int DeploymentController::withdrawRelocations(const World& world, const UnreachableNodes& unreachable) {
  int changes = 0;
  for (const std::string& name : world.operating) {
    const InstanceView& view = world.instances.at(name);
    const model::Operation* op = view.unfinished.get();
    if (op == nullptr || op->type != model::OperationType::kRelocate || op->intent != "unreachable") continue;
    // Once started it runs to its end (make-before-break); one that has not may still go.
    const bool started = op->attempts > 0 || !model::isBeforeRunning(op->state);
    if (started) continue;
    std::string why;
    const model::RuntimeInstance* runs = view.active ? &*view.active : nullptr;
    if (runs == nullptr || runs->state != model::RuntimeState::kRunning) {
      why = name + " no longer runs: there is nothing to relocate";
    } else if (!unreachable.contains(runs->node) && !isUnreachableMessage(runs->message, runs->node)) {
      // Reachable, and the observer has heard from the instance since (a host restarted
      // during the outage has not until its driver answers for it: the mark stays).
      why =
          "node " + runs->node + " is reachable again and " + name + " runs there: the relocation is no longer needed";
    } else {
      continue;
    }
    // With the generation this pass read: an attempt the executor counted since wins.
    if (ledger_.operations().cancelOperation(op->meta.id, op->meta.generation, options_.actor, why).isOk()) ++changes;
  }
  return changes;
}

Json DeploymentController::snapshot(const World& world, const model::Deployment& deployment) const {
  const TimePoint now = clock_.now();
  Json instances = Json::array();
  for (const auto* view : world.instancesOf(deployment.plan)) {
    // Instances on their way out stay visible with their DELETE as `operation`, so a
    // strategy counting them does not ask for a second deletion.
    const model::Deployment* own = world.deployment(deployment.plan, view->meta.deployment_id);
    Json inst{{"name", view->meta.name},
              {"deployment_id", view->meta.deployment_id},
              {"version", view->meta.deployment_id == deployment.deployment_id ? "new" : "old"},
              {"state", view->effectiveState()},
              {"healthy", view->healthy()},
              {"node", ""},
              {"update_domain", ""},
              {"ready_since", ""},
              {"ready_seconds", 0.0},
              {"coordinates", view->coordinates(own ? coordinatesOf(*own) : Json::object())},
              {"operation", view->unfinished ? operationJson(OperationSummary::of(*view->unfinished)) : Json(nullptr)},
              {"last_operation", view->last ? operationJson(*view->last) : Json(nullptr)}};
    if (view->active) {
      inst["node"] = view->active->node;
      if (auto n = world.node_by_name.find(view->active->node); n != world.node_by_name.end()) {
        inst["update_domain"] = n->second->update_domain;
      }
      if (view->active->healthy && !view->active->ready_since.empty()) {
        inst["ready_since"] = view->active->ready_since;
        if (auto since = parseTimestamp(view->active->ready_since)) {
          inst["ready_seconds"] = std::chrono::duration<double>(now - *since).count();
        }
      }
    }
    // Its server at the router, as the router's metrics label it ("" when it takes no traffic).
    inst["router_server"] = traffic_ != nullptr ? traffic_->metricServer(view->meta.name) : "";
    instances.push_back(std::move(inst));
  }
  Json previous = nullptr;
  if (const auto* p = world.lastCompleted(deployment.plan, deployment.deployment_id)) {
    previous = Json{{"id", p->deployment_id}, {"count", p->instance_count}, {"coordinates", coordinatesOf(*p)}};
  }
  const model::Plan* plan = world.planAsDeployed(deployment.plan, deployment.deployment_id);
  const model::EffectiveStrategy strategy = model::effectiveStrategy(plan, deployment);
  const Json& plan_params = strategy.plan_params;
  const Json& deployment_params = strategy.deployment_params;
  Json plan_json = Json::object();
  if (plan != nullptr)
    plan_json = Json{{"name", plan->name},
                     {"namespace", plan->ns},
                     {"service_name", plan->service_name},
                     {"router_backend", traffic_ != nullptr ? traffic_->metricBackend(plan->name) : ""}};
  Json signals{{"promote", false}, {"promote_full", false}, {"abort", false}, {"pause", false}, {"resume", false}};
  if (deployment.signals.is_object()) {
    for (const auto& [k, v] : deployment.signals.items()) {
      if (signals.contains(k)) signals[k] = !v.is_null() && v != false;
    }
  }
  Json restore = nullptr;
  if (restoring(deployment)) {
    const Json& r = deployment.signals["restore"];
    restore = Json{{"from", r.value("from", "")},
                   {"kind", r.value("kind", "rollback")},
                   {"reason", r.value("reason", "")},
                   {"at", 0.0}};
    if (auto at = parseTimestamp(r.value("at", "")); at.isOk()) restore["at"] = unixSeconds(*at);
  }
  // Progress counts rolling-out time only: never the time the rollout was PAUSED.
  const double paused = deployment.paused_seconds + secondsSince(deployment.paused_since, now);
  const double progress = std::max(0.0, secondsSince(deployment.started_at, now) - paused);
  return Json{{"deployment",
               {{"id", deployment.deployment_id},
                {"count", deployment.instance_count},
                {"state", deployment.state},
                {"created_at", deployment.meta.created_at},
                {"started_at", deployment.started_at},
                {"progress_seconds", progress},
                {"paused_seconds", paused},
                {"coordinates", coordinatesOf(deployment)}}},
              {"previous", previous},
              {"restore", restore},
              {"plan", plan_json},
              {"instances", instances},
              {"plan_params", plan_params},
              {"deployment_params", deployment_params},
              {"now", formatTimestamp(now)},
              {"now_unix", unixSeconds(now)},
              {"signals", signals},
              {"state", deployment.rollout_state.is_object() ? deployment.rollout_state : Json::object()}};
}

void DeploymentController::reportError(const model::Deployment& deployment, const std::string& message) {
  const std::string key = deployment.plan + "/" + deployment.deployment_id;
  if (last_error_[key] == message) return;
  // Remembered once reported, so an event the ledger refused is written when it fails again next pass.
  if (ledger_.audit().appendEvent("deployment.strategy_error", "deployment/" + key, Json{{"message", message}}, options_.actor)
          .isOk()) {
    last_error_[key] = message;
  }
}

int DeploymentController::reconcile(const World& world, const model::Deployment& d) {
  int changes = 0;
  model::Deployment deployment = d;
  if (deployment.state == model::DeploymentState::kPending) {
    // With the generation this pass read: a control that landed since (an abort of the
    // PENDING deployment, FAILED now) wins, and the next pass sees what it left.
    auto started =
        ledger_.plans().setDeploymentState(deployment.plan, deployment.deployment_id, model::DeploymentState::kInProgress,
                                   deployment.meta.generation, options_.actor, "rolling out");
    if (!started.isOk()) return changes;
    deployment = std::move(started).value();
    ++changes;
  }
  if (held(deployment)) {
    // A person paused the rollout: no new steps until resume (or promote). Operations
    // already asked for run on; the time does not count toward the progress deadline.
    if (deployment.state == model::DeploymentState::kInProgress &&
        ledger_
            .plans().setDeploymentState(deployment.plan, deployment.deployment_id, model::DeploymentState::kPaused,
                                std::nullopt, options_.actor,
                                "paused by " + deployment.signals["hold"].value("by", "someone"))
            .isOk()) {
      ++changes;
    }
    return changes;
  }
  // A hook that vetoes or delays an operation of the rollout means "wait", not "fail": the
  // rollout is held PAUSED, so the wait counts toward no step and no progress deadline, and
  // its strategy is not asked until the hook lets the operation go.
  if (const model::Operation* op = operationHeldByHook(world, deployment)) {
    if (deployment.state != model::DeploymentState::kPaused || !heldForHook(deployment) ||
        deployment.message != op->message) {
      const ledger::HookHold hold{op->meta.id, std::string(model::hookHoldKind(*op)), op->message};
      if (ledger_.plans().holdForHook(deployment.plan, deployment.deployment_id, hold, options_.actor).isOk()) ++changes;
    }
    return changes;
  }
  if (heldForHook(deployment)) {
    auto released = ledger_.plans().releaseHookHold(deployment.plan, deployment.deployment_id, options_.actor);
    if (!released.isOk()) return changes;
    deployment = std::move(released).value();
    ++changes;
  }
  const int adopted = adopt(world, deployment);
  if (adopted > 0) return changes + adopted;  // act on the instances as they now are, next pass

  const std::string script =
      model::effectiveStrategy(world.planAsDeployed(deployment.plan, deployment.deployment_id), deployment).script;
  Json rollout = snapshot(world, deployment);
  if (!metric_answers_.empty()) rollout["metrics"] = metric_answers_;
  auto result = strategies_.reconcile(script, std::move(rollout));
  if (!result.isOk()) {
    reportError(deployment, "strategy '" + script + "': " + result.status().message());
    return changes;
  }
  metric_asked_.insert(metric_asked_.end(), result->metric_queries.begin(), result->metric_queries.end());
  last_error_.erase(deployment.plan + "/" + deployment.deployment_id);
  changes += apply(world, deployment, result.value());
  // The strategy saw the one-shot signals (promote, promote_full): they are used up.
  Json seen = Json::object();
  if (deployment.signals.is_object()) {
    for (const auto& [key, value] : deployment.signals.items()) {
      if (!model::isPersistentSignal(key)) seen[key] = value;
    }
  }
  if (!seen.empty() && ledger_.plans().consumeSignals(deployment.plan, deployment.deployment_id, seen, options_.actor).isOk()) {
    ++changes;
  }
  return changes;
}

model::Operation DeploymentController::operationFor(const model::Deployment& deployment, model::OperationType type,
                                                    const std::string& meta_instance) const {
  model::Operation op;
  op.meta_instance = meta_instance;
  op.type = type;
  op.intent = deployment.deployment_id;
  op.requested_by = deployment.added_by.empty() ? options_.actor : deployment.added_by;
  return op;
}

int DeploymentController::apply(const World& world, const model::Deployment& deployment,
                                const lua::StrategyResult& result) {
  using Kind = lua::StrategyAction::Kind;
  int changes = 0;
  bool paused = false;
  std::optional<std::string> hold;
  for (const auto& action : result.actions) {
    if (hold) break;
    switch (action.kind) {
      case Kind::kCreate: changes += createInstances(deployment, action.count); break;
      case Kind::kUpdate:
        changes += requestOperations(world, deployment, model::OperationType::kUpdate, action.instances);
        break;
      case Kind::kRelocate:
        changes += requestOperations(world, deployment, model::OperationType::kRelocate, action.instances);
        break;
      case Kind::kDelete: {
        std::vector<std::string> names = action.instances;
        if (names.empty() && action.count > 0) names = chooseForScaleDown(world, deployment, action.count);
        changes += requestOperations(world, deployment, model::OperationType::kDelete, names);
        break;
      }
      case Kind::kPause:
        paused = true;
        changes += pauseRollout(deployment, action.reason);
        break;
      case Kind::kRoute: changes += route(world, deployment, action.weights, hold); break;
      case Kind::kComplete: changes += completeRollout(deployment, action.reason); break;
      case Kind::kFail:
        changes += ledger_
                       .plans().setDeploymentState(deployment.plan, deployment.deployment_id, model::DeploymentState::kFailed,
                                           std::nullopt, options_.actor, action.reason)
                       .isOk();
        break;
      case Kind::kRollback: changes += rollBack(deployment, action.reason); break;
    }
  }
  const std::string& plan = deployment.plan;
  const std::string& id = deployment.deployment_id;
  if (!paused && deployment.state == model::DeploymentState::kPaused &&
      ledger_
          .plans().setDeploymentState(plan, id, model::DeploymentState::kInProgress, std::nullopt, options_.actor,
                              hold ? *hold : "resumed")
          .isOk()) {
    ++changes;
  }
  Json state = result.state;
  if (hold && state.is_object()) {
    // Held for the router: the state is kept (it remembers the signals this pass used up,
    // a promote among them) but not its note of the weights last routed, so the strategy's
    // next pass asks for the same route again until the router serves it.
    const Json before = deployment.rollout_state.is_object() ? deployment.rollout_state.value("weights", Json())
                                                             : Json();
    if (before.is_null()) {
      state.erase("weights");
    } else {
      state["weights"] = before;
    }
  }
  if (state != deployment.rollout_state) {
    if (ledger_.plans().setRolloutState(plan, id, state, std::nullopt, options_.actor).isOk()) ++changes;
  }
  return changes;
}

int DeploymentController::createInstances(const model::Deployment& deployment, int64_t count) {
  int changes = 0;
  if (count > creates_left_) creates_cut_ = true;
  count = std::min<int64_t>(count, creates_left_);
  creates_left_ -= static_cast<int>(count);
  for (int64_t i = 0; i < count; ++i) {
    const model::Operation op = operationFor(deployment, model::OperationType::kCreate, "");
    if (ledger_.operations().createInstanceWithOperation(deployment.plan, deployment.deployment_id, op, options_.actor).isOk()) {
      ++changes;
    }
  }
  return changes;
}

int DeploymentController::requestOperations(const World& world, const model::Deployment& deployment,
                                            model::OperationType type, const std::vector<std::string>& names) {
  int changes = 0;
  for (const auto& name : names) {
    auto it = world.instances.find(name);
    // An instance with an operation already (or one that is gone): nothing to ask.
    if (it == world.instances.end() || it->second.unfinished != nullptr) continue;
    if (ledger_.operations().createOperation(operationFor(deployment, type, name), options_.actor).isOk()) ++changes;
  }
  return changes;
}

std::vector<std::string> DeploymentController::chooseForScaleDown(const World& world,
                                                                  const model::Deployment& deployment, int64_t count) {
  // The host chooses victims: unhealthy first, then from the most crowded update domain
  // (docs/architecture.md#scheduling); old versions before new ones.
  std::vector<sched::InstanceFact> old_facts, new_facts;
  for (const auto* view : world.instancesOf(deployment.plan)) {
    if (view->unfinished || view->meta.state != model::MetaState::kActive) continue;
    sched::InstanceFact fact;
    fact.meta_instance = view->meta.name;
    fact.plan = deployment.plan;
    fact.node = view->active ? view->active->node : "";
    fact.healthy = view->healthy();
    fact.created_at = view->meta.meta.created_at;
    (view->meta.deployment_id == deployment.deployment_id ? new_facts : old_facts).push_back(fact);
  }
  const auto snapshot = world.schedulerSnapshot();
  sched::Scheduler scheduler(snapshot);
  std::vector<std::string> names = scheduler.chooseScaleDown(old_facts, static_cast<int>(count));
  if (static_cast<int64_t>(names.size()) < count) {
    auto more = scheduler.chooseScaleDown(new_facts, static_cast<int>(count - names.size()));
    names.insert(names.end(), more.begin(), more.end());
  }
  return names;
}

int DeploymentController::pauseRollout(const model::Deployment& deployment, const std::string& reason) {
  const std::string& plan = deployment.plan;
  const std::string& id = deployment.deployment_id;
  if (deployment.state == model::DeploymentState::kInProgress) {
    return ledger_.plans().setDeploymentState(plan, id, model::DeploymentState::kPaused, std::nullopt, options_.actor, reason)
        .isOk();
  }
  if (deployment.state == model::DeploymentState::kPaused && deployment.message != reason) {
    return ledger_.plans().setDeploymentMessage(plan, id, reason, options_.actor).isOk();
  }
  return 0;
}

int DeploymentController::route(const World& world, const model::Deployment& deployment, const Json& weights,
                                std::optional<std::string>& hold) {
  const std::string& plan = deployment.plan;
  const std::string& id = deployment.deployment_id;
  int changes = 0;
  if (traffic_ != nullptr) {
    if (auto why = traffic_->routeHold(world, deployment, weights)) {
      hold = *why;
      if (deployment.message != *why && ledger_.plans().setDeploymentMessage(plan, id, *why, options_.actor).isOk()) {
        ++changes;
      }
    } else if (model::isRouterHoldMessage(deployment.message)) {
      if (ledger_.plans().setDeploymentMessage(plan, id, "rolling out", options_.actor).isOk()) ++changes;
    }
  }
  // Routes once per change of the plan's route (the route hook sees each switch once).
  const Json route{{"deployment", id}, {"weights", weights}};
  if (last_route_[plan] == route) return changes;
  const auto* previous = world.lastCompleted(plan, id);
  Json data{{"weights", weights},
            {"plan", plan},
            {"deployment", id},
            {"previous", previous ? Json(previous->deployment_id) : Json(nullptr)}};
  if (ledger_.audit().appendEvent("deployment.route", "deployment/" + plan + "/" + id, data, options_.actor).isOk()) {
    last_route_[plan] = route;
  }
  return changes;
}

int DeploymentController::completeRollout(const model::Deployment& deployment, const std::string& reason) {
  const std::string& plan = deployment.plan;
  const std::string& id = deployment.deployment_id;
  if (restoring(deployment)) {
    const Json& restore = deployment.signals["restore"];
    const std::string message =
        "restored after the " + restore.value("kind", "rollback") + " of " + restore.value("from", "?");
    return ledger_.plans().finishRestore(plan, id, message, options_.actor).isOk();
  }
  return ledger_
      .plans().setDeploymentState(plan, id, model::DeploymentState::kCompleted, std::nullopt, options_.actor,
                          reason.empty() ? "promoted" : reason)
      .isOk();
}

int DeploymentController::rollBack(const model::Deployment& deployment, const std::string& reason) {
  // Back to the last completed deployment: it is re-opened and its own strategy brings the
  // instances back (docs/architecture.md#rollouts); with none, the rollout just fails.
  const std::string& plan = deployment.plan;
  const std::string& id = deployment.deployment_id;
  auto rolled = ledger_.plans().restoreDeployment(
      plan, id, {model::DeploymentState::kRolledBack, "rolled back: " + reason, "rollback", reason, ""},
      options_.actor);
  if (rolled.isOk()) return 1;
  if (rolled.status().code() != Code::kUnprocessable) return 0;
  return ledger_
      .plans().setDeploymentState(plan, id, model::DeploymentState::kFailed, std::nullopt, options_.actor,
                          "rollback requested, but no earlier deployment completed: " + reason)
      .isOk();
}

}  // namespace tide::engine
