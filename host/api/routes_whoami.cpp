// /v1/whoami: who the caller's token says they are, so a client (the web console) can show
// as actionable only what the role may do, and where the event log stands, so it can
// follow the events from now on (GET /v1/events?after=last_event_seq&wait=N).

#include "host/api/handlers.h"
#include "host/api/request_inputs.h"

namespace tide::api::whoami {

Result<ApiResponse> show(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  return jsonReply(Json{{"name", request.principal.name},
                        {"role", roleName(request.principal.role)},
                        {"namespaces", request.principal.namespaces},
                        {"last_event_seq", context.ledger.audit().lastEventSeq()}});
}

}  // namespace tide::api::whoami
