// /v1/plans/{name}/deployments: the deployments (rollouts) of one plan.

#include <algorithm>

#include "host/api/command_access.h"
#include "host/api/dry_run.h"
#include "host/api/handlers.h"
#include "host/api/request_inputs.h"
#include "host/config/manifest.h"
#include "host/config/yaml_tree.h"
#include "host/model/approvals.h"
#include "host/model/transitions.h"

namespace tide::api::deployments {
namespace {

// The spellings manifests accept for a deployment's plan (host/config/manifest.cpp).
const std::vector<std::string_view> kPlanKeys = {"deployment_plan_name", "deploymentPlanName", "plan"};

// The body's top-level plan entry, when the body is one mapping that has one.
const std::pair<config::YamlNode, config::YamlNode>* findPlanEntry(const std::vector<config::YamlNode>& documents) {
  if (documents.size() != 1 || documents.front().kind != config::YamlNode::Kind::kMapping) return nullptr;
  for (const auto& entry : documents.front().entries) {
    if (std::find(kPlanKeys.begin(), kPlanKeys.end(), entry.first.scalar) != kPlanKeys.end()) return &entry;
  }
  return nullptr;
}

// `text` with `plan: <plan>` added, leaving every line the client sent on its line so
// error locations still point at their text: inside the braces of a flow mapping (JSON),
// appended to a block mapping. `plan` is a valid record name, so it needs no escaping.
std::string withPlan(std::string_view text, const std::string& plan) {
  size_t open = text.find_first_not_of(" \t\r\n");
  if (open != std::string_view::npos && text[open] == '{') {
    std::string_view rest = text.substr(open + 1);
    size_t next = rest.find_first_not_of(" \t\r\n");
    bool empty = next != std::string_view::npos && rest[next] == '}';
    return std::string(text.substr(0, open + 1)) + "\"plan\": \"" + plan + "\"" + (empty ? "" : ", ") +
           std::string(rest);
  }
  std::string out(text);
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out + "plan: \"" + plan + "\"\n";
}

}  // namespace

Result<ApiResponse> create(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"dry_run"}));
  const std::string& plan = request.param("name");
  TIDE_RETURN_IF_ERROR(context.ledger.plans().getPlan(plan).status());
  TIDE_ASSIGN_OR_RETURN(std::string_view text, readBodyText(request));
  TIDE_ASSIGN_OR_RETURN(std::vector<config::YamlNode> documents, config::parseYamlDocuments(text, kBodySource));

  const auto* plan_entry = findPlanEntry(documents);
  std::string patched;
  if (plan_entry == nullptr) {
    patched = withPlan(text, plan);
    text = patched;
  }
  TIDE_ASSIGN_OR_RETURN(model::Deployment deployment, config::parseDeployment(text, kBodySource));
  if (plan_entry != nullptr && deployment.plan != plan) {
    const std::string& key = plan_entry->first.scalar;
    std::string message = "names plan '" + deployment.plan + "' but the URL names '" + plan + "'";
    std::string location =
        kBodySource + ":" + std::to_string(plan_entry->second.line) + ":" + std::to_string(plan_entry->second.column);
    return Status::invalidArgument(location + ": " + key + ": " + message, {{key, message, location}});
  }
  return addAndReply(context, request, deployment);
}

Result<ApiResponse> addAndReply(ApiContext& context, const ApiRequest& request, const model::Deployment& deployment,
                                const Json& extra) {
  TIDE_ASSIGN_OR_RETURN(const bool dry_run, readDryRun(request));
  if (!dry_run) {
    TIDE_ASSIGN_OR_RETURN(model::Deployment created, addChecked(context, request.principal, deployment));
    return extra.empty() ? recordReply(created, 201) : recordReply(created, {}, 201, extra);
  }
  ledger::Ledger::Rehearsal rehearsal(context.ledger);
  TIDE_ASSIGN_OR_RETURN(model::Deployment would_be, addChecked(context, request.principal, deployment));
  TIDE_ASSIGN_OR_RETURN(model::Plan plan, context.ledger.plans().getPlan(deployment.plan));
  Json reply = extra;
  reply["dry_run"] = true;
  TIDE_ASSIGN_OR_RETURN(reply["rollout"], rolloutPreview(context, request.principal, plan, deployment));
  return recordReply(would_be, {}, 200, reply);
}

Result<model::Deployment> addChecked(ApiContext& context, const Principal& principal,
                                     const model::Deployment& deployment) {
  TIDE_RETURN_IF_ERROR(checkCommandAccess(context, principal, deployment));
  TIDE_ASSIGN_OR_RETURN(model::Plan owner, context.ledger.plans().getPlan(deployment.plan));
  TIDE_RETURN_IF_ERROR(checkDeploymentStrategy(context, owner, deployment));
  return context.ledger.plans().addDeployment(deployment, principal.name);
}

Result<ApiResponse> list(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(ledger::ListOptions options,
                        readListOptions(request, {{"state", model::statesOf(model::RecordKind::kDeployment)}}));
  const std::string& plan = request.param("name");
  TIDE_RETURN_IF_ERROR(context.ledger.plans().getPlan(plan).status());
  options.filters["plan"] = plan;
  TIDE_ASSIGN_OR_RETURN(ledger::Page<model::Deployment> page, context.ledger.plans().listDeployments(options));
  return pageReply(page);
}

Result<ApiResponse> get(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(model::Deployment deployment,
                        context.ledger.plans().getDeployment(request.param("name"), request.param("id")));
  return recordReply(deployment);
}

