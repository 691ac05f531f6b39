#pragma once
// Rollout strategies deciding the next steps of a deployment (docs/architecture.md#rollouts).
//
// reconcile() runs one strategy script (scripts/rollout/<file>.lua, found by its declared
// name) on a rollout snapshot built by the host's deployment controller and returns the
// actions the script asked for, plus the script's own state to persist. The function is
// level-triggered: the host calls it on every pass with a fresh snapshot and turns each
// action into operations idempotently.
//
// The snapshot (JSON; fields may be missing, docs/lua.md has the full reference):
//   deployment {id, count, state, created_at, coordinates}, previous (or null),
//   plan {name, namespace, service_name},
//   instances [{name, deployment_id, version "new"|"old", state, healthy, node,
//               update_domain, ready_since, ready_seconds, coordinates,
//               operation {id, type, state} | null,
//               last_operation {id, type, state, message[, intent]} | null}],
//   plan_params, deployment_params, now (RFC 3339), now_unix, signals {promote,
//   promote_full, abort, pause, resume}, state (the previous StrategyResult::state),
//   metrics {provider: {query key: number | reason}} (the answers r.metric reads)
//
// Thread-safety: none. Each calling thread owns its StrategyEngine; the ScriptSetProvider
// is shared. When the provider publishes a new version the engine rebuilds its Lua state
// on the next call.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/clock.h"
#include "host/core/status.h"
#include "host/lua/runtime/lua_state.h"
#include "host/lua/runtime/script_set.h"
#include "host/lua/runtime/versioned_build.h"
#include "host/lua/strategy/strategy_params.h"
#include "host/model/analysis.h"

namespace tide::lua {

struct StrategyAction {
  enum class Kind { kCreate, kUpdate, kDelete, kRelocate, kPause, kRoute, kComplete, kFail, kRollback };
  Kind kind;
  int64_t count = 0;                   // create(n); delete(n) when given a number (host picks victims)
  std::vector<std::string> instances;  // meta instance names: update/delete/relocate
  std::string reason;                  // pause/fail/rollback; complete's optional message
  std::optional<double> until_unix;    // pause(reason, until): absolute unix seconds, if given
  Json weights;                        // route(weights): object like {"new": 10, "old": 90}
};

// "create", "update", "delete", "relocate", "pause", "route", "complete", "fail", "rollback".
const char* actionKindName(StrategyAction::Kind kind);

// {"action": "create", "count": 2}, {"action": "update", "instances": [...]},
// {"action": "delete", "count": 1} or {"action": "delete", "instances": [...]},
// {"action": "relocate", "instances": ["x"]}, {"action": "pause", "reason": "...",
// "until_unix": 1790000060}, {"action": "route", "weights": {...}},
// {"action": "complete"|"fail"|"rollback", "reason": "..."}: only the fields of the kind.
void to_json(Json& j, const StrategyAction& action);

// Reads actions in to_json's shape (what the verbs return, a list of them) into `out`. No-op
// actions (create(0), delete(0), update({}), delete({})) are left out. Errors name the
// offending item: "actions[2] update needs instances".
Status parseStrategyActions(const Json& actions, std::vector<StrategyAction>* out);

// "create(2), update(web-a, web-b), pause(\"waiting for promotion\")"; "nothing" when empty.
std::string describeActions(const std::vector<StrategyAction>& actions);

struct StrategyResult {
  std::vector<StrategyAction> actions;
  Json state = Json::object();  // r.state after reconcile (the script's own, persisted by the host)
  Json params;                  // the merged params the script saw
  std::vector<LogRecord> logs;  // what the script logged via tide.log.* and print
  // The metric queries the script asked through r.metric, each once (the host fetches them
  // for the next pass: docs/architecture.md#metric-analysis).
  std::vector<model::MetricQuery> metric_queries;
  std::string script_sha256;
  int64_t duration_us = 0;
};

class StrategyInterpreter;

class StrategyEngine {
 public:
  // `scripts` and `clock` must outlive the engine. `clock` supplies r.now when the snapshot
  // has neither now_unix nor now.
  StrategyEngine(const ScriptSetProvider& scripts, const Clock& clock, LuaLimits limits = {});
  ~StrategyEngine();

  // Runs the strategy named `script` (a ScriptSet strategy whose declared name is `script`)
  // on `snapshot`. Errors: kNotFound when no such strategy is loaded; kInvalidArgument
  // naming the param when a param is unknown to the script's declared `params` or has
  // another type (or naming the field when the snapshot itself is malformed); kUnprocessable / kDeadlineExceeded /
  // kResourceExhausted with "path:line: message" when the script errors, times out or runs out of memory, or returns
  // something that is not a list of actions (or names an instance the snapshot does not have, or one instance twice, or
  // more than one of complete/fail/rollback).
  Result<StrategyResult> reconcile(const std::string& script, Json snapshot);

  // Script defaults ← plan params ← deployment params, validated as above. For the API to
  // check a deployment's params before accepting it.
  Result<Json> resolveParams(const std::string& script, const Json& plan_params, const Json& deployment_params);

  // The params `script` declares, for a caller that checks each source of params on its
  // own (paramProblems). kNotFound when no such strategy is loaded; the script's load error
  // when it failed to load.
  Result<ParamSpecs> declaredParams(const std::string& script);

  // The ScriptSet version the engine's state was built from (0 before the first call).
  uint64_t loadedVersion() const;

 private:
  // The interpreter for the provider's current set, or why none could be built.
  Result<StrategyInterpreter*> refresh();

  const ScriptSetProvider& scripts_;
  const Clock& clock_;
  LuaLimits limits_;
  VersionedBuild<StrategyInterpreter> interpreter_;
};

}  // namespace tide::lua
