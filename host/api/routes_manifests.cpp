// POST /v1/manifests: a whole manifest (any mix of record kinds) applied atomically.

#include <optional>

#include "host/api/command_access.h"
#include "host/api/handlers.h"
#include "host/api/request_inputs.h"
#include "host/config/manifest.h"

namespace tide::api::manifests {

Result<ApiResponse> apply(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(std::string_view text, readBodyText(request));
  TIDE_ASSIGN_OR_RETURN(model::Manifest manifest, config::parseManifest(text, kBodySource));
  // Who may run raw commands, strategies and their params: as POST /v1/plans and deployments check them.
  for (const auto& plan : manifest.plans) {
    TIDE_RETURN_IF_ERROR(checkCommandAccess(context, request.principal, plan.value).withPrefix(plan.location));
    TIDE_RETURN_IF_ERROR(checkTrafficServed(context, plan.value).withPrefix(plan.location));
    TIDE_RETURN_IF_ERROR(
        checkStrategyParams(context, plan.value.strategy.script, plan.value.strategy.params, Json::object())
            .withPrefix(plan.location));
  }
  for (const auto& deployment : manifest.deployments) {
    TIDE_RETURN_IF_ERROR(checkCommandAccess(context, request.principal, deployment.value).withPrefix(deployment.location));
    std::optional<model::Plan> owner;
    for (const auto& plan : manifest.plans) {
      if (plan.value.name == deployment.value.plan) owner = plan.value;
    }
    if (!owner) {
      auto stored = context.ledger.plans().getPlan(deployment.value.plan);
      if (!stored.isOk()) continue;  // applyManifest names the missing plan
      owner = std::move(stored).value();
    }
    TIDE_RETURN_IF_ERROR(checkDeploymentStrategy(context, *owner, deployment.value).withPrefix(deployment.location));
  }
  TIDE_ASSIGN_OR_RETURN(ledger::AppliedManifest applied,
                        context.ledger.applyManifest(manifest, request.principal.name));
  return jsonReply({{"capabilities", applied.capabilities},
                    {"clusters", applied.clusters},
                    {"nodes", applied.nodes},
                    {"plans", applied.plans},
                    {"deployments", applied.deployments},
                    {"warnings", warningsJson(applied.warnings)}},
                   201);
}

}  // namespace tide::api::manifests
