// /v1/operations: what the engine is asked to do to meta instances, and the human half of
// their approval (docs/architecture.md#approval): approvers approve (as many as the operation
// needs, overriding a soft deny with a reason) or reject what the policies left in
// PENDING_APPROVAL, and an operator cancels what has not started (docs/architecture.md#cancelling-an-operation).

#include "host/api/handlers.h"
#include "host/api/request_inputs.h"
#include "host/api/views.h"
#include "host/model/approvals.h"
#include "host/model/transitions.h"

namespace tide::api::operations {
namespace {

// The operation with the policy decisions recorded for it, and its generation as ETag.
Result<ApiResponse> operationReply(ledger::Ledger& ledger, const model::Operation& operation) {
  TIDE_ASSIGN_OR_RETURN(std::vector<model::Decision> decisions, ledger.operations().listDecisions(operation.meta.id));
  Json view = operation;
  view["decisions"] = decisions;
  if (operation.decision.is_object() && operation.decision.contains("approvals")) {
    const model::ApprovalState state = model::approvalStateOf(operation.decision);
    Json counted = Json::array();
    for (const model::GivenApproval* g : model::countedApprovals(state, operation.requested_by)) {
      counted.push_back(g->actor);
    }
    view["approvals"] = Json{{"required", state.requirement.approvals},
                             {"counted", std::move(counted)},
                             {"still_needed", operation.state == model::OperationState::kPendingApproval
                                                  ? model::approvalsStillNeeded(state, operation.requested_by)
                                                  : 0},
                             {"summary", model::describeApprovals(operation.decision, operation.requested_by)}};
  }
  ApiResponse response = jsonReply(view);
  response.headers.emplace_back("ETag", std::to_string(operation.meta.generation));
  return response;
}

// The generation the client read, from If-Match, ?generation= or the body's "generation";
// nullopt when none is given. Two that disagree are an error.
Result<ledger::Generation> readDecisionGeneration(const ApiRequest& request, const Json& body) {
  TIDE_ASSIGN_OR_RETURN(ledger::Generation from_request, readExpectedGeneration(request));
  TIDE_ASSIGN_OR_RETURN(std::optional<int64_t> from_body, readIntegerField(body, "generation", 1, INT64_MAX));
  if (from_request && from_body && *from_request != *from_body) {
    std::string message = "disagrees with the If-Match header or the generation query parameter";
    return Status::invalidArgument("body field 'generation' " + message, {{"generation", message, ""}});
  }
  return from_body ? ledger::Generation(from_body) : from_request;
}

// What a decision or a cancel names: the operation, the caller's reason, and the
// generation the caller read.
struct OperationRequest {
  int64_t id = 0;
  std::optional<std::string> reason;
  ledger::Generation generation;
  bool override = false;  // approve only: override a soft deny
};

// `fields`: the body keys the call accepts.
Result<OperationRequest> readOperationRequest(const ApiRequest& request,
                                              std::initializer_list<std::string_view> fields = {"reason", "generation"}) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"generation"}));
  OperationRequest out;
  TIDE_ASSIGN_OR_RETURN(out.id, readIdParam(request, "id"));
  TIDE_ASSIGN_OR_RETURN(Json body, readOptionalJsonObject(request, fields));
  TIDE_ASSIGN_OR_RETURN(out.reason, readStringField(body, "reason"));
  TIDE_ASSIGN_OR_RETURN(out.generation, readDecisionGeneration(request, body));
  TIDE_ASSIGN_OR_RETURN(std::optional<bool> override, readBoolField(body, "override"));
  out.override = override.value_or(false);
  return out;
}

// The caller's reason, else "<verb> by <caller>".
std::string messageOf(const OperationRequest& asked, const std::string& verb, const std::string& actor) {
  return asked.reason && !asked.reason->empty() ? *asked.reason : verb + " by " + actor;
}

// Refuses a decision on `operation` unless it waits for people; a hard deny is named, since
// nobody can override it (403 to an override, 409 otherwise).
Status checkWaiting(const model::Operation& operation, const std::string& verb, bool override) {
  if (operation.state == model::OperationState::kPendingApproval) return Status::ok();
  const std::string subject = "operation " + std::to_string(operation.meta.id);
  const bool hard_denied = operation.state == model::OperationState::kRejected && operation.approved_by == "policy" &&
                           operation.decision.is_object() && !operation.decision.value("overridable", false);
  if (hard_denied) {
    const std::string message = subject + " was rejected by policy (" +
                                operation.decision.value("summary", std::string()) + ")" +
                                "; a hard deny cannot be overridden by anyone";
    return override ? Status::permissionDenied(message) : Status::conflict(message);
  }
  return Status::conflict(subject + " is " + model::toString(operation.state) +
                          "; only an operation in PENDING_APPROVAL can be " + verb);
}

