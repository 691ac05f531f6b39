#include "host/lua/strategy/bindings_strategy.h"

#include <cmath>
#include <string>

#include "host/lua/runtime/bindings_json.h"
#include "host/lua/runtime/bindings_readonly.h"
#include "host/lua/runtime/guard.h"

namespace tide::lua {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxReasonBytes = 1024;
constexpr size_t kMaxMetricQueryBytes = 8192;
constexpr int64_t kMaxMetricRangeSeconds = 31 * 86'400;
// Distinct metric queries one reconcile may ask: each is a request to a metrics server per
// pass, and a script looping over names must not flood it.
constexpr size_t kMaxMetricQueriesPerReconcile = 64;
char kMetricBoardKey;  // LuaState context: the MetricBoard of the reconcile in progress
constexpr double kMaxCount = 1e9;

bool isTable(lua_State* L, int index) { return lua_type(L, index) == LUA_TTABLE || isReadOnly(L, index); }

// Starts an action table { action = name } on the stack, above exactly `nargs` arguments
// (missing ones become nil, extra ones are dropped).
void beginAction(lua_State* L, const char* name, int nargs) {
  lua_settop(L, nargs);
  lua_createtable(L, 0, 3);
  lua_pushstring(L, name);
  lua_setfield(L, -2, "action");
}

// Replaces the action table on top by its read-only view and returns it.
int finishAction(lua_State* L) {
  pushReadOnly(L, -1);
  lua_replace(L, -2);
  return 1;
}

void setReason(lua_State* L, int index, const char* verb, bool required) {
  if (lua_isnoneornil(L, index)) {
    if (required) luaL_error(L, "%s: reason must be a non-empty string", verb);
    return;
  }
  if (lua_type(L, index) != LUA_TSTRING) {
    luaL_error(L, "%s: %s must be a string", verb, required ? "reason" : "message");
  }
  size_t len = 0;
  const char* text = lua_tolstring(L, index, &len);
  if (required && len == 0) luaL_error(L, "%s: reason must be a non-empty string", verb);
  lua_pushlstring(L, text, len < kMaxReasonBytes ? len : kMaxReasonBytes);
  lua_setfield(L, -2, "reason");
}

int64_t checkCount(lua_State* L, int index, const char* verb) {
  const double n = lua_type(L, index) == LUA_TNUMBER ? lua_tonumber(L, index) : -1;
  if (!(n >= 0 && n <= kMaxCount && std::floor(n) == n)) {
    luaL_error(L, "%s: count must be a non-negative integer", verb);
  }
  return static_cast<int64_t>(n);
}

// The name of the instance table or name string at `index`, or false.
bool instanceName(lua_State* L, int index, std::string* name) {
  if (lua_type(L, index) == LUA_TSTRING) {
    *name = lua_tostring(L, index);
    return !name->empty();
  }
  if (!isTable(L, index)) return false;
  lua_getfield(L, index, "name");
  const bool named = lua_type(L, -1) == LUA_TSTRING;
  if (named) *name = lua_tostring(L, -1);
  lua_pop(L, 1);
  return named && !name->empty();
}

// Sets `instances` of the action on top of the stack from the argument at `index`: an
// instance, a name, or a list of either.
void setInstances(lua_State* L, int index, const char* verb, bool single) {
  const char* expected =
      single ? "expects one instance (or its name)" : "expects an instance, a list of instances or their names";
  lua_newtable(L);
  const int names = lua_gettop(L);
  std::string name;
  if (instanceName(L, index, &name)) {
    lua_pushstring(L, name.c_str());
    lua_rawseti(L, names, 1);
  } else if (!single && isTable(L, index)) {
    pushUnderlying(L, index);
    const int list = lua_gettop(L);
    const int n = static_cast<int>(lua_objlen(L, list));
    for (int i = 1; i <= n; ++i) {
      lua_rawgeti(L, list, i);
      if (!instanceName(L, -1, &name)) {
        luaL_error(L, "%s: item %d is neither an instance nor an instance name", verb, i);
      }
      lua_pop(L, 1);
      lua_pushstring(L, name.c_str());
      lua_rawseti(L, names, i);
    }
    lua_pop(L, 1);
  } else {
    luaL_error(L, "%s: %s", verb, expected);
  }
  lua_setfield(L, -2, "instances");
}

int createVerb(lua_State* L) {
  const int64_t count = checkCount(L, 1, "create");
  beginAction(L, "create", 1);
  lua_pushnumber(L, static_cast<lua_Number>(count));
  lua_setfield(L, -2, "count");
  return finishAction(L);
}

int updateVerb(lua_State* L) {
  beginAction(L, "update", 1);
  setInstances(L, 1, "update", false);
  return finishAction(L);
}

int deleteVerb(lua_State* L) {
  if (lua_type(L, 1) == LUA_TNUMBER) {
    const int64_t count = checkCount(L, 1, "delete");
    beginAction(L, "delete", 1);
    lua_pushnumber(L, static_cast<lua_Number>(count));
    lua_setfield(L, -2, "count");
    return finishAction(L);
  }
  beginAction(L, "delete", 1);
  setInstances(L, 1, "delete", false);
  return finishAction(L);
}

int relocateVerb(lua_State* L) {
  beginAction(L, "relocate", 1);
  setInstances(L, 1, "relocate", true);
  return finishAction(L);
}

int pauseVerb(lua_State* L) {
  beginAction(L, "pause", 2);
  setReason(L, 1, "pause", true);
  if (!lua_isnoneornil(L, 2)) {
    const double until = lua_type(L, 2) == LUA_TNUMBER ? lua_tonumber(L, 2) : NAN;
    if (!std::isfinite(until) || until < 0) {
      luaL_error(L, "pause: until must be a time in unix seconds (a number like r.now + 60)");
    }
    lua_pushnumber(L, until);
    lua_setfield(L, -2, "until_unix");
  }
  return finishAction(L);
}

int routeVerb(lua_State* L) {
  const char* usage = "route: weights must be a table of non-negative numbers, like { new = 10, old = 90 }";
  if (!isTable(L, 1)) return luaL_error(L, "%s", usage);
  auto weights = toJson(L, 1);
  if (!weights.isOk() || !weights->is_object() || weights->empty()) return luaL_error(L, "%s", usage);
  for (const auto& [target, weight] : weights->items()) {
    if (!weight.is_number() || weight.get<double>() < 0) return luaL_error(L, "%s", usage);
  }
  beginAction(L, "route", 1);
  pushJson(L, *weights);
  lua_setfield(L, -2, "weights");
  return finishAction(L);
}

int completeVerb(lua_State* L) {
  beginAction(L, "complete", 1);
  setReason(L, 1, "complete", false);
  return finishAction(L);
}

int failVerb(lua_State* L) {
  beginAction(L, "fail", 1);
  setReason(L, 1, "fail", true);
  return finishAction(L);
}

int rollbackVerb(lua_State* L) {
  beginAction(L, "rollback", 1);
  setReason(L, 1, "rollback", true);
  return finishAction(L);
}

const Verb kStrategyVerbs[] = {
    {"complete", guarded<completeVerb>}, {"create", guarded<createVerb>}, {"delete", guarded<deleteVerb>},
    {"fail", guarded<failVerb>},         {"pause", guarded<pauseVerb>},   {"relocate", guarded<relocateVerb>},
    {"rollback", guarded<rollbackVerb>}, {"route", guarded<routeVerb>},   {"update", guarded<updateVerb>},
};

// Reads r.metric's options table at `index` into `query`; raises naming the bad field.
void readMetricOptions(lua_State* L, int index, model::MetricQuery& query) {
  if (lua_isnoneornil(L, index)) return;
  auto options = isTable(L, index) ? toJson(L, index) : Result<Json>(Status::invalidArgument("not a table"));
  if (options.isOk() && options->is_array() && options->empty()) return;  // {} comes back as a list
  if (!options.isOk() || !options->is_object()) luaL_error(L, "metric: options must be a table of named fields");
  auto seconds = [L](const Json& value, const char* field) {
    if (!value.is_number() || value.get<double>() < 0 || value.get<double>() > kMaxMetricRangeSeconds ||
        std::floor(value.get<double>()) != value.get<double>()) {
      luaL_error(L, "metric: options.%s must be a whole number of seconds", field);
    }
    return static_cast<int>(value.get<double>());
  };
  for (const auto& [field, value] : options->items()) {
    if (field == "range_seconds") {
      query.range_seconds = seconds(value, "range_seconds");
    } else if (field == "step_seconds") {
      query.step_seconds = seconds(value, "step_seconds");
    } else if (field == "reduce") {
      const std::string reduce = value.is_string() ? value.get<std::string>() : "";
      if (reduce != "max" && reduce != "min" && reduce != "avg" && reduce != "last") {
        luaL_error(L, "metric: options.reduce must be max, min, avg or last");
      }
      query.reduce = reduce;
    } else if (field == "json_path") {
      if (!value.is_string()) luaL_error(L, "metric: options.json_path must be a string");
      query.json_path = value.get<std::string>();
    } else {
      luaL_error(L, "metric: unknown option '%s' (range_seconds, step_seconds, reduce, json_path)", field.c_str());
    }
  }
}

int metricFunction(lua_State* L) {
  size_t query_len = 0;
  if (lua_type(L, 1) != LUA_TSTRING || lua_type(L, 2) != LUA_TSTRING) {
    return luaL_error(L, "metric: expects (provider, query[, options]) with provider and query strings");
  }
  model::MetricQuery query;
  query.provider = lua_tostring(L, 1);
  const char* text = lua_tolstring(L, 2, &query_len);
  if (query_len == 0 || query_len > kMaxMetricQueryBytes) {
    return luaL_error(L, "metric: query must hold 1 to %d bytes", static_cast<int>(kMaxMetricQueryBytes));
  }
  query.query.assign(text, query_len);
  readMetricOptions(L, 3, query);

  auto* board = static_cast<MetricBoard*>(LuaState::from(L).context(&kMetricBoardKey));
  if (board == nullptr) {
    lua_pushnil(L);
    lua_pushstring(L, "metrics are read only while a strategy reconciles");
    return 2;
  }
  if (board->asked.size() >= kMaxMetricQueriesPerReconcile && board->asked.count(query) == 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "more than %d metric queries in one reconcile; this one is not asked",
                    static_cast<int>(kMaxMetricQueriesPerReconcile));
    return 2;
  }
  board->asked.insert(query);
  const Json* answer = nullptr;
  if (board->answers != nullptr && board->answers->is_object()) {
    auto provider = board->answers->find(query.provider);
    if (provider != board->answers->end() && provider->is_object()) {
      auto found = provider->find(query.key());
      if (found != provider->end()) answer = &*found;
    }
  }
  if (answer != nullptr && answer->is_number()) {
    lua_pushnumber(L, answer->get<double>());
    return 1;
  }
  lua_pushnil(L);
  if (answer != nullptr && answer->is_string()) {
    lua_pushstring(L, answer->get<std::string>().c_str());
    return 2;
  }
  const std::string why = "waiting for the first answer from '" + query.provider + "'";
  lua_pushlstring(L, why.data(), why.size());
  lua_pushboolean(L, 1);  // pending: asked for the first time, nothing fetched yet
  return 3;
}

