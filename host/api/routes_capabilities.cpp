// /v1/capabilities: compute capabilities (name, type, score).

#include <algorithm>
#include <cctype>

#include "host/api/handlers.h"
#include "host/api/request_inputs.h"
#include "host/config/manifest.h"

namespace tide::api::capabilities {

Result<ApiResponse> create(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(std::string_view text, readBodyText(request));
  TIDE_ASSIGN_OR_RETURN(model::Capability capability, config::parseCapability(text, kBodySource));
  TIDE_ASSIGN_OR_RETURN(model::Capability created,
                        context.ledger.inventory().createCapability(capability, request.principal.name));
  return recordReply(created, 201);
}

Result<ApiResponse> list(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(ledger::ListOptions options, readListOptions(request, {{"type"}}));
  // Types are stored upper-case; the filter matches them the way manifests spell them.
  if (auto it = options.filters.find("type"); it != options.filters.end()) {
    std::transform(it->second.begin(), it->second.end(), it->second.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  }
  TIDE_ASSIGN_OR_RETURN(ledger::Page<model::Capability> page, context.ledger.inventory().listCapabilities(options));
  return pageReply(page);
}

Result<ApiResponse> get(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(model::Capability capability, context.ledger.inventory().getCapability(request.param("name")));
  return recordReply(capability);
}

Result<ApiResponse> remove(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"generation"}));
  TIDE_ASSIGN_OR_RETURN(ledger::Generation generation, readExpectedGeneration(request));
  const std::string& name = request.param("name");
  TIDE_RETURN_IF_ERROR(context.ledger.inventory().deleteCapability(name, generation, request.principal.name));
  return deletedReply("capability", name);
}

}  // namespace tide::api::capabilities
