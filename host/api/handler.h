#pragma once
// What a route handler sees and returns. Handlers are plain functions
// (ApiContext&, const ApiRequest&) → Result<ApiResponse>; they never see httplib, so the
// transport stays in server.cpp. A non-OK Result becomes the error envelope through
// errors.h: handlers never choose an HTTP error code themselves.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "drivers/driver.h"
#include "host/core/clock.h"
#include "host/core/status.h"
#include "host/ledger/ledger.h"
#include "host/lua/policy/policy_verdict.h"
#include "host/lua/runtime/lua_state.h"
#include "host/model/records.h"

namespace tide::api {

using Json = nlohmann::json;

class Authenticator;
class HttpMetrics;
template <class Value>
class ReadCache;
}  // namespace tide::api

namespace tide::drivers {
class AgentHub;
}  // namespace tide::drivers

namespace tide::lua {
class PolicyPool;
class ScriptRegistry;
}  // namespace tide::lua

namespace tide::api {

// kViewer..kAdmin are ordered: a principal holding one of them may do everything the lower
// ones may. kAgent stands beside that ladder: a node agent's role, which may call the agent
// routes of its own node and nothing else; admin may call them too (docs/agents.md#tokens).
// kPublic marks routes that need no token at all.
enum class Role { kPublic, kViewer, kOperator, kApprover, kAdmin, kAgent };

const char* roleName(Role role);
// "viewer" | "operator" | "approver" | "admin" | "agent"; nullopt otherwise.
std::optional<Role> parseRole(std::string_view name);
// Whether a principal holding `held` may call a route that needs `required`.
bool roleAllows(Role held, Role required);

// Who is calling. `name` is the actor recorded in ledger events.
struct Principal {
  std::string name;
  Role role = Role::kPublic;
  std::string node;  // for kAgent: the node its token is bound to
  // The namespaces `role` acts in (ApiToken::namespaces); empty: every namespace.
  std::vector<std::string> namespaces;
};

struct ApiRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> path_params;  // "{name}" in the pattern → "name"
  std::map<std::string, std::string> query;        // each parameter at most once
  std::string content_type;                        // without parameters, lower case
  std::string if_match;
  std::string last_event_id;
  std::string body;
  Principal principal;

  const std::string& param(const std::string& name) const;  // REQUIRES: in the pattern
};

// Writes one piece of a streamed body; false once the client is gone.
using StreamWriter = std::function<bool(std::string_view)>;

struct ApiResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, the body is streamed instead: called again and again until it returns
  // false. Each call may block briefly (it runs on one of the server's threads).
  std::function<bool(const StreamWriter&)> stream;
};

// Bounds how many requests may block at once (long polls, event streams), so waiting
// clients cannot take every server thread. Thread-safe.
class WaitSlots {
 public:
  explicit WaitSlots(int capacity) : capacity_(capacity) {}
  // A held slot, released when the last copy is destroyed; nullptr when all are taken.
  std::shared_ptr<void> tryAcquire();
  int used() const { return used_.load(); }

 private:
  int capacity_;
  std::atomic<int> used_{0};
};

// What handlers may use. Everything here outlives the server's threads.
struct ApiContext {
  ledger::Ledger& ledger;
  const Clock& clock;
  const HttpMetrics& metrics;
  // Set when the server begins to stop; blocking handlers return promptly once it is.
  const std::atomic<bool>& stopping;
  WaitSlots& wait_slots;
  // Null when the host runs without scripts (the script routes answer 503).
  lua::ScriptRegistry* scripts = nullptr;
  // The policy engines dry runs borrow (over `scripts`); null exactly when `scripts` is.
  lua::PolicyPool* policies = nullptr;
  lua::LuaLimits lua_limits = {};
  // Whether a person may approve or reject only operations someone else requested.
  bool approver_must_differ = true;
  // A meta instance's log (ServerOptions::read_logs), of one of its plan's applications when
  // `application` is not ""; null when the host cannot read logs (the logs route answers 503).
  std::function<Result<drivers::LogSlice>(const std::string& meta_instance, const std::string& application,
                                          const std::optional<drivers::LogCursor>& from, size_t max_bytes)>
      read_logs;
  // Appended to /metrics when set.
  std::function<std::string()> extra_metrics;
  // Issues, lists and revokes tokens (the /v1/tokens routes).
  Authenticator* auth = nullptr;
  // process.command_allow: the programs a non-admin may run as a raw command (command_access.h).
  std::vector<std::string> command_allow;
  // Replies to GET /v1/nodes/{name} by node name, kept until the ledger commits a change to
  // what they show (read_cache.h). Null: every request reads the ledger.
  ReadCache<ApiResponse>* node_replies = nullptr;
  // Runs the doctor's checks (GET /v1/doctor); null when the host cannot (the route answers 503).
  std::function<Result<Json>()> doctor;
  // The host's node agents (the /v1/agents routes, node views); null when it serves none.
  drivers::AgentHub* agents = nullptr;
  // Bounds the agents' desired-state long polls, apart from the other waiting requests.
  WaitSlots* agent_wait_slots = nullptr;
  // A plan's traffic as the engine last saw it (ServerOptions::traffic_view); null: no router.
  std::function<Json(const std::string& plan)> traffic_view;
  // Why this host runs no traffic router (ServerOptions::traffic_unavailable); "" when it runs one.
  std::string traffic_unavailable;
};

using Handler = Result<ApiResponse> (*)(ApiContext& context, const ApiRequest& request);

// --- replies ----------------------------------------------------------------------------

// Serialized as UTF-8, replacing invalid sequences instead of throwing.
std::string dumpJson(const Json& json);

ApiResponse jsonReply(const Json& body, int status = 200);

// [{field, message, location}]: what a write accepted but the caller should look at
// (docs/api.md#warnings).
Json warningsJson(const std::vector<ErrorDetail>& warnings);

// One record, with `ETag: <generation>` for optimistic concurrency.
template <class Record>
ApiResponse recordReply(const Record& record, int status = 200) {
  ApiResponse response = jsonReply(Json(record), status);
  response.headers.emplace_back("ETag", std::to_string(record.meta.generation));
  return response;
}

// recordReply with `warnings` (warningsJson) beside the record's fields, and `extra` keys.
template <class Record>
ApiResponse recordReply(const Record& record, const std::vector<ErrorDetail>& warnings, int status,
                        const Json& extra = Json::object()) {
  Json body = record;
  body["warnings"] = warningsJson(warnings);
  for (const auto& [key, value] : extra.items()) body[key] = value;
  ApiResponse response = jsonReply(body, status);
  response.headers.emplace_back("ETag", std::to_string(record.meta.generation));
  return response;
}

// {"items":[...], "next_after": N}; next_after only when there is more.
template <class Record>
ApiResponse pageReply(const ledger::Page<Record>& page) {
  Json body = {{"items", Json(page.items)}};
  if (page.next_after != 0) body["next_after"] = page.next_after;
  return jsonReply(body);
}

// {"deleted": true, "kind": "node", "name": "..."}
ApiResponse deletedReply(std::string_view kind, std::string_view name);

// --- what people ask for ---------------------------------------------------------------

// Operations people ask for outrank the controller's (priority 0), so a user's operation
// supersedes a controller operation that is not approved yet (docs/architecture.md#records-and-states).
constexpr int64_t kUserOperationPriority = 10;

// An operation of `type` the caller asks for (its meta_instance left to the caller): intent
// "user", requested by the caller, priority kUserOperationPriority, message `reason`.
model::Operation userOperation(const ApiRequest& request, model::OperationType type, const std::string& reason);

}  // namespace tide::api
