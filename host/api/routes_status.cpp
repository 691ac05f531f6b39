// /v1/status: the fleet at a glance (docs/api.md#status): each plan's desired and running
// instances, the rollouts that are held and why, and the scripts whose current content
// failed to load.

#include "host/api/handlers.h"
#include "host/api/request_inputs.h"
#include "host/api/views.h"
#include "host/lua/registry/script_registry.h"

namespace tide::api::status {

Result<ApiResponse> show(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(Json view, fleetStatusView(context.ledger));
  // stale: an older version runs because the file's current content failed; failed: none runs.
  Json failed = Json::array();
  if (context.scripts != nullptr) {
    for (const lua::ScriptStatus& script : context.scripts->list()) {
      if (script.status != "active") failed.push_back(script);
    }
  }
  view["failed_scripts"] = std::move(failed);
  return jsonReply(view);
}

}  // namespace tide::api::status