void setJsonField(lua_State* L, int table, const Json& snapshot, const char* key) {
  // Not `contains(key) ? snapshot[key] : Json()`: that conditional is a copy of the field,
  // and the field is r.instances, thousands of them.
  auto field = snapshot.find(key);
  if (field == snapshot.end()) {
    lua_pushnil(L);
  } else {
    pushJson(L, *field);
  }
  lua_setfield(L, table, key);
}

}  // namespace

std::span<const Verb> strategyVerbs() { return kStrategyVerbs; }

void setMetricBoard(LuaState& state, MetricBoard* board) { state.setContext(&kMetricBoardKey, board); }

void pushRollout(lua_State* L, const Json& snapshot) {
  lua_createtable(L, 0, 14);
  const int r = lua_gettop(L);
  for (const char* key :
       {"deployment", "previous", "plan", "instances", "count", "counts", "params", "signals", "restore"}) {
    setJsonField(L, r, snapshot, key);
  }
  pushJson(L, snapshot.value("now_unix", Json(0)));
  lua_setfield(L, r, "now");
  lua_pushcfunction(L, guarded<metricFunction>);
  lua_setfield(L, r, "metric");

  // new and old hold the very tables of instances, so r.new[1] == r.instances[k].
  lua_newtable(L);
  const int fresh = lua_gettop(L);
  lua_newtable(L);
  const int old = lua_gettop(L);
  lua_getfield(L, r, "instances");
  const int instances = lua_gettop(L);
  int fresh_n = 0;
  int old_n = 0;
  const int n = static_cast<int>(lua_objlen(L, instances));
  for (int i = 1; i <= n; ++i) {
    lua_rawgeti(L, instances, i);
    lua_getfield(L, -1, "version");
    const bool is_old = lua_type(L, -1) == LUA_TSTRING && std::string(lua_tostring(L, -1)) == "old";
    lua_pop(L, 1);
    lua_rawseti(L, is_old ? old : fresh, is_old ? ++old_n : ++fresh_n);
  }
  lua_pop(L, 1);
  lua_setfield(L, r, "old");
  lua_setfield(L, r, "new");

  pushJson(L, snapshot.contains("state") && snapshot["state"].is_object() ? snapshot["state"] : Json::object());
  markWritable(L, -1);
  lua_pushvalue(L, -1);
  lua_setfield(L, r, "state");
  pushReadOnly(L, r);
  lua_replace(L, r);  // r's view, then the state table
}

}  // namespace tide::lua
