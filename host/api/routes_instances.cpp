// /v1/instances: meta instances, each with its runtime instances.

#include "host/api/handlers.h"
#include "host/api/request_inputs.h"
#include "host/api/views.h"
#include "host/ledger/transitions.h"

namespace tide::api::instances {

Result<ApiResponse> list(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(
      ledger::ListOptions options,
      readListOptions(request, {{"plan"}, {"state", ledger::statesOf(ledger::RecordKind::kMetaInstance)}}));
  TIDE_ASSIGN_OR_RETURN(ledger::Page<ledger::MetaInstance> page, context.ledger.listMetaInstances(options));
  Json items = Json::array();
  for (const ledger::MetaInstance& meta : page.items) {
    TIDE_ASSIGN_OR_RETURN(Json view, instanceView(context.ledger, meta, /*with_operations=*/false));
    items.push_back(std::move(view));
  }
  Json body = {{"items", items}};
  if (page.next_after != 0) body["next_after"] = page.next_after;
  return jsonReply(body);
}

Result<ApiResponse> get(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(ledger::MetaInstance meta, context.ledger.getMetaInstance(request.param("name")));
  TIDE_ASSIGN_OR_RETURN(Json view, instanceView(context.ledger, meta, /*with_operations=*/true));
  ApiResponse response = jsonReply(view);
  response.headers.emplace_back("ETag", std::to_string(meta.meta.generation));
  return response;
}

}  // namespace tide::api::instances
