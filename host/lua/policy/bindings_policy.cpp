#include "host/lua/policy/bindings_policy.h"

#include <string>

#include "host/lua/policy/policy_data.h"
#include "host/model/approvals.h"
#include "host/lua/runtime/bindings_base.h"
#include "host/lua/runtime/bindings_json.h"
#include "host/lua/runtime/bindings_readonly.h"
#include "host/lua/runtime/bindings_tide.h"
#include "host/lua/runtime/guard.h"
#include "host/lua/runtime/lua_state.h"

namespace tide::lua {
namespace {

char kPolicyDataKey;  // LuaState context: the PolicyDataSource of the evaluation in progress

constexpr size_t kMaxReasonBytes = 1024;

// Registry keys of the verdicts approve() and abstain() return without a reason.
char kReasonlessApproveKey;
char kReasonlessAbstainKey;

// Pushes the read-only verdict table { verdict = `verdict`, reason = "" }, made once per
// state and kept in the registry under `key`: verdicts are immutable, so every reasonless
// approve() (or abstain()) can return the same one.
void pushReasonlessVerdict(lua_State* L, const char* verdict, void* key) {
  lua_pushlightuserdata(L, key);
  lua_rawget(L, LUA_REGISTRYINDEX);
  if (!lua_isnil(L, -1)) return;
  lua_pop(L, 1);
  lua_createtable(L, 0, 2);
  lua_pushstring(L, verdict);
  lua_setfield(L, -2, "verdict");
  lua_pushliteral(L, "");
  lua_setfield(L, -2, "reason");
  pushReadOnly(L, -1);
  lua_replace(L, -2);
  lua_pushlightuserdata(L, key);
  lua_pushvalue(L, -2);
  lua_rawset(L, LUA_REGISTRYINDEX);
}

// `shared_key`: where the reasonless verdict is kept, for verbs whose reason is optional.
int pushVerdict(lua_State* L, const char* verdict, bool reason_required, void* shared_key = nullptr) {
  if (reason_required) {
    luaL_checkstring(L, 1);
  } else if (!lua_isnoneornil(L, 1)) {
    luaL_checkstring(L, 1);
  } else {
    pushReasonlessVerdict(L, verdict, shared_key);
    return 1;
  }
  size_t len = 0;
  const char* reason = lua_isstring(L, 1) ? lua_tolstring(L, 1, &len) : "";
  if (reason_required && len == 0) return luaL_error(L, "%s() needs a reason", verdict);
  lua_createtable(L, 0, 2);
  lua_pushstring(L, verdict);
  lua_setfield(L, -2, "verdict");
  lua_pushlstring(L, reason, len < kMaxReasonBytes ? len : kMaxReasonBytes);
  lua_setfield(L, -2, "reason");
  pushReadOnly(L, -1);
  return 1;
}

int approveVerb(lua_State* L) { return pushVerdict(L, "approve", false, &kReasonlessApproveKey); }
int denyVerb(lua_State* L) { return pushVerdict(L, "deny", true); }

// Bounds of manual{...}: a list of names longer than a team is a typo.
constexpr lua_Integer kMaxApprovals = model::kMaxMinApprovals;
constexpr lua_Integer kMaxDistinctFrom = 32;

// Copies manual{...}'s distinct_from (at `index`, a list of names) into the table on top.
void copyDistinctFrom(lua_State* L, int index) {
  if (lua_type(L, index) != LUA_TTABLE) luaL_error(L, "manual{...}: distinct_from must be a list of names");
  const lua_Integer n = static_cast<lua_Integer>(lua_objlen(L, index));
  if (n > kMaxDistinctFrom) luaL_error(L, "manual{...}: distinct_from names at most %d", int(kMaxDistinctFrom));
  lua_createtable(L, static_cast<int>(n), 0);
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, index, i);
    if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "manual{...}: distinct_from must be a list of names");
    lua_rawseti(L, -2, i);
  }
}

