// /v1/nodes: machines (or logical nodes) instances are placed on.

#include "drivers/agent/agent_hub.h"
#include "host/api/handlers.h"
#include "host/api/read_cache.h"
#include "host/api/request_inputs.h"
#include "host/api/views.h"
#include "host/config/manifest.h"
#include "host/model/transitions.h"

namespace tide::api::nodes {
namespace {

Result<ApiResponse> moveTo(ApiContext& context, const ApiRequest& request, model::NodeState state) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"generation"}));
  TIDE_ASSIGN_OR_RETURN(ledger::Generation generation, readExpectedGeneration(request));
  TIDE_ASSIGN_OR_RETURN(model::Node node, context.ledger.inventory().setNodeState(request.param("name"), state,
                                                                                  generation, request.principal.name));
  return recordReply(node);
}

// For a node of an agent cluster (docs/agents.md), what its agent last said:
// {"reachable", "last_heartbeat", "heartbeat_age_s", "version"}; null for other nodes.
// `agent_clusters` caches which clusters are agent clusters across one request.
Json agentView(ApiContext& context, const model::Node& node, std::map<std::string, bool>& agent_clusters) {
  if (context.agents == nullptr || node.cluster.empty()) return nullptr;
  auto known = agent_clusters.find(node.cluster);
  if (known == agent_clusters.end()) {
    auto cluster = context.ledger.inventory().getCluster(node.cluster);
    known = agent_clusters.emplace(node.cluster, cluster.isOk() && cluster->driver_kind == "agent").first;
  }
  if (!known->second) return nullptr;
  const drivers::AgentNodeState state = context.agents->nodeState(node.name);
  Json view{{"reachable", state.reachable}, {"version", state.agent_version}};
  view["last_heartbeat"] = state.last_heartbeat ? Json(formatTimestamp(*state.last_heartbeat)) : Json(nullptr);
  if (state.last_heartbeat) {
    view["heartbeat_age_s"] =
        std::chrono::duration<double>(context.clock.now() - *state.last_heartbeat).count();
  } else {
    view["heartbeat_age_s"] = nullptr;
  }
  return view;
}

}  // namespace

Result<ApiResponse> create(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(std::string_view text, readBodyText(request));
  TIDE_ASSIGN_OR_RETURN(model::Node node, config::parseNode(text, kBodySource));
  std::vector<ErrorDetail> warnings;
  TIDE_ASSIGN_OR_RETURN(model::Node created,
                        context.ledger.inventory().createNode(node, request.principal.name, &warnings));
  return recordReply(created, warnings, 201);
}

Result<ApiResponse> list(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(
      ledger::ListOptions options,
      readListOptions(request, {{"state", model::statesOf(model::RecordKind::kNode)}, {"cluster"}, {"update_domain"}}));
  TIDE_ASSIGN_OR_RETURN(ledger::Page<model::Node> page, context.ledger.inventory().listNodes(options));
  ApiResponse reply = pageReply(page);
  if (context.agents == nullptr) return reply;
  Json body = Json::parse(reply.body);
  std::map<std::string, bool> agent_clusters;
  for (size_t i = 0; i < page.items.size(); ++i) {
    if (Json agent = agentView(context, page.items[i], agent_clusters); !agent.is_null()) body["items"][i]["agent"] = agent;
  }
  reply.body = dumpJson(body);
  return reply;
}

Result<ApiResponse> get(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  const std::string& name = request.param("name");
  bool changes_outside_ledger = false;
  auto read = [&]() -> Result<ApiResponse> {
    TIDE_ASSIGN_OR_RETURN(model::Node node, context.ledger.inventory().getNode(name));
    std::map<std::string, bool> agent_clusters;
    Json agent = agentView(context, node, agent_clusters);
    const bool draining = node.state == model::NodeState::kDraining;
    changes_outside_ledger = draining || !agent.is_null();
    if (!changes_outside_ledger) return recordReply(node);
    ApiResponse reply = recordReply(node);
    Json body = Json(node);
    if (draining) {
      TIDE_ASSIGN_OR_RETURN(body["drain"], drainProgressView(context.ledger, node));
    }
    if (!agent.is_null()) body["agent"] = std::move(agent);
    reply.body = dumpJson(body);
    return reply;
  };
  if (context.node_replies == nullptr) return read();
  // A draining node's progress follows operations, and an agent node's heartbeats, neither of
  // which the kept replies follow: never kept.
  return context.node_replies->get(name, read, [&](const ApiResponse&) { return !changes_outside_ledger; });
}

Result<ApiResponse> remove(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"generation"}));
  TIDE_ASSIGN_OR_RETURN(ledger::Generation generation, readExpectedGeneration(request));
  const std::string& name = request.param("name");
  TIDE_RETURN_IF_ERROR(context.ledger.inventory().deleteNode(name, generation, request.principal.name));
  return deletedReply("node", name);
}

Result<ApiResponse> cordon(ApiContext& context, const ApiRequest& request) {
  return moveTo(context, request, model::NodeState::kCordoned);
}

Result<ApiResponse> uncordon(ApiContext& context, const ApiRequest& request) {
  return moveTo(context, request, model::NodeState::kAllocated);
}

Result<ApiResponse> drain(ApiContext& context, const ApiRequest& request) {
  return moveTo(context, request, model::NodeState::kDraining);
}

}  // namespace tide::api::nodes
