#pragma once
// What policy scripts see beyond the sandbox (docs/architecture.md#approval):
//   verbs  approve([reason]), deny(reason), manual(reason), abstain([reason]); each
//          returns a read-only verdict table { verdict = "approve", reason = "..." }
//   ctx    now(), in_flight{...}, count{...}, recent_failures{...}, instances(plan),
//          node(name), log.info/warn/error(msg[, fields])
// ctx reads the PolicyDataSource set with setPolicyData; outside an evaluation its data
// functions raise.

#include <span>

#include <lua.hpp>

#include "host/lua/runtime/sandbox.h"

namespace tide::lua {

class LuaState;
class PolicyDataSource;

std::span<const Verb> policyVerbs();

// Pushes a read-only ctx table. One per state is enough: it reads the current data source.
void pushPolicyContext(lua_State* L);

// Makes `data` what ctx reads until cleared with nullptr. Not owned.
void setPolicyData(LuaState& state, PolicyDataSource* data);

}  // namespace tide::lua
