#include "host/lua/runtime/bindings_readonly.h"

#include <climits>

#include "host/lua/runtime/bindings_base.h"
#include "host/lua/runtime/guard.h"

namespace tide::lua {
namespace {

char kViewMetatableKey;  // registry: the metatable shared by all views
char kViewCacheKey;      // registry: table -> view, weak in keys and values
char kWritableKey;       // registry: table -> true for tables views hand out unwrapped
char kSealedKey;         // in a sealed view's own metatable: true

void raiseReadOnly(lua_State* L, int key_index) {
  if (lua_type(L, key_index) == LUA_TSTRING || lua_type(L, key_index) == LUA_TNUMBER) {
    luaL_error(L, "attempt to modify read-only field '%s'", lua_tostring(L, key_index));
  }
  luaL_error(L, "attempt to modify a read-only table");
}

void pushWeakRegistryTable(lua_State* L, const void* key) {
  lua_pushlightuserdata(L, const_cast<void*>(key));
  lua_rawget(L, LUA_REGISTRYINDEX);
  if (!lua_isnil(L, -1)) return;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "kv");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_pushlightuserdata(L, const_cast<void*>(key));
  lua_pushvalue(L, -2);
  lua_rawset(L, LUA_REGISTRYINDEX);
}

bool isWritable(lua_State* L, int index) {
  index = index < 0 ? lua_gettop(L) + index + 1 : index;
  pushWeakRegistryTable(L, &kWritableKey);
  lua_pushvalue(L, index);
  lua_rawget(L, -2);
  const bool writable = lua_toboolean(L, -1) != 0;
  lua_pop(L, 2);
  return writable;
}

// Replaces the table on top of the stack by its view when `wrap` is set, unless the
// table was marked writable.
void wrapTop(lua_State* L, bool wrap) {
  if (wrap && lua_type(L, -1) == LUA_TTABLE && !isWritable(L, -1)) {
    pushReadOnly(L, -1);
    lua_replace(L, -2);
  }
}

// __index of views. Upvalues: 1 the writable marks, 2 the view cache (the registry's
// tables, held here so that a read needs no registry lookup).
int viewIndex(lua_State* L) {
  lua_getfenv(L, 1);
  lua_pushvalue(L, 2);
  lua_rawget(L, -2);
  if (lua_type(L, -1) != LUA_TTABLE) return 1;
  lua_pushvalue(L, -1);
  lua_rawget(L, lua_upvalueindex(1));
  const bool writable = lua_toboolean(L, -1) != 0;
  lua_pop(L, 1);
  if (writable) return 1;
  lua_pushvalue(L, -1);
  lua_rawget(L, lua_upvalueindex(2));
  if (!lua_isnil(L, -1)) return 1;
  lua_pop(L, 1);
  pushReadOnly(L, -1);
  return 1;
}

int viewNewindex(lua_State* L) {
  raiseReadOnly(L, 2);
  return 0;
}

int viewLen(lua_State* L) {
  lua_getfenv(L, 1);
  lua_pushinteger(L, static_cast<lua_Integer>(lua_objlen(L, -1)));
  return 1;
}

int viewToString(lua_State* L) {
  lua_getfenv(L, 1);
  lua_pushfstring(L, "table: %p", lua_topointer(L, -1));
  return 1;
}

void pushViewMetatable(lua_State* L) {
  lua_pushlightuserdata(L, &kViewMetatableKey);
  lua_rawget(L, LUA_REGISTRYINDEX);
  if (!lua_isnil(L, -1)) return;
  lua_pop(L, 1);
  lua_createtable(L, 0, 5);
  pushWeakRegistryTable(L, &kWritableKey);
  pushWeakRegistryTable(L, &kViewCacheKey);
  lua_pushcclosure(L, guarded<viewIndex>, 2);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, guarded<viewNewindex>);
  lua_setfield(L, -2, "__newindex");
  lua_pushcfunction(L, guarded<viewLen>);
  lua_setfield(L, -2, "__len");
  lua_pushcfunction(L, guarded<viewToString>);
  lua_setfield(L, -2, "__tostring");
  lua_pushstring(L, kProtectedMetatable);
  lua_setfield(L, -2, "__metatable");
  lua_pushlightuserdata(L, &kViewMetatableKey);
  lua_pushvalue(L, -2);
  lua_rawset(L, LUA_REGISTRYINDEX);
}

