// /v1/nodes: machines (or logical nodes) instances are placed on.

#include "host/api/handlers.h"
#include "host/api/read_cache.h"
#include "host/api/request_inputs.h"
#include "host/api/views.h"
#include "host/config/manifest.h"
#include "host/model/transitions.h"

namespace tide::api::nodes {
namespace {

Result<ApiResponse> moveTo(ApiContext& context, const ApiRequest& request, const std::string& state) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"generation"}));
  TIDE_ASSIGN_OR_RETURN(ledger::Generation generation, readExpectedGeneration(request));
  TIDE_ASSIGN_OR_RETURN(model::Node node,
                        context.ledger.setNodeState(request.param("name"), state, generation, request.principal.name));
  return recordReply(node);
}

}  // namespace

Result<ApiResponse> create(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(std::string_view text, readBodyText(request));
  TIDE_ASSIGN_OR_RETURN(model::Node node, config::parseNode(text, kBodySource));
  TIDE_ASSIGN_OR_RETURN(model::Node created, context.ledger.createNode(node, request.principal.name));
  return recordReply(created, 201);
}

Result<ApiResponse> list(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(
      ledger::ListOptions options,
      readListOptions(request, {{"state", model::statesOf(model::RecordKind::kNode)}, {"cluster"}, {"update_domain"}}));
  TIDE_ASSIGN_OR_RETURN(ledger::Page<model::Node> page, context.ledger.listNodes(options));
  return pageReply(page);
}

Result<ApiResponse> get(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  const std::string& name = request.param("name");
  bool draining = false;
  auto read = [&]() -> Result<ApiResponse> {
    TIDE_ASSIGN_OR_RETURN(model::Node node, context.ledger.getNode(name));
    draining = node.state == model::node_state::kDraining;
    if (!draining) return recordReply(node);
    ApiResponse reply = recordReply(node);
    Json body = Json(node);
    TIDE_ASSIGN_OR_RETURN(body["drain"], drainProgressView(context.ledger, node));
    reply.body = dumpJson(body);
    return reply;
  };
  if (context.node_replies == nullptr) return read();
  // A draining node's progress follows operations, which the kept replies do not: never kept.
  return context.node_replies->get(name, read, [&](const ApiResponse&) { return !draining; });
}

Result<ApiResponse> remove(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"generation"}));
  TIDE_ASSIGN_OR_RETURN(ledger::Generation generation, readExpectedGeneration(request));
  const std::string& name = request.param("name");
  TIDE_RETURN_IF_ERROR(context.ledger.deleteNode(name, generation, request.principal.name));
  return deletedReply("node", name);
}

Result<ApiResponse> cordon(ApiContext& context, const ApiRequest& request) {
  return moveTo(context, request, "CORDONED");
}

Result<ApiResponse> uncordon(ApiContext& context, const ApiRequest& request) {
  return moveTo(context, request, "ALLOCATED");
}

Result<ApiResponse> drain(ApiContext& context, const ApiRequest& request) {
  return moveTo(context, request, "DRAINING");
}

}  // namespace tide::api::nodes
