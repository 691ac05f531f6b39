// /v1/scripts and /v1/policies/evaluate: the Lua scripts the host runs (docs/architecture.md#the-lua-host) and
// dry runs of the approval policies (docs/architecture.md#approval). Without a ScriptRegistry they answer 503.

#include <optional>
#include <string>

#include "host/api/handlers.h"
#include "host/api/request_inputs.h"
#include "host/engine/policy_data_source.h"
#include "host/lua/policy/policy_data.h"
#include "host/lua/policy/policy_pool.h"
#include "host/lua/registry/script_registry.h"

namespace tide::api::scripts {
namespace {

Result<lua::ScriptRegistry*> registryOf(const ApiContext& context) {
  if (context.scripts == nullptr) return Status::unavailable("scripts are not loaded");
  return context.scripts;
}

Result<lua::PolicyPool*> policiesOf(const ApiContext& context) {
  if (context.policies == nullptr) return Status::unavailable("scripts are not loaded");
  return context.policies;
}

Status badField(const std::string& field, const std::string& problem) {
  return Status::invalidArgument(field + " " + problem, {{field, problem, ""}});
}

Json summaryJson(const lua::ReloadSummary& summary) {
  return Json{{"version", summary.version}, {"loaded", summary.loaded},     {"unchanged", summary.unchanged},
              {"failed", summary.failed},   {"unloaded", summary.unloaded}, {"restored", summary.restored},
              {"errors", summary.errors}};
}

// The op and the optional ctx fixture: {"op": {...}, "ctx": {...}} or the op itself.
struct EvaluateInput {
  Json op;
  std::optional<Json> ctx;
};

Result<EvaluateInput> readEvaluateInput(const ApiRequest& request) {
  Json body = Json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return badField("body", "must be JSON");
  if (!body.is_object()) return badField("body", "must be a JSON object");
  EvaluateInput input;
  input.op = body;
  if (body.contains("op")) {
    if (!body["op"].is_object()) return badField("op", "must be an object");
    input.op = body["op"];
    if (body.contains("ctx")) {
      if (!body["ctx"].is_object()) return badField("ctx", "must be an object");
      input.ctx = body["ctx"];
    }
  }
  if (!input.op.contains("type") || !input.op["type"].is_string()) {
    return badField("op.type", "must be a string (CREATE, UPDATE, ...)");
  }
  if (!input.op.contains("plan") || !input.op["plan"].is_object() || !input.op["plan"].contains("name") ||
      !input.op["plan"]["name"].is_string()) {
    return badField("op.plan", "must be an object with a name");
  }
  return input;
}

}  // namespace

Result<ApiResponse> list(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(lua::ScriptRegistry * registry, registryOf(context));
  return jsonReply(Json{{"items", Json(registry->list())}});
}

Result<ApiResponse> reload(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(lua::ScriptRegistry * registry, registryOf(context));
  return jsonReply(summaryJson(registry->reloadAll()));
}

// A dry run over the registry's current set with an engine borrowed from the pool (its Lua
// state is reused until the scripts change); nothing is recorded.
Result<ApiResponse> evaluate(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(lua::PolicyPool * policies, policiesOf(context));
  TIDE_ASSIGN_OR_RETURN(EvaluateInput input, readEvaluateInput(request));

  if (input.ctx) {
    auto now = lua::fixtureNow(*input.ctx, context.clock.now());
    if (!now.isOk()) return badField("ctx.now", now.status().message());
    FakeClock clock(*now);
    lua::SnapshotDataSource data(*input.ctx, clock);
    TIDE_ASSIGN_OR_RETURN(lua::Evaluation evaluation, policies->evaluate(input.op, data, clock));
    return jsonReply(Json(evaluation));
  }
  engine::LedgerPolicyDataSource data(context.ledger, context.clock);
  TIDE_ASSIGN_OR_RETURN(lua::Evaluation evaluation, policies->evaluate(input.op, data, context.clock));
  return jsonReply(Json(evaluation));
}

}  // namespace tide::api::scripts
