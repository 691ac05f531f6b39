// /v1/operations: what the engine is asked to do to meta instances, and the human half of
// their approval (docs/architecture.md#approval): an approver approves or rejects what the policies left in
// PENDING_APPROVAL, and an operator cancels what has not started (docs/architecture.md#cancelling-an-operation).

#include "host/api/handlers.h"
#include "host/api/request_inputs.h"
#include "host/api/views.h"
#include "host/model/transitions.h"

namespace tide::api::operations {
namespace {

// The operation with the policy decisions recorded for it, and its generation as ETag.
Result<ApiResponse> operationReply(ledger::Ledger& ledger, const model::Operation& operation) {
  TIDE_ASSIGN_OR_RETURN(std::vector<model::Decision> decisions, ledger.listDecisions(operation.meta.id));
  Json view = operation;
  view["decisions"] = decisions;
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
};

Result<OperationRequest> readOperationRequest(const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"generation"}));
  OperationRequest out;
  TIDE_ASSIGN_OR_RETURN(out.id, readIdParam(request, "id"));
  TIDE_ASSIGN_OR_RETURN(Json body, readOptionalJsonObject(request, {"reason", "generation"}));
  TIDE_ASSIGN_OR_RETURN(out.reason, readStringField(body, "reason"));
  TIDE_ASSIGN_OR_RETURN(out.generation, readDecisionGeneration(request, body));
  return out;
}

// The caller's reason, else "<verb> by <caller>".
std::string messageOf(const OperationRequest& asked, const std::string& verb, const std::string& actor) {
  return asked.reason && !asked.reason->empty() ? *asked.reason : verb + " by " + actor;
}

// Moves a PENDING_APPROVAL operation to `state` (APPROVED or REJECTED) on behalf of the
// caller, who is recorded as approved_by. `verb` is "approved" or "rejected".
Result<ApiResponse> decide(ApiContext& context, const ApiRequest& request, const std::string& state,
                           const std::string& verb) {
  TIDE_ASSIGN_OR_RETURN(OperationRequest asked, readOperationRequest(request));
  TIDE_ASSIGN_OR_RETURN(model::Operation operation, context.ledger.getOperation(asked.id));

  const std::string& actor = request.principal.name;
  const std::string subject = "operation " + std::to_string(asked.id);
  if (operation.state != "PENDING_APPROVAL") {
    return Status::conflict(subject + " is " + operation.state + "; only an operation in PENDING_APPROVAL can be " +
                            verb);
  }
  if (context.approver_must_differ && operation.requested_by == actor) {
    return Status::permissionDenied(subject + " was requested by " + actor + "; it must be " + verb +
                                    " by someone else (auth.approver_must_differ)");
  }
  // Without a generation from the client, the one read here: what is decided is exactly
  // the operation checked above, or nothing (409) if it changed meanwhile.
  if (!asked.generation) asked.generation = operation.meta.generation;
  TIDE_ASSIGN_OR_RETURN(
      model::Operation decided,
      context.ledger.setOperationState(asked.id, state, asked.generation, actor, messageOf(asked, verb, actor), actor));
  return operationReply(context.ledger, decided);
}

}  // namespace

Result<ApiResponse> list(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(ledger::ListOptions options,
                        readListOptions(request, {{"state", model::statesOf(model::RecordKind::kOperation)},
                                                  {"plan"},
                                                  {"type", operationTypes()},
                                                  {"meta_instance"}}));
  TIDE_ASSIGN_OR_RETURN(ledger::Page<model::Operation> page, context.ledger.listOperations(options));
  return pageReply(page);
}

Result<ApiResponse> get(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(int64_t id, readIdParam(request, "id"));
  TIDE_ASSIGN_OR_RETURN(model::Operation operation, context.ledger.getOperation(id));
  return operationReply(context.ledger, operation);
}

Result<ApiResponse> approve(ApiContext& context, const ApiRequest& request) {
  return decide(context, request, "APPROVED", "approved");
}

Result<ApiResponse> reject(ApiContext& context, const ApiRequest& request) {
  return decide(context, request, "REJECTED", "rejected");
}

// The ledger decides whether the operation has started, in the transaction that cancels it,
// so an executor picking it up at the same moment either runs it (409 here) or never does.
Result<ApiResponse> cancel(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(OperationRequest asked, readOperationRequest(request));
  const std::string& actor = request.principal.name;
  TIDE_ASSIGN_OR_RETURN(
      model::Operation cancelled,
      context.ledger.cancelOperation(asked.id, asked.generation, actor, messageOf(asked, "cancelled", actor)));
  return operationReply(context.ledger, cancelled);
}

}  // namespace tide::api::operations
