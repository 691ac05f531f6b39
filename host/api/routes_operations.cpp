// /v1/operations: what the engine is asked to do to meta instances.

#include "host/api/handlers.h"
#include "host/api/request_inputs.h"
#include "host/api/views.h"
#include "host/ledger/transitions.h"

namespace tide::api::operations {

Result<ApiResponse> list(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(ledger::ListOptions options,
                        readListOptions(request, {{"state", ledger::statesOf(ledger::RecordKind::kOperation)},
                                                  {"plan"},
                                                  {"type", operationTypes()},
                                                  {"meta_instance"}}));
  TIDE_ASSIGN_OR_RETURN(ledger::Page<ledger::Operation> page, context.ledger.listOperations(options));
  return pageReply(page);
}

Result<ApiResponse> get(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(int64_t id, readIdParam(request, "id"));
  TIDE_ASSIGN_OR_RETURN(ledger::Operation operation, context.ledger.getOperation(id));
  return recordReply(operation);
}

}  // namespace tide::api::operations
