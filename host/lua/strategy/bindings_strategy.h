#pragma once
// What rollout strategy scripts see beyond the sandbox (docs/architecture.md#rollouts):
//   verbs  create(n), update(x), delete(x | n), relocate(instance), pause(reason[, until]),
//          route(weights), complete([message]), fail(reason), rollback(reason); each
//          returns a read-only action table { action = "create", count = 2 } in the shape
//          of StrategyAction's to_json. x is an instance table, a list of instance
//          tables, a name or a list of names. Bad arguments raise errors naming the verb:
//          "create: count must be a non-negative integer".
//   r      the read-only rollout snapshot passed to reconcile(r), see pushRollout.

#include <span>

#include <lua.hpp>
#include <nlohmann/json.hpp>

#include "host/lua/runtime/sandbox.h"

namespace tide::lua {

std::span<const Verb> strategyVerbs();

// Pushes `r` for a snapshot normalized by normalizeRolloutSnapshot (strategy_interpreter.h):
// a read-only view with deployment, previous, plan, instances, new and old (the instances
// of each version; the same tables as in instances), count, counts, params, now (unix
// seconds), signals, and state: a plain mutable table, the only writable part of r. Leaves
// r and then the state table on the stack. Only inside LuaState::call.
void pushRollout(lua_State* L, const nlohmann::json& snapshot);

}  // namespace tide::lua
