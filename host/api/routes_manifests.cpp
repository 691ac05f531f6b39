// POST /v1/manifests: a whole manifest (any mix of record kinds) applied atomically.

#include "host/api/handlers.h"
#include "host/api/request_inputs.h"
#include "host/config/manifest.h"

namespace tide::api::manifests {

Result<ApiResponse> apply(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(std::string_view text, readBodyText(request));
  TIDE_ASSIGN_OR_RETURN(config::Manifest manifest, config::parseManifest(text, kBodySource));
  TIDE_ASSIGN_OR_RETURN(ledger::AppliedManifest applied,
                        context.ledger.applyManifest(manifest, request.principal.name));
  return jsonReply({{"capabilities", applied.capabilities},
                    {"clusters", applied.clusters},
                    {"nodes", applied.nodes},
                    {"plans", applied.plans},
                    {"deployments", applied.deployments}},
                   201);
}

}  // namespace tide::api::manifests
