// /v1/control: the control loop's halt (docs/architecture.md#observer). The observer halts the
// loop when ledger and drivers disagree beyond the threshold; only an admin ends the halt.

#include "host/api/handlers.h"
#include "host/api/request_inputs.h"
#include "host/api/views.h"

namespace tide::api::control {

Result<ApiResponse> show(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(Json view, controlLoopView(context.ledger));
  return jsonReply(view);
}

Result<ApiResponse> resume(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(model::ControlHalt ended, context.ledger.audit().resumeControlLoop(request.principal.name));
  return jsonReply(Json{{"halted", false}, {"ended", ended}});
}

}  // namespace tide::api::control
