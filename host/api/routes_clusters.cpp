// /v1/clusters: groups of nodes run by one driver.

#include "host/api/handlers.h"
#include "host/api/request_inputs.h"
#include "host/config/manifest.h"
#include "host/model/transitions.h"

namespace tide::api::clusters {
namespace {

Result<ApiResponse> moveTo(ApiContext& context, const ApiRequest& request, model::ClusterState state) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"generation"}));
  TIDE_ASSIGN_OR_RETURN(ledger::Generation generation, readExpectedGeneration(request));
  TIDE_ASSIGN_OR_RETURN(model::Cluster cluster, context.ledger.inventory().setClusterState(
                                                    request.param("name"), state, generation, request.principal.name));
  return recordReply(cluster);
}

}  // namespace

Result<ApiResponse> create(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(std::string_view text, readBodyText(request));
  TIDE_ASSIGN_OR_RETURN(model::Cluster cluster, config::parseCluster(text, kBodySource));
  TIDE_ASSIGN_OR_RETURN(model::Cluster created,
                        context.ledger.inventory().createCluster(cluster, request.principal.name));
  return recordReply(created, 201);
}

Result<ApiResponse> list(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(ledger::ListOptions options,
                        readListOptions(request, {{"state", model::statesOf(model::RecordKind::kCluster)}}));
  TIDE_ASSIGN_OR_RETURN(ledger::Page<model::Cluster> page, context.ledger.inventory().listClusters(options));
  return pageReply(page);
}

Result<ApiResponse> get(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(model::Cluster cluster, context.ledger.inventory().getCluster(request.param("name")));
  return recordReply(cluster);
}

Result<ApiResponse> remove(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"generation"}));
  TIDE_ASSIGN_OR_RETURN(ledger::Generation generation, readExpectedGeneration(request));
  const std::string& name = request.param("name");
  TIDE_RETURN_IF_ERROR(context.ledger.inventory().deleteCluster(name, generation, request.principal.name));
  return deletedReply("cluster", name);
}

Result<ApiResponse> activate(ApiContext& context, const ApiRequest& request) {
  return moveTo(context, request, model::ClusterState::kActive);
}

Result<ApiResponse> deactivate(ApiContext& context, const ApiRequest& request) {
  return moveTo(context, request, model::ClusterState::kInactive);
}

}  // namespace tide::api::clusters