void pushViewCache(lua_State* L) { pushWeakRegistryTable(L, &kViewCacheKey); }

// Pushes the table argument at `index` (the viewed table for a view); returns whether
// it was a view. Raises the usual "table expected" error for anything else.
bool pushTableArgument(lua_State* L, int index) {
  if (isReadOnly(L, index)) {
    lua_getfenv(L, index);
    return true;
  }
  luaL_checktype(L, index, LUA_TTABLE);
  lua_pushvalue(L, index);
  return false;
}

}  // namespace

int readOnlyAwareIpairsStep(lua_State* L) {
  const lua_Integer i = luaL_checkinteger(L, 2) + 1;
  const bool view = pushTableArgument(L, 1);
  lua_rawgeti(L, -1, static_cast<int>(i));
  if (lua_isnil(L, -1)) return 0;
  wrapTop(L, view);
  lua_pushinteger(L, i);
  lua_insert(L, -2);
  return 2;
}

void pushReadOnly(lua_State* L, int index) {
  index = index < 0 && index > LUA_REGISTRYINDEX ? lua_gettop(L) + index + 1 : index;
  pushViewCache(L);
  lua_pushvalue(L, index);
  lua_rawget(L, -2);
  if (!lua_isnil(L, -1)) {
    lua_remove(L, -2);
    return;
  }
  lua_pop(L, 1);
  lua_newuserdata(L, 0);
  pushViewMetatable(L);
  lua_setmetatable(L, -2);
  lua_pushvalue(L, index);
  lua_setfenv(L, -2);
  lua_pushvalue(L, index);
  lua_pushvalue(L, -2);
  lua_rawset(L, -4);
  lua_remove(L, -2);
}