// model::judgeApproval for `principal` deciding `operation` now, under the host's four-eyes
// rule (auth.approver_must_differ).
// Both parties with their chains of minters (model::sameParty).
Result<model::ApprovalRuling> judge(const ApiContext& context, const model::Operation& operation,
                                    const Principal& principal, model::ApprovalAct act, bool override,
                                    const std::string& reason) {
  TIDE_ASSIGN_OR_RETURN(std::vector<std::string> requester_minted_by, context.ledger.tokens().mintersOf(operation.requested_by));
  TIDE_ASSIGN_OR_RETURN(std::vector<std::string> minted_by, context.ledger.tokens().mintersOf(principal.name));
  return model::judgeApproval(
      {operation.meta.id, operation.requested_by, model::approvalStateOf(operation.decision), 1,
       context.approver_must_differ, std::move(requester_minted_by)},
      model::Approver{principal.name, roleName(principal.role), act, override, reason, std::move(minted_by)});
}

}  // namespace

Result<model::Operation> approveAs(ApiContext& context, const Principal& principal, const model::Operation& operation,
                                   ApprovalAsked asked) {
  TIDE_RETURN_IF_ERROR(checkWaiting(operation, "approved", asked.override));
  TIDE_ASSIGN_OR_RETURN(model::ApprovalRuling ruling, judge(context, operation, principal, model::ApprovalAct::kApprove,
                                                            asked.override, asked.reason));
  TIDE_RETURN_IF_ERROR(ruling.allowed);
  // Without a generation from the client, the one read here: what is approved is exactly
  // the operation checked above, or nothing (409) if it changed meanwhile.
  if (!asked.generation) asked.generation = operation.meta.generation;
  model::GivenApproval approval{principal.name, roleName(principal.role), asked.override, asked.reason, "", {}};
  return context.ledger.operations().addApproval(operation.meta.id, asked.generation, approval);
}

Status checkFourEyes(ApiContext& context, const Principal& principal, const std::string& requested_by) {
  model::Operation requested;
  requested.requested_by = requested_by;
  TIDE_ASSIGN_OR_RETURN(model::ApprovalRuling ruling,
                        judge(context, requested, principal, model::ApprovalAct::kApprove, false, ""));
  return ruling.allowed;
}

Result<ApiResponse> list(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(ledger::ListOptions options,
                        readListOptions(request,
                                        {{"state", model::statesOf(model::RecordKind::kOperation), true},
                                         {"plan"},
                                         {"type", model::namesOf<model::OperationType>()},
                                         {"meta_instance"},
                                         {"actor"}},
                                        {"since", "until"}));
  TIDE_RETURN_IF_ERROR(readTimeWindow(request, context.clock.now(), options));
  TIDE_ASSIGN_OR_RETURN(ledger::Page<model::Operation> page, context.ledger.operations().listOperations(options));
  return pageReply(page);
}

Result<ApiResponse> get(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(int64_t id, readIdParam(request, "id"));
  TIDE_ASSIGN_OR_RETURN(model::Operation operation, context.ledger.operations().getOperation(id));
  return operationReply(context.ledger, operation);
}

// One approval: model::judgeApproval, with the host's four-eyes rule, says whether it counts;
// the ledger asks it again in the transaction that records it and moves the operation to
// APPROVED once enough do. The reply says how many are still needed.
Result<ApiResponse> approve(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(OperationRequest asked, readOperationRequest(request, {"reason", "generation", "override"}));
  TIDE_ASSIGN_OR_RETURN(model::Operation operation, context.ledger.operations().getOperation(asked.id));
  TIDE_ASSIGN_OR_RETURN(
      model::Operation approved,
      approveAs(context, request.principal, operation, {asked.override, asked.reason.value_or(""), asked.generation}));
  return operationReply(context.ledger, approved);
}

// Any rejection rejects, however many approvals were given; model::judgeApproval says who
// may give it.
Result<ApiResponse> reject(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(OperationRequest asked, readOperationRequest(request));
  TIDE_ASSIGN_OR_RETURN(model::Operation operation, context.ledger.operations().getOperation(asked.id));
  const std::string& actor = request.principal.name;
  TIDE_RETURN_IF_ERROR(checkWaiting(operation, "rejected", false));
  TIDE_ASSIGN_OR_RETURN(
      model::ApprovalRuling ruling,
      judge(context, operation, request.principal, model::ApprovalAct::kReject, false, asked.reason.value_or("")));
  TIDE_RETURN_IF_ERROR(ruling.allowed);
  if (!asked.generation) asked.generation = operation.meta.generation;
  TIDE_ASSIGN_OR_RETURN(model::Operation rejected,
                        context.ledger.operations().setOperationState(asked.id, model::OperationState::kRejected, asked.generation,
                                                         actor, messageOf(asked, "rejected", actor), actor));
  return operationReply(context.ledger, rejected);
}

// The ledger decides whether the operation has started, in the transaction that cancels it,
// so an executor picking it up at the same moment either runs it (409 here) or never does.
Result<ApiResponse> cancel(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(OperationRequest asked, readOperationRequest(request));
  const std::string& actor = request.principal.name;
  TIDE_ASSIGN_OR_RETURN(
      model::Operation cancelled,
      context.ledger.operations().cancelOperation(asked.id, asked.generation, actor, messageOf(asked, "cancelled", actor)));
  return operationReply(context.ledger, cancelled);
}

}  // namespace tide::api::operations