// manual(reason), or manual{ reason =, approvals =, role =, distinct_from = {...} }: the
// table form asks for several approvals (docs/lua.md#asking-for-several-approvals). Its reason is optional.
int manualVerb(lua_State* L) {
  if (lua_type(L, 1) != LUA_TTABLE) return pushVerdict(L, "manual", true);
  lua_pushnil(L);
  while (lua_next(L, 1) != 0) {
    const char* key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    const std::string_view name(key);
    if (name != "reason" && name != "approvals" && name != "role" && name != "distinct_from") {
      return luaL_error(L, "manual{...}: unknown field '%s' (allowed: reason, approvals, role, distinct_from)", key);
    }
    lua_pop(L, 1);
  }
  lua_createtable(L, 0, 5);
  const int verdict = lua_gettop(L);
  lua_pushliteral(L, "manual");
  lua_setfield(L, verdict, "verdict");

  lua_getfield(L, 1, "approvals");
  lua_Integer approvals = 1;
  if (!lua_isnil(L, -1)) {
    const lua_Number n = lua_type(L, -1) == LUA_TNUMBER ? lua_tonumber(L, -1) : 0;
    approvals = static_cast<lua_Integer>(n);
    if (static_cast<lua_Number>(approvals) != n || approvals < 1 || approvals > kMaxApprovals) {
      return luaL_error(L, "manual{...}: approvals must be a whole number from 1 to %d", int(kMaxApprovals));
    }
  }
  lua_pop(L, 1);
  lua_pushinteger(L, approvals);
  lua_setfield(L, verdict, "approvals");

  lua_getfield(L, 1, "role");
  if (!lua_isnil(L, -1)) {
    const char* role = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
    const std::string problem = model::checkRequirementRole(role);
    if (!problem.empty() || *role == '\0') {
      return luaL_error(L, "manual{...}: %s", problem.empty() ? "role must be a role name" : problem.c_str());
    }
    lua_setfield(L, verdict, "role");
  } else {
    lua_pop(L, 1);
  }

  lua_getfield(L, 1, "distinct_from");
  if (!lua_isnil(L, -1)) {
    copyDistinctFrom(L, lua_gettop(L));
    lua_setfield(L, verdict, "distinct_from");
  }
  lua_pop(L, 1);

  lua_getfield(L, 1, "reason");
  size_t len = 0;
  const char* reason = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : nullptr;
  if (!lua_isnil(L, -1) && !reason) return luaL_error(L, "manual{...}: reason must be a string");
  if (len > 0) {
    lua_pushlstring(L, reason, len < kMaxReasonBytes ? len : kMaxReasonBytes);
  } else {
    const std::string text = std::to_string(approvals) + (approvals == 1 ? " approval" : " approvals") + " required";
    lua_pushlstring(L, text.data(), text.size());
  }
  lua_setfield(L, verdict, "reason");
  lua_pop(L, 1);
  pushReadOnly(L, verdict);
  return 1;
}
int abstainVerb(lua_State* L) { return pushVerdict(L, "abstain", false, &kReasonlessAbstainKey); }

const Verb kPolicyVerbs[] = {
    {"abstain", guarded<abstainVerb>},
    {"approve", guarded<approveVerb>},
    {"deny", guarded<denyVerb>},
    {"manual", guarded<manualVerb>},
};

PolicyDataSource& dataSource(lua_State* L, const char* function) {
  auto* data = static_cast<PolicyDataSource*>(LuaState::from(L).context(&kPolicyDataKey));
  if (!data) luaL_error(L, "ctx.%s is only available while a policy decides", function);
  return *data;
}

