// /v1/audit/verify: the proof of the event chain (docs/architecture.md#retention-and-audit).
// A broken chain is an answer, not an error: 200 with ok false and the first broken link.
// /v1/doctor: the same for the ledger's invariants and the drivers' inventories.

#include "host/api/handlers.h"

namespace tide::api::audit {

Result<ApiResponse> verify(ApiContext& context, const ApiRequest&) {
  TIDE_ASSIGN_OR_RETURN(model::AuditReport report, context.ledger.audit().verifyAudit());
  return jsonReply(Json(report));
}

// docs/architecture.md#tide-doctor: violations are an answer too (200, sound false).
Result<ApiResponse> doctor(ApiContext& context, const ApiRequest&) {
  if (!context.doctor) return Status::unavailable("the doctor does not run on this host");
  TIDE_ASSIGN_OR_RETURN(Json report, context.doctor());
  return jsonReply(report);
}

}  // namespace tide::api::audit
