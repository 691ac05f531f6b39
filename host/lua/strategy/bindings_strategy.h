#pragma once
// What rollout strategy scripts see beyond the sandbox (docs/architecture.md#rollouts):
//   verbs  create(n), update(x), delete(x | n), relocate(instance), pause(reason[, until]),
//          route(weights), complete([message]), fail(reason), rollback(reason); each
//          returns a read-only action table { action = "create", count = 2 } in the shape
//          of StrategyAction's to_json. x is an instance table, a list of instance
//          tables, a name or a list of names. Bad arguments raise errors naming the verb:
//          "create: count must be a non-negative integer".
//   r      the read-only rollout snapshot passed to reconcile(r), see pushRollout.
//   r.metric(provider, query[, options]) --> number | nil, reason[, pending]: the answer the
//          host already has for the query (docs/architecture.md#metric-analysis); no I/O. The
//          query is recorded in the MetricBoard, so the host fetches it for the next pass;
//          pending is true when nothing was fetched for it yet. At most 64 distinct queries
//          a reconcile: beyond, nil and why, and nothing is asked.

#include <set>
#include <span>

#include <lua.hpp>
#include <nlohmann/json.hpp>

#include "host/lua/runtime/lua_state.h"
#include "host/lua/runtime/sandbox.h"
#include "host/model/analysis.h"

namespace tide::lua {

std::span<const Verb> strategyVerbs();

// Pushes `r` for a snapshot normalized by normalizeRolloutSnapshot (strategy_interpreter.h):
// a read-only view with deployment, previous, plan, instances, new and old (the instances
// of each version; the same tables as in instances), count, counts, params, now (unix
// seconds), signals, and state: a plain mutable table, the only writable part of r. Leaves
// r and then the state table on the stack. Only inside LuaState::call.
void pushRollout(lua_State* L, const nlohmann::json& snapshot);

// What r.metric reads and records during one reconcile: `answers` is the snapshot's
// `metrics` ({provider: {query key: number | "why there is none"}}, MetricQuery::key), and
// every query asked lands in `asked`, once however often it was asked.
struct MetricBoard {
  const nlohmann::json* answers = nullptr;
  std::set<model::MetricQuery> asked;
};

// Sets the board r.metric uses (nullptr: none; r.metric then answers nil and why). The
// board must outlive its use; the caller clears it after the call.
void setMetricBoard(LuaState& state, MetricBoard* board);

}  // namespace tide::lua