// Reads the optional filter table at index 1 into JSON, refusing keys outside `allowed`.
Json readFilter(lua_State* L, const char* function, std::initializer_list<const char*> allowed) {
  if (lua_isnoneornil(L, 1)) return Json::object();
  if (lua_type(L, 1) != LUA_TTABLE && !isReadOnly(L, 1)) {
    luaL_error(L, "ctx.%s expects a filter table, e.g. ctx.%s{ plan = op.plan.name }", function, function);
  }
  auto filter = toJson(L, 1);
  if (!filter.isOk() || !filter->is_object()) {
    luaL_error(L, "ctx.%s: the filter must be a table of named fields", function);
  }
  for (const auto& [key, value] : filter->items()) {
    bool known = false;
    for (const char* name : allowed) known = known || key == name;
    if (!known) {
      std::string names;
      for (const char* name : allowed) names += names.empty() ? name : std::string(", ") + name;
      luaL_error(L, "ctx.%s: unknown filter field '%s' (allowed: %s)", function, key.c_str(), names.c_str());
    }
  }
  return std::move(filter).value();
}

int pushCount(lua_State* L, const char* function, const Result<int64_t>& n) {
  if (!n.isOk()) return luaL_error(L, "ctx.%s: %s", function, n.status().message().c_str());
  lua_pushnumber(L, static_cast<lua_Number>(*n));
  return 1;
}

int ctxNow(lua_State* L) {
  pushTimeTable(L, LuaState::from(L).clock().now());
  return 1;
}

int ctxInFlight(lua_State* L) {
  const Json filter = readFilter(L, "in_flight", {"plan", "namespace", "update_domain", "node", "type"});
  PolicyDataSource& data = dataSource(L, "in_flight");
  return pushCount(L, "in_flight", LuaState::from(L).hostWork(L, [&] { return data.inFlight(filter); }));
}

int ctxCount(lua_State* L) {
  const Json filter = readFilter(L, "count", {"plan", "namespace", "update_domain", "node", "type", "state"});
  PolicyDataSource& data = dataSource(L, "count");
  return pushCount(L, "count", LuaState::from(L).hostWork(L, [&] { return data.count(filter); }));
}

int ctxRecentFailures(lua_State* L) {
  Json filter = readFilter(L, "recent_failures", {"plan", "namespace", "update_domain", "node", "type", "seconds"});
  if (!filter.contains("seconds")) filter["seconds"] = 3600;
  PolicyDataSource& data = dataSource(L, "recent_failures");
  return pushCount(L, "recent_failures", LuaState::from(L).hostWork(L, [&] { return data.recentFailures(filter); }));
}

int pushData(lua_State* L, const char* function, const Result<Json>& value) {
  if (!value.isOk()) return luaL_error(L, "ctx.%s: %s", function, value.status().message().c_str());
  pushJson(L, *value);
  return 1;
}

int ctxInstances(lua_State* L) {
  const std::string plan = luaL_checkstring(L, 1);
  PolicyDataSource& data = dataSource(L, "instances");
  return pushData(L, "instances", LuaState::from(L).hostWork(L, [&] { return data.instances(plan); }));
}

int ctxNode(lua_State* L) {
  const std::string name = luaL_checkstring(L, 1);
  PolicyDataSource& data = dataSource(L, "node");
  return pushData(L, "node", LuaState::from(L).hostWork(L, [&] { return data.node(name); }));
}

void setFunction(lua_State* L, const char* name, lua_CFunction fn) {
  lua_pushcfunction(L, fn);
  lua_setfield(L, -2, name);
}

}  // namespace

std::span<const Verb> policyVerbs() { return kPolicyVerbs; }

void pushPolicyContext(lua_State* L) {
  lua_createtable(L, 0, 7);
  setFunction(L, "now", guarded<ctxNow>);
  setFunction(L, "in_flight", guarded<ctxInFlight>);
  setFunction(L, "count", guarded<ctxCount>);
  setFunction(L, "recent_failures", guarded<ctxRecentFailures>);
  setFunction(L, "instances", guarded<ctxInstances>);
  setFunction(L, "node", guarded<ctxNode>);
  pushLogTable(L);
  lua_setfield(L, -2, "log");
  // Its functions and the log's view never change: reads go straight to the table.
  pushSealedReadOnly(L, -1);
  lua_replace(L, -2);
}

void setPolicyData(LuaState& state, PolicyDataSource* data) { state.setContext(&kPolicyDataKey, data); }

}  // namespace tide::lua