void markWritable(lua_State* L, int index) {
  index = index < 0 ? lua_gettop(L) + index + 1 : index;
  pushWeakRegistryTable(L, &kWritableKey);
  lua_pushvalue(L, index);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

void pushSealedReadOnly(lua_State* L, int index) {
  index = index < 0 && index > LUA_REGISTRYINDEX ? lua_gettop(L) + index + 1 : index;
  lua_pushnil(L);
  while (lua_next(L, index)) {
    const bool nested = lua_type(L, -1) == LUA_TTABLE;
    lua_pop(L, 1);
    if (nested) {
      lua_pop(L, 1);
      pushReadOnly(L, index);  // its tables need wrapping on the way out
      return;
    }
  }
  pushViewCache(L);
  lua_pushvalue(L, index);
  lua_rawget(L, -2);
  if (!lua_isnil(L, -1)) {
    lua_remove(L, -2);
    return;
  }
  lua_pop(L, 1);
  lua_newuserdata(L, 0);
  lua_createtable(L, 0, 6);
  pushViewMetatable(L);
  for (const char* field : {"__newindex", "__len", "__tostring", "__metatable"}) {
    lua_getfield(L, -1, field);
    lua_setfield(L, -3, field);
  }
  lua_pop(L, 1);
  lua_pushvalue(L, index);
  lua_setfield(L, -2, "__index");  // reads go straight to the table, without a C call
  lua_pushlightuserdata(L, &kSealedKey);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_setmetatable(L, -2);
  lua_pushvalue(L, index);
  lua_setfenv(L, -2);
  lua_pushvalue(L, index);
  lua_pushvalue(L, -2);
  lua_rawset(L, -4);
  lua_remove(L, -2);
}

bool isReadOnly(lua_State* L, int index) {
  if (lua_type(L, index) != LUA_TUSERDATA || !lua_getmetatable(L, index)) return false;
  pushViewMetatable(L);
  bool view = lua_rawequal(L, -1, -2) != 0;
  lua_pop(L, 1);
  if (!view) {
    lua_pushlightuserdata(L, &kSealedKey);
    lua_rawget(L, -2);
    view = lua_toboolean(L, -1) != 0;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return view;
}

void pushUnderlying(lua_State* L, int index) {
  if (isReadOnly(L, index)) {
    lua_getfenv(L, index);
  } else {
    lua_pushvalue(L, index);
  }
}

int readOnlyAwareNext(lua_State* L) {
  lua_settop(L, 2);
  const bool view = pushTableArgument(L, 1);
  lua_pushvalue(L, 2);
  if (!lua_next(L, 3)) {
    lua_pushnil(L);
    return 1;
  }
  wrapTop(L, view);
  return 2;
}

int readOnlyAwarePairs(lua_State* L) {
  const bool view = isReadOnly(L, 1);
  if (!view) luaL_checktype(L, 1, LUA_TTABLE);
  lua_pushvalue(L, lua_upvalueindex(view ? 1 : 2));  // the sandbox's next, or the built-in one
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

int readOnlyAwareIpairs(lua_State* L) {
  const bool view = isReadOnly(L, 1);
  if (!view) luaL_checktype(L, 1, LUA_TTABLE);
  lua_pushvalue(L, lua_upvalueindex(view ? 1 : 2));  // readOnlyAwareIpairsStep, or the built-in step
  lua_pushvalue(L, 1);
  lua_pushinteger(L, 0);
  return 3;
}

int readOnlyAwareType(lua_State* L) {
  luaL_checkany(L, 1);
  lua_pushstring(L, isReadOnly(L, 1) ? "table" : luaL_typename(L, 1));
  return 1;
}

int readOnlyAwareUnpack(lua_State* L) {
  if (!isReadOnly(L, 1)) return callingBack(L);
  lua_settop(L, 3);
  lua_getfenv(L, 1);
  const int table = lua_gettop(L);
  const int first = static_cast<int>(luaL_optinteger(L, 2, 1));
  const int last =
      lua_isnoneornil(L, 3) ? static_cast<int>(lua_objlen(L, table)) : static_cast<int>(luaL_checkinteger(L, 3));
  if (first > last) return 0;
  const long long count = static_cast<long long>(last) - first + 1;
  if (count >= INT_MAX || !lua_checkstack(L, static_cast<int>(count))) {
    return luaL_error(L, "too many results to unpack");
  }
  for (int i = first; i <= last; ++i) {
    lua_rawgeti(L, table, i);
    wrapTop(L, true);
  }
  return static_cast<int>(count);
}

namespace {

// Only strings and numbers come out of concat and maxn, so a view's table can be passed on.
void unwrapViewArgument(lua_State* L) {
  if (isReadOnly(L, 1)) {
    lua_getfenv(L, 1);
    lua_replace(L, 1);
  }
}

}  // namespace

int readOnlyAwareConcat(lua_State* L) {
  unwrapViewArgument(L);
  // LuaJIT joins in C, where no count hook reaches it: the size of one call is what bounds
  // its time (a 10-million-item join ran 26 ms past a 50 ms deadline).
  if (lua_istable(L, 1)) {
    const lua_Integer first = luaL_optinteger(L, 3, 1);
    const lua_Integer last = lua_isnoneornil(L, 4) ? static_cast<lua_Integer>(lua_objlen(L, 1)) : luaL_checkinteger(L, 4);
    if (last >= first && static_cast<long long>(last) - first >= kMaxConcatItems) {
      return luaL_error(L, "table.concat joins at most %d items in one call (asked for %lld)", kMaxConcatItems,
                        static_cast<long long>(last) - first + 1);
    }
  }
  return callingBack(L);
}

int readOnlyAwareMaxn(lua_State* L) {
  unwrapViewArgument(L);
  return callingBack(L);
}

int refuseReadOnlyFirstArgument(lua_State* L) {
  if (isReadOnly(L, 1)) return luaL_error(L, "attempt to modify a read-only table");
  return callingBack(L);
}

}  // namespace tide::lua
