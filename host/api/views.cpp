#include "host/api/views.h"

#include <algorithm>

#include "host/engine/node_liveness.h"
#include "host/model/approvals.h"
#include "host/model/holds.h"
#include "host/model/transitions.h"

namespace tide::api {

namespace {

Json instanceCounts(const ledger::PlanCounts::Instances& n) {
  return Json{
      {"total", n.total}, {"running", n.running}, {"pending", n.pending}, {"failed", n.failed}, {"ready", n.ready}};
}

Json holdJson(const model::Hold& hold) {
  Json out{{"kind", hold.kind}, {"reason", hold.reason}};
  if (hold.operation != 0) out["operation"] = hold.operation;
  return out;
}

}  // namespace

Result<Json> planShowView(ledger::Ledger& ledger, const model::Plan& plan, const ledger::ListOptions& page) {
  const std::map<std::string, std::string> by_plan = {{"plan", plan.name}};
  TIDE_ASSIGN_OR_RETURN(std::vector<model::Deployment> deployments,
                        listAll(ledger.plans(), &ledger::PlanRecords::listDeployments, by_plan));
  TIDE_ASSIGN_OR_RETURN(ledger::PlanCounts counts, ledger.instances().planCounts(plan.name));
  TIDE_ASSIGN_OR_RETURN(ledger::Page<model::MetaInstance> metas, ledger.instances().livePlanInstances(plan.name, page));
  std::vector<int64_t> ids;
  for (const model::MetaInstance& meta : metas.items) ids.push_back(meta.meta.id);
  TIDE_ASSIGN_OR_RETURN(ledger::InstanceSlice slice, ledger.instances().instanceSlice(ids, {}, {}));

  std::map<std::string, Json> runtimes_of, operations_of;
  for (const model::RuntimeInstance& runtime : slice.runtimes) {
    Json& mine = runtimes_of[runtime.meta_instance];
    if (mine.is_null()) mine = Json::array();
    mine.push_back(runtime);
  }
  for (const model::Operation& operation : slice.operations) operations_of[operation.meta_instance] = {operation};
  // Built by moving the parts in: a braced Json copies each of its elements, and the
  // instances are most of the view.
  Json instances = Json::array();
  for (const model::MetaInstance& meta : metas.items) {
    auto runtimes = runtimes_of.find(meta.name);
    auto operations = operations_of.find(meta.name);
    Json instance = Json::object();
    instance["meta_instance"] = meta;
    instance["runtime_instances"] = runtimes == runtimes_of.end() ? Json::array() : std::move(runtimes->second);
    instance["operations"] = operations == operations_of.end() ? Json::array() : std::move(operations->second);
    instances.push_back(std::move(instance));
  }

  Json instance_summary = instanceCounts(counts.live);
  instance_summary["by_deployment"] = Json::object();
  for (const auto& [id, n] : counts.staying) instance_summary["by_deployment"][id] = instanceCounts(n);
  Json operations_summary = Json::object();
  for (const std::string& type : model::namesOf<model::OperationType>()) {
    for (const std::string& state : model::statesOf(model::RecordKind::kOperation)) {
      operations_summary[type][state] = 0;
    }
  }
  for (const auto& [type, states] : counts.operations) {
    for (const auto& [state, n] : states) operations_summary[type][state] = n;
  }

  // What waits for people, first come first: one page (the operations list has them all).
  ledger::ListOptions waiting_page;
  waiting_page.limit = kWaitingForApprovalShown;
  waiting_page.filters = {{"plan", plan.name}, {"state", model::toString(model::OperationState::kPendingApproval)}};
  TIDE_ASSIGN_OR_RETURN(ledger::Page<model::Operation> waiting, ledger.operations().listOperations(waiting_page));
  Json waiting_for_approval = Json::array();
  for (const model::Operation& operation : waiting.items) {
    const model::ApprovalState approvals = model::approvalStateOf(operation.decision);
    waiting_for_approval.push_back(
        Json{{"id", operation.meta.id},
             {"type", operation.type},
             {"meta_instance", operation.meta_instance},
             {"deployment", operation.intent},
             {"requested_by", operation.requested_by},
             {"approvals", model::describeApprovals(operation.decision, operation.requested_by)},
             {"still_needed", model::approvalsStillNeeded(approvals, operation.requested_by)}});
  }

  Json view = Json::object();
  view["plan"] = plan;
  view["deployments"] = deployments;
  view["waiting_for_approval"] = std::move(waiting_for_approval);
  view["instance_summary"] = std::move(instance_summary);
  view["operations_summary"] = std::move(operations_summary);
  view["instances"] = std::move(instances);
  if (metas.next_after != 0) view["next_after"] = metas.next_after;
  return view;
}

Result<Json> fleetStatusView(ledger::Ledger& ledger) {
  ledger::Ledger::Snapshot snapshot(ledger);
  TIDE_ASSIGN_OR_RETURN(std::vector<model::Plan> plans, listAll(ledger.plans(), &ledger::PlanRecords::listPlans));
  TIDE_ASSIGN_OR_RETURN(std::vector<model::Deployment> deployments, listAll(ledger.plans(), &ledger::PlanRecords::listDeployments));
  TIDE_ASSIGN_OR_RETURN(
      std::vector<model::Operation> unstarted,
      listAll(ledger.operations(), &ledger::OperationRecords::listOperations, {{"state", "PENDING,PENDING_APPROVAL,APPROVED"}}));
  TIDE_ASSIGN_OR_RETURN(std::optional<model::ControlHalt> halt, ledger.audit().controlHalt());

  std::map<std::string, std::vector<model::Deployment>> deployments_of;  // by plan, oldest first
  for (model::Deployment& deployment : deployments) deployments_of[deployment.plan].push_back(std::move(deployment));
  // The holds of the operations a rollout asked for, by (plan, deployment id).
  std::map<std::pair<std::string, std::string>, std::vector<model::Hold>> operation_holds;
  for (const model::Operation& operation : unstarted) {
    if (std::optional<model::Hold> hold = model::operationHold(operation)) {
      operation_holds[{operation.plan, operation.intent}].push_back(std::move(*hold));
    }
  }

  std::sort(plans.begin(), plans.end(), [](const model::Plan& a, const model::Plan& b) { return a.name < b.name; });
  Json plan_rows = Json::array();
  Json held = Json::array();
  for (const model::Plan& plan : plans) {
    const std::vector<model::Deployment>& of_plan = deployments_of[plan.name];
    const model::Deployment* current = model::currentDeployment(of_plan);
    TIDE_ASSIGN_OR_RETURN(ledger::PlanCounts counts, ledger.instances().planCounts(plan.name));
    const int64_t desired = current != nullptr ? current->instance_count : 0;
    plan_rows.push_back(Json{{"name", plan.name},
                             {"namespace", plan.ns},
                             {"state", plan.state},
                             {"deployment_id", current != nullptr ? current->deployment_id : ""},
                             {"desired", desired},
                             {"instances", instanceCounts(counts.live)},
                             {"under_replicated", counts.live.running < desired}});

    for (const model::Deployment& deployment : of_plan) {
      if (model::isRolloutOver(deployment.state)) continue;
      std::vector<model::Hold> holds = model::deploymentHolds(deployment);
      auto of_operations = operation_holds.find({plan.name, deployment.deployment_id});
      if (of_operations != operation_holds.end()) {
        holds.insert(holds.end(), of_operations->second.begin(), of_operations->second.end());
      }
      if (halt) holds.push_back({"halted", "the control loop is halted: " + halt->reason, 0});
      if (holds.empty()) continue;
      Json hold_rows = Json::array();
      for (const model::Hold& hold : holds) hold_rows.push_back(holdJson(hold));
      held.push_back(Json{{"plan", plan.name},
                          {"deployment_id", deployment.deployment_id},
                          {"state", deployment.state},
                          {"message", deployment.message},
                          {"holds", std::move(hold_rows)}});
    }
  }
  return Json{{"plans", std::move(plan_rows)}, {"held_rollouts", std::move(held)}};
}

Result<Json> controlLoopView(ledger::Ledger& ledger) {
  TIDE_ASSIGN_OR_RETURN(std::optional<model::ControlHalt> halt, ledger.audit().controlHalt());
  TIDE_ASSIGN_OR_RETURN(std::optional<model::Event> partition, engine::latestPartitionAlarm(ledger));
  Json partition_view = nullptr;
  if (partition) {
    partition_view = Json{{"since", partition->at},
                          {"nodes", partition->data.value("nodes", Json::array())},
                          {"message", partition->data.value("message", "")}};
  }
  return Json{
      {"halted", halt.has_value()}, {"halt", halt ? Json(*halt) : Json(nullptr)}, {"partition", partition_view}};
}

Result<Json> drainProgressView(ledger::Ledger& ledger, const model::Node& node) {
  TIDE_ASSIGN_OR_RETURN(std::vector<model::RuntimeInstance> runtimes,
                        listAll(ledger.instances(), &ledger::InstanceRecords::listRuntimeInstances, {{"node", node.name}}));
  Json instances = Json::array();
  for (const model::RuntimeInstance& runtime : runtimes) {
    if (!model::holdsResources(runtime.state)) continue;
    TIDE_ASSIGN_OR_RETURN(std::vector<model::Operation> operations,
                          listAll(ledger.operations(), &ledger::OperationRecords::listOperations, {{"meta_instance", runtime.meta_instance}}));
    Json operation = nullptr;
    for (const model::Operation& op : operations) {
      if (model::isTerminal(op.state)) continue;
      operation = Json{{"id", op.meta.id}, {"type", op.type}, {"state", op.state}, {"message", op.message}};
    }
    instances.push_back(Json{{"instance", runtime.meta_instance}, {"state", runtime.state}, {"operation", operation}});
  }
  const size_t left = instances.size();
  return Json{{"instances_left", left}, {"instances", std::move(instances)}};
}

Result<std::map<std::string, model::Operation>> unfinishedOperations(ledger::Ledger& ledger,
                                                                     const std::vector<model::MetaInstance>& metas) {
  std::vector<int64_t> ids;
  for (const model::MetaInstance& meta : metas) ids.push_back(meta.meta.id);
  TIDE_ASSIGN_OR_RETURN(std::vector<model::Operation> operations, ledger.operations().unfinishedOperations(ids));
  std::map<std::string, model::Operation> unfinished;
  for (model::Operation& operation : operations) unfinished[operation.meta_instance] = std::move(operation);
  return unfinished;
}

Result<Json> instanceView(ledger::Ledger& ledger, const model::MetaInstance& meta_instance, bool with_operations) {
  const std::map<std::string, std::string> by_meta = {{"meta_instance", meta_instance.name}};
  TIDE_ASSIGN_OR_RETURN(std::vector<model::RuntimeInstance> runtimes,
                        listAll(ledger.instances(), &ledger::InstanceRecords::listRuntimeInstances, by_meta));
  Json view = {{"meta_instance", meta_instance}, {"runtime_instances", runtimes}};
  if (with_operations) {
    TIDE_ASSIGN_OR_RETURN(std::vector<model::Operation> operations,
                          listAll(ledger.operations(), &ledger::OperationRecords::listOperations, by_meta));
    view["operations"] = operations;
  }
  return view;
}

}  // namespace tide::api
