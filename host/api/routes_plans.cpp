// /v1/plans: deployment plans and their "show" view.

#include "host/api/command_access.h"
#include "host/api/dry_run.h"
#include "host/api/handlers.h"
#include "host/api/namespace_scope.h"
#include "host/api/request_inputs.h"
#include "host/api/views.h"
#include "host/config/manifest.h"
#include "host/model/transitions.h"

namespace tide::api::plans {
namespace {

// The plan in a request body, with what the caller may not ask for refused: raw commands
// and strategy params as POST /v1/manifests checks them.
Result<model::Plan> readPlan(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(std::string_view text, readBodyText(request));
  TIDE_ASSIGN_OR_RETURN(model::Plan plan, config::parsePlan(text, kBodySource));
  TIDE_RETURN_IF_ERROR(authorizeNamespace(request.principal, plan.ns, "plan '" + plan.name + "'"));
  TIDE_RETURN_IF_ERROR(checkCommandAccess(context, request.principal, plan));
  TIDE_RETURN_IF_ERROR(checkTrafficServed(context, plan));
  TIDE_RETURN_IF_ERROR(checkStrategyParams(context, plan.strategy.script, plan.strategy.params, Json::object()));
  return plan;
}

}  // namespace

Result<ApiResponse> create(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"dry_run"}));
  TIDE_ASSIGN_OR_RETURN(const bool dry_run, readDryRun(request));
  TIDE_ASSIGN_OR_RETURN(model::Plan plan, readPlan(context, request));
  std::vector<ErrorDetail> warnings;
  std::optional<ledger::Ledger::Rehearsal> rehearsal;
  if (dry_run) rehearsal.emplace(context.ledger);
  TIDE_ASSIGN_OR_RETURN(model::Plan created, context.ledger.plans().createPlan(plan, request.principal.name, &warnings));
  if (dry_run) return recordReply(created, warnings, 200, Json{{"dry_run", true}});
  return recordReply(created, warnings, 201);
}

Result<ApiResponse> update(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"generation", "dry_run"}));
  TIDE_ASSIGN_OR_RETURN(ledger::Generation generation, readExpectedGeneration(request));
  TIDE_ASSIGN_OR_RETURN(const bool dry_run, readDryRun(request));
  TIDE_ASSIGN_OR_RETURN(model::Plan plan, readPlan(context, request));
  const std::string& name = request.param("name");
  if (plan.name != name) {
    const std::string problem = "must be '" + name + "', the plan in the path, got '" + plan.name + "'";
    return Status::invalidArgument("plan name " + problem, {{"name", problem, ""}});
  }
  std::optional<ledger::Ledger::Rehearsal> rehearsal;
  if (dry_run) rehearsal.emplace(context.ledger);
  TIDE_ASSIGN_OR_RETURN(ledger::PlanChange change, context.ledger.plans().updatePlan(plan, generation, request.principal.name));
  Json extra{{"changed", change.changed}};
  if (dry_run) extra["dry_run"] = true;
  return recordReply(change.plan, change.warnings, 200, extra);
}

Result<ApiResponse> list(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(
      ledger::ListOptions options,
      readListOptions(request, {{"namespace"}, {"state", model::statesOf(model::RecordKind::kPlan)}}));
  TIDE_ASSIGN_OR_RETURN(ledger::Page<model::Plan> page, context.ledger.plans().listPlans(options));
  return pageReply(page);
}

Result<ApiResponse> show(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(ledger::ListOptions page, readListOptions(request, {}));
  TIDE_ASSIGN_OR_RETURN(model::Plan plan, context.ledger.plans().getPlan(request.param("name")));
  TIDE_ASSIGN_OR_RETURN(Json view, planShowView(context.ledger, plan, page));
  TIDE_ASSIGN_OR_RETURN(view["control_loop"], controlLoopView(context.ledger));
  // docs/architecture.md#traffic: the endpoint, the split asked and the split the router applies.
  if (plan.traffic.declared()) {
    Json traffic = context.traffic_view ? context.traffic_view(plan.name) : Json(nullptr);
    if (traffic.is_null()) {
      traffic = Json{{"listen", plan.traffic.listen},
                     {"asked", Json::object()},
                     {"applied", Json::object()},
                     {"router", "down"},
                     {"reason", context.traffic_view ? "the control loop has not applied the plan's traffic yet"
                                                     : "this host runs no traffic router"}};
      if (!plan.traffic.preview_listen.empty()) traffic["preview_listen"] = plan.traffic.preview_listen;
    }
    view["traffic"] = std::move(traffic);
  }
  ApiResponse response = jsonReply(view);
  response.headers.emplace_back("ETag", std::to_string(plan.meta.generation));
  return response;
}

Result<ApiResponse> remove(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"generation"}));
  TIDE_ASSIGN_OR_RETURN(ledger::Generation generation, readExpectedGeneration(request));
  const std::string& name = request.param("name");
  TIDE_RETURN_IF_ERROR(context.ledger.plans().deletePlan(name, generation, request.principal.name));
  return deletedReply("plan", name);
}

// Tears the plan down (docs/architecture.md#scaling-a-plan-to-zero): a DELETE per live
// instance, asked for in one write, answered with the operations. Body: optional {"reason"},
// recorded in the plan.scale_to_zero event.
Result<ApiResponse> scaleToZero(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(Json body, readOptionalJsonObject(request, {"reason"}));
  TIDE_ASSIGN_OR_RETURN(std::optional<std::string> reason, readStringField(body, "reason"));
  const std::string& name = request.param("name");
  TIDE_ASSIGN_OR_RETURN(
      ledger::PlanTeardown teardown,
      context.ledger.plans().scalePlanToZero(name, userOperation(request, model::OperationType::kDelete, reason.value_or("")),
                                     reason.value_or(""), request.principal.name));
  return jsonReply(Json{{"plan", name},
                        {"operations", teardown.operations},
                        {"cancelled_deployments", teardown.cancelled_deployments}});
}

}  // namespace tide::api::plans
