// /v1/tokens: API tokens an admin issues and revokes (docs/api.md#tokens). A token's secret
// is in the reply to its creation and nowhere else: the ledger keeps its sha256.

#include <chrono>

#include "host/api/auth.h"
#include "host/api/handlers.h"
#include "host/api/request_inputs.h"

namespace tide::api::tokens {
namespace {

constexpr int64_t kMaxLifetimeDays = 3650;

// "<n>m", "<n>h" or "<n>d" (parseWholeDuration) → seconds; a detail naming `expires_in` otherwise.
Result<int64_t> lifetimeSeconds(const std::string& text) {
  const std::optional<std::chrono::seconds> lifetime = parseWholeDuration(text);
  if (!lifetime) {
    return Status::invalidArgument(
        "expires_in '" + text + "' must be a whole number of minutes, hours or days, such as 90m, 12h or 30d",
        {{"expires_in", "must be <n>m, <n>h or <n>d", text}});
  }
  if (*lifetime > std::chrono::days(kMaxLifetimeDays)) {
    return Status::invalidArgument("expires_in '" + text + "' is longer than " + std::to_string(kMaxLifetimeDays) + "d",
                                   {{"expires_in", "at most " + std::to_string(kMaxLifetimeDays) + "d", text}});
  }
  return lifetime->count();
}

// "namespaces": an array of strings, or absent for every namespace.
Result<std::vector<std::string>> readNamespaces(const Json& body) {
  std::vector<std::string> out;
  const auto found = body.find("namespaces");
  if (found == body.end()) return out;
  if (!found->is_array()) {
    return Status::invalidArgument("namespaces must be an array of namespace names",
                                   {{"namespaces", "must be an array of strings", found->dump()}});
  }
  for (size_t i = 0; i < found->size(); ++i) {
    const Json& item = (*found)[i];
    const std::string field = "namespaces[" + std::to_string(i) + "]";
    if (!item.is_string()) {
      return Status::invalidArgument(field + " must be a string", {{field, "must be a string", item.dump()}});
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

// A token as the API shows it, never with its digest. `source`: "ledger" or "config".
Json tokenJson(const model::ApiToken& token, const std::string& now, const std::string& source = "ledger") {
  model::TokenState state = model::TokenState::kActive;
  if (!token.revoked_at.empty()) {
    state = model::TokenState::kRevoked;
  } else if (!token.expires_at.empty() && token.expires_at <= now) {
    state = model::TokenState::kExpired;
  }
  return Json{{"name", token.name},
              {"role", token.role},
              {"source", source},
              {"state", state},
              {"created_at", token.created_at},
              {"created_by", token.created_by},
              {"expires_at", token.expires_at},
              {"revoked_at", token.revoked_at},
              {"revoked_by", token.revoked_by},
              {"node", token.node},
              {"namespaces", token.namespaces}};
}

}  // namespace

Result<ApiResponse> create(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(Json body,
                        readOptionalJsonObject(request, {"name", "role", "expires_in", "node", "namespaces"}));
  TIDE_ASSIGN_OR_RETURN(std::optional<std::string> name, readStringField(body, "name"));
  TIDE_ASSIGN_OR_RETURN(std::optional<std::string> role, readStringField(body, "role"));
  TIDE_ASSIGN_OR_RETURN(std::optional<std::string> expires_in, readStringField(body, "expires_in"));
  TIDE_ASSIGN_OR_RETURN(std::optional<std::string> node, readStringField(body, "node"));
  TIDE_ASSIGN_OR_RETURN(std::vector<std::string> namespaces, readNamespaces(body));
  if (!name) return Status::invalidArgument("a token needs a name", {{"name", "is required", ""}});
  if (!role) return Status::invalidArgument("a token needs a role", {{"role", "is required", ""}});
  std::string expires_at;
  if (expires_in) {
    TIDE_ASSIGN_OR_RETURN(int64_t seconds, lifetimeSeconds(*expires_in));
    expires_at = formatTimestamp(context.clock.now() + std::chrono::seconds(seconds));
  }
  TIDE_ASSIGN_OR_RETURN(IssuedToken issued, context.auth->issue(*name, *role, expires_at, request.principal.name,
                                                                node.value_or(""), namespaces));
  Json reply = tokenJson(issued.record, formatTimestamp(context.clock.now()));
  reply["token"] = issued.secret;
  return jsonReply(reply, 201);
}

Result<ApiResponse> list(ApiContext& context, const ApiRequest& request) {
  // The ledger's tokens a page at a time; the config file's, which have no id to page by,
  // come first on the first page.
  TIDE_ASSIGN_OR_RETURN(ledger::ListOptions options, readListOptions(request, {}));
  TIDE_ASSIGN_OR_RETURN(ledger::Page<model::ApiToken> stored, context.ledger.tokens().listTokens(options));
  const std::string now = formatTimestamp(context.clock.now());
  Json items = Json::array();
  if (options.after == 0) {
    for (const auto& token : context.auth->configTokens()) {
      model::ApiToken from_config;
      from_config.name = token.name;
      from_config.role = token.role;
      from_config.namespaces = token.namespaces;
      items.push_back(tokenJson(from_config, now, "config"));
    }
  }
  for (const auto& token : stored.items) items.push_back(tokenJson(token, now));
  Json body{{"items", std::move(items)}};
  if (stored.next_after != 0) body["next_after"] = stored.next_after;
  return jsonReply(body);
}

Result<ApiResponse> revoke(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(model::ApiToken revoked, context.auth->revoke(request.param("name"), request.principal.name));
  return jsonReply(tokenJson(revoked, formatTimestamp(context.clock.now())));
}

}  // namespace tide::api::tokens