Result<ApiResponse> cancel(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"generation"}));
  TIDE_ASSIGN_OR_RETURN(ledger::Generation generation, readExpectedGeneration(request));
  TIDE_ASSIGN_OR_RETURN(
      model::Deployment deployment,
      context.ledger.plans().setDeploymentState(request.param("name"), request.param("id"), model::DeploymentState::kCancelled,
                                        generation, request.principal.name, "cancelled through the API"));
  return recordReply(deployment);
}

namespace {

// A rollout control (docs/architecture.md#rollouts) on behalf of the caller, recorded as a
// `deployment.control` event naming them. Body: optional {"reason"} (and {"full"} for
// promote, {"to"} for rollback: the earlier deployment to restore).
Result<ApiResponse> control(ApiContext& context, const ApiRequest& request, const std::string& name) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  const bool promote = name == "promote";
  const bool rollback = name == "rollback";
  TIDE_ASSIGN_OR_RETURN(Json body, promote    ? readOptionalJsonObject(request, {"reason", "full"})
                                   : rollback ? readOptionalJsonObject(request, {"reason", "to"})
                                              : readOptionalJsonObject(request, {"reason"}));
  TIDE_ASSIGN_OR_RETURN(std::optional<std::string> reason, readStringField(body, "reason"));
  TIDE_ASSIGN_OR_RETURN(std::optional<std::string> to, readStringField(body, "to"));
  if (to && to->empty()) {
    return Status::invalidArgument("body field 'to' must name a deployment", {{"to", "empty", ""}});
  }
  if (reason && reason->size() > 1024) {
    return Status::invalidArgument("body field 'reason' is longer than 1024 bytes",
                                   {{"reason", "longer than 1024 bytes", ""}});
  }
  std::string what = name;
  if (promote && body.contains("full") && !body["full"].is_null()) {
    if (!body["full"].is_boolean()) {
      return Status::invalidArgument("body field 'full' must be true or false", {{"full", "must be a boolean", ""}});
    }
    if (body["full"].get<bool>()) what = "promote_full";
  }
  TIDE_ASSIGN_OR_RETURN(model::Deployment deployment,
                        context.ledger.plans().controlDeployment(request.param("name"), request.param("id"), what,
                                                         reason.value_or(""), request.principal.name, to.value_or("")));
  return recordReply(deployment);
}

}  // namespace

Result<ApiResponse> promote(ApiContext& context, const ApiRequest& request) {
  return control(context, request, "promote");
}
Result<ApiResponse> abort(ApiContext& context, const ApiRequest& request) { return control(context, request, "abort"); }
Result<ApiResponse> pause(ApiContext& context, const ApiRequest& request) { return control(context, request, "pause"); }
Result<ApiResponse> resume(ApiContext& context, const ApiRequest& request) {
  return control(context, request, "resume");
}
Result<ApiResponse> rollback(ApiContext& context, const ApiRequest& request) {
  return control(context, request, "rollback");
}
Result<ApiResponse> retry(ApiContext& context, const ApiRequest& request) { return control(context, request, "retry"); }

// Approves the whole rollout (docs/architecture.md#approving-a-rollout): the caller's
// approval is kept with the deployment and given to each of its operations that waits for
// people, now and as the rollout asks for more, one approval and one audit record per
// operation, each under the rule a single approval follows. The four-eyes rule is checked
// once, against who added the deployment (who requests its operations). The reply is the
// deployment with "operations": what became of each that waited now.
Result<ApiResponse> approve(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(Json body, readOptionalJsonObject(request, {"reason"}));
  TIDE_ASSIGN_OR_RETURN(std::optional<std::string> reason, readStringField(body, "reason"));
  if (reason && reason->size() > 1024) {
    return Status::invalidArgument("body field 'reason' is longer than 1024 bytes",
                                   {{"reason", "longer than 1024 bytes", ""}});
  }
  const Principal& principal = request.principal;
  TIDE_ASSIGN_OR_RETURN(model::Deployment deployment,
                        context.ledger.plans().getDeployment(request.param("name"), request.param("id")));
  TIDE_RETURN_IF_ERROR(operations::checkFourEyes(context, principal, deployment.added_by));
  model::GivenApproval approval{principal.name, roleName(principal.role), false, reason.value_or(""), "", {}};
  TIDE_ASSIGN_OR_RETURN(deployment, context.ledger.plans().approveRollout(deployment.plan, deployment.deployment_id, approval));

  TIDE_ASSIGN_OR_RETURN(
      std::vector<model::Operation> waiting,
      listAll(context.ledger.operations(), &ledger::OperationRecords::listOperations,
              {{"plan", deployment.plan}, {"state", model::toString(model::OperationState::kPendingApproval)}}));
  Json outcomes = Json::array();
  for (const model::Operation& operation : waiting) {
    if (!model::inRolloutOf(operation, deployment)) continue;
    Json outcome{{"id", operation.meta.id}, {"type", operation.type}, {"meta_instance", operation.meta_instance}};
    Result<model::Operation> approved =
        operations::approveAs(context, principal, operation, {false, model::fromRolloutApproval(approval).reason, {}});
    if (approved.isOk()) {
      outcome["state"] = approved->state;
      outcome["approvals"] = model::describeApprovals(approved->decision, approved->requested_by);
    } else {
      // Refused for this one (a role or distinct_from its policies ask for, a soft deny to
      // override, or it moved on meanwhile): it waits for people as before.
      outcome["state"] = operation.state;
      outcome["refused"] = approved.status().message();
    }
    outcomes.push_back(std::move(outcome));
  }
  return recordReply(deployment, {}, 200, Json{{"operations", std::move(outcomes)}});
}

}  // namespace tide::api::deployments
