// /v1/agents/{node}/...: what node agents call (docs/agents.md#the-protocol). Role agent
// (the token's own node, checked by the server) or admin.

#include "drivers/agent/agent_hub.h"
#include "host/api/handlers.h"
#include "host/api/request_inputs.h"

namespace tide::api::agents {
namespace {

constexpr int64_t kDefaultWaitSeconds = 30;
constexpr int64_t kMaxWaitSeconds = 60;
constexpr size_t kMaxLogBytes = 1 << 20;

Result<drivers::AgentHub*> hubOf(const ApiContext& context) {
  if (context.agents == nullptr) return Status::unavailable("this host serves no node agents");
  return context.agents;
}

// The node named in the path, which must be in the ledger.
Result<model::Node> pathNode(ApiContext& context, const ApiRequest& request) {
  return context.ledger.inventory().getNode(request.param("node"));
}

}  // namespace

Result<ApiResponse> desired(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(drivers::AgentHub * hub, hubOf(context));
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"epoch", "revision", "wait"}));
  TIDE_ASSIGN_OR_RETURN(std::optional<int64_t> epoch, readIntegerParam(request, "epoch", 0, INT64_MAX));
  TIDE_ASSIGN_OR_RETURN(std::optional<int64_t> revision, readIntegerParam(request, "revision", 0, INT64_MAX));
  TIDE_ASSIGN_OR_RETURN(std::optional<int64_t> wait, readIntegerParam(request, "wait", 0, kMaxWaitSeconds));
  if (epoch.has_value() != revision.has_value()) {
    const std::string missing = epoch ? "revision" : "epoch";
    return Status::invalidArgument("epoch and revision go together; " + missing + " is missing",
                                   {{missing, "is required with " + std::string(epoch ? "epoch" : "revision"), ""}});
  }
  TIDE_ASSIGN_OR_RETURN(model::Node node, pathNode(context, request));
  std::optional<drivers::DocumentVersion> known;
  if (epoch) known = drivers::DocumentVersion{*epoch, *revision};
  std::chrono::seconds wait_for(wait.value_or(kDefaultWaitSeconds));
  std::shared_ptr<void> slot;
  if (known) {
    // Every long-poll slot held (agents.max_long_polls): answered at once, as it is; the
    // agent learns of a change from its next report's answer (docs/agents.md#scale).
    slot = context.agent_wait_slots ? context.agent_wait_slots->tryAcquire() : nullptr;
    if (!slot) wait_for = std::chrono::seconds(0);
  }
  const drivers::DesiredDocument document =
      hub->waitForDocument(node.name, known, wait_for, [&context] { return context.stopping.load(); });
  ApiResponse reply = jsonReply(drivers::desiredToJson(document));
  if (known && !slot) reply.headers.emplace_back("X-Tide-Long-Poll", "unavailable");
  return reply;
}

Result<ApiResponse> report(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(drivers::AgentHub * hub, hubOf(context));
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(std::string_view text, readBodyText(request));
  Json body = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return Status::invalidArgument("the report must be JSON", {{"body", "must be JSON", ""}});
  TIDE_ASSIGN_OR_RETURN(drivers::AgentReport parsed, drivers::reportFromJson(body));
  TIDE_ASSIGN_OR_RETURN(model::Node node, pathNode(context, request));
  const std::optional<model::Resources> resources = parsed.resources;
  const drivers::DocumentVersion current = hub->report(node.name, std::move(parsed));
  if (resources && node.total.cores == 0 && node.total.memory_gib == 0) {
    TIDE_RETURN_IF_ERROR(
        context.ledger.inventory().fillNodeTotal(node.name, *resources, request.principal.name).status());
  }
  return jsonReply(Json{{"epoch", current.epoch}, {"revision", current.revision}});
}

Result<ApiResponse> logs(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(drivers::AgentHub * hub, hubOf(context));
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  if (request.body.size() > kMaxLogBytes) {
    return Status::payloadTooLarge("a log tail may hold at most 1 MiB; send the last bytes");
  }
  TIDE_ASSIGN_OR_RETURN(model::Node node, pathNode(context, request));
  hub->postLog(node.name, request.param("id"), request.body);
  ApiResponse reply;
  reply.status = 204;
  reply.content_type.clear();
  return reply;
}

}  // namespace tide::api::agents
