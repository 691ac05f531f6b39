#include "host/lua/runtime/bindings_tide.h"

#include "host/lua/runtime/bindings_base.h"
#include "host/lua/runtime/bindings_json.h"
#include "host/lua/runtime/bindings_readonly.h"
#include "host/lua/runtime/bindings_time.h"
#include "host/lua/runtime/guard.h"
#include "host/lua/runtime/lua_state.h"
#include "host/lua/runtime/sandbox.h"
#include "host/lua/runtime/script_set.h"

#ifndef TIDE_VERSION
#define TIDE_VERSION "dev"
#endif

namespace tide::lua {
namespace {

char kLibrariesKey;  // LuaState context: the ScriptSet libs come from
char kLibCacheKey;   // registry: name -> loaded value, or kLoadingMarker while loading
char kLibEnvKey;     // registry: the environment libs run in
char kLoadingMarker;

void pushRegistryTable(lua_State* L, const void* key) {
  lua_pushlightuserdata(L, const_cast<void*>(key));
  lua_rawget(L, LUA_REGISTRYINDEX);
  if (!lua_isnil(L, -1)) return;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushlightuserdata(L, const_cast<void*>(key));
  lua_pushvalue(L, -2);
  lua_rawset(L, LUA_REGISTRYINDEX);
}

void pushLibEnvironment(lua_State* L) {
  lua_pushlightuserdata(L, &kLibEnvKey);
  lua_rawget(L, LUA_REGISTRYINDEX);
  if (!lua_isnil(L, -1)) return;
  lua_pop(L, 1);
  pushEnvironment(L, libVerbs());
  lua_pushlightuserdata(L, &kLibEnvKey);
  lua_pushvalue(L, -2);
  lua_rawset(L, LUA_REGISTRYINDEX);
}

// __index of tide.lib: (lib, name) -> the lib's value.
int libIndex(lua_State* L) {
  const char* name = luaL_checkstring(L, 2);
  pushRegistryTable(L, &kLibCacheKey);
  const int cache = lua_gettop(L);
  lua_pushvalue(L, 2);
  lua_rawget(L, cache);
  if (lua_touserdata(L, -1) == &kLoadingMarker) {
    return luaL_error(L, "lib '%s' is loaded again while it loads (a cycle between libs)", name);
  }
  if (!lua_isnil(L, -1)) return 1;
  lua_pop(L, 1);

  auto* set = static_cast<const ScriptSet*>(LuaState::from(L).context(&kLibrariesKey));
  const ScriptFile* file = set ? set->find(ScriptKind::kLib, name) : nullptr;
  if (!file) return luaL_error(L, "unknown lib '%s' (no scripts/lib/%s.lua)", name, name);

  // A lib is shared by every script of the state: its memory is the state's, not that of
  // the script that happened to use it first.
  LuaState& state = LuaState::from(L);
  LuaState::Charge charge(state, kStateBudget);
  LuaState::CallDepth depth(L);
  loadTextChunk(L, file->text, file->path);
  pushLibEnvironment(L);
  lua_setfenv(L, -2);
  lua_pushvalue(L, 2);
  lua_pushlightuserdata(L, &kLoadingMarker);
  lua_rawset(L, cache);
  bool failed = lua_pcall(L, 0, 1, 0) != 0;
  if (!failed && lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushfstring(L, "%s: a lib must return a value", file->path.c_str());
    failed = true;
  }
  if (failed) {  // forget the marker so a later lookup reports the error again
    lua_pushvalue(L, 2);
    lua_pushnil(L);
    lua_rawset(L, cache);
    return lua_error(L);
  }
  if (lua_type(L, -1) == LUA_TTABLE) {
    pushReadOnly(L, -1);
    lua_replace(L, -2);
  }
  lua_pushvalue(L, 2);
  lua_pushvalue(L, -2);
  lua_rawset(L, cache);
  return 1;
}

int libNewindex(lua_State* L) {
  return luaL_error(L, "attempt to modify read-only field '%s'", luaL_checkstring(L, 2));
}

// upvalue 1: the level name.
int logAtLevel(lua_State* L) {
  LogRecord record;
  record.level = lua_tostring(L, lua_upvalueindex(1));
  record.where = callerWhere(L);
  record.message = luaL_checkstring(L, 1);
  if (!lua_isnoneornil(L, 2)) {
    auto fields = toJson(L, 2);
    record.fields = fields.isOk() ? std::move(fields).value() : Json{{"unconvertible", fields.status().message()}};
  }
  LuaState::from(L).log(std::move(record));
  return 0;
}

}  // namespace

void pushLogTable(lua_State* L) {
  lua_createtable(L, 0, 3);
  for (const char* level : {"info", "warn", "error"}) {
    lua_pushstring(L, level);
    lua_pushcclosure(L, guarded<logAtLevel>, 1);
    lua_setfield(L, -2, level);
  }
  pushReadOnly(L, -1);
  lua_replace(L, -2);
}

void pushTideTable(lua_State* L) {
  lua_createtable(L, 0, 3);
  lua_pushliteral(L, TIDE_VERSION);
  lua_setfield(L, -2, "version");

  lua_newuserdata(L, 0);  // tide.lib: lookups only, nothing to iterate
  lua_createtable(L, 0, 3);
  lua_pushcfunction(L, guarded<libIndex>);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, guarded<libNewindex>);
  lua_setfield(L, -2, "__newindex");
  lua_pushstring(L, kProtectedMetatable);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  lua_setfield(L, -2, "lib");

  pushLogTable(L);
  lua_setfield(L, -2, "log");

  pushReadOnly(L, -1);
  lua_replace(L, -2);
}

void setLibraries(LuaState& state, const ScriptSet* set) {
  state.setContext(&kLibrariesKey, const_cast<ScriptSet*>(set));
}

}  // namespace tide::lua
