// /v1/audit/verify: the proof of the event chain (docs/architecture.md#retention-and-audit).
// A broken chain is an answer, not an error: 200 with ok false and the first broken link.

#include "host/api/handlers.h"

namespace tide::api::audit {

Result<ApiResponse> verify(ApiContext& context, const ApiRequest&) {
  TIDE_ASSIGN_OR_RETURN(model::AuditReport report, context.ledger.verifyAudit());
  return jsonReply(Json(report));
}

}  // namespace tide::api::audit
