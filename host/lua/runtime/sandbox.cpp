#include "host/lua/runtime/sandbox.h"

#include <algorithm>

#include <lua.hpp>

#include "host/lua/runtime/bindings_base.h"
#include "host/lua/runtime/bindings_pattern.h"
#include "host/lua/runtime/bindings_readonly.h"
#include "host/lua/runtime/bindings_tide.h"
#include "host/lua/runtime/guard.h"
#include "host/lua/runtime/time_zone.h"

namespace tide::lua {
namespace {

char kSandboxValuesKey;  // registry: name -> value of every allowed global

// ---- The allow-list. Nothing else in tide decides what a script may reach. ----------

// Base functions scripts get unchanged.
constexpr const char* kBaseFunctions[] = {
    "assert", "error", "getmetatable", "select", "setmetatable", "tonumber", "tostring",
};
// Base functions replaced by view-aware or host-routed versions: next, pairs, ipairs,
// type, unpack (bindings_readonly.cpp), print, pcall and xpcall (bindings_base.cpp).
constexpr const char* kReplacedBaseFunctions[] = {"ipairs", "next", "pairs", "pcall", "print", "type", "unpack", "xpcall"};
// string: everything but dump ...
constexpr const char* kStringFunctions[] = {"byte", "char", "len", "lower", "reverse", "sub", "upper"};
// ... with the pattern functions run by tide's own matcher under the deadline
// (bindings_pattern.h), format, which may call __tostring, counting C depth, and rep, whose
// result is checked against the memory limit first.
constexpr const char* kReplacedStringFunctions[] = {"find", "format", "gmatch", "gsub", "match", "rep"};
// table: concat and maxn read views; insert, remove and sort refuse them.
constexpr const char* kTableFunctions[] = {"concat", "insert", "maxn", "remove", "sort"};
// math: everything, with random/randomseed replaced by the per-call seeded generator.
constexpr const char* kMathMembers[] = {
    "abs",   "acos", "asin",  "atan", "atan2", "ceil", "cos", "cosh", "deg", "exp", "floor", "fmod", "frexp", "huge",
    "ldexp", "log",  "log10", "max",  "min",   "modf", "pi",  "pow",  "rad", "sin", "sinh",  "sqrt", "tan",   "tanh",
};
// os: time, date and clock only, reading the injected clock, always UTC.
constexpr const char* kOsFunctions[] = {"clock", "date", "time"};
// tide: the host's table (bindings_tide.cpp).
constexpr const char* kTideMembers[] = {"lib", "log", "version"};

// Removed from the real globals so that no path (a missed reference, a future binding)
// can hand them to a script.
constexpr const char* kRemovedGlobals[] = {
    "_G",         "coroutine", "collectgarbage", "dofile",   "gcinfo", "getfenv", "load",    "loadfile",
    "loadstring", "module",    "newproxy",       "rawequal", "rawget", "rawset",  "require", "setfenv",
};

// --------------------------------------------------------------------------------------

void openLibrary(lua_State* L, lua_CFunction open, const char* name) {
  lua_pushcfunction(L, open);
  lua_pushstring(L, name);
  lua_call(L, 1, 0);
}

// Copies `names` from the table at `from` into the table on top of the stack.
template <size_t N>
void copyFields(lua_State* L, int from, const char* const (&names)[N]) {
  for (const char* name : names) {
    lua_getfield(L, from, name);
    lua_setfield(L, -2, name);
  }
}

void setClosure(lua_State* L, const char* name, lua_CFunction fn, int from, const char* original) {
  lua_getfield(L, from, original);
  lua_pushcclosure(L, fn, 1);
  lua_setfield(L, -2, name);
}

void setFunction(lua_State* L, const char* name, lua_CFunction fn) {
  lua_pushcfunction(L, fn);
  lua_setfield(L, -2, name);
}

// Replaces the library table on top of the stack by its read-only view. The sandbox never
// changes it again, so the view can be a sealed one (bindings_readonly.h).
void makeTopReadOnly(lua_State* L) {
  pushSealedReadOnly(L, -1);
  lua_replace(L, -2);
}

int unknownGlobal(lua_State* L) {
  return luaL_error(L, "unknown global '%s'", lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : luaL_typename(L, 2));
}

int assignGlobal(lua_State* L) {
  return luaL_error(L, "attempt to assign global '%s' (scripts define no globals; use local)",
                    lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : luaL_typename(L, 2));
}

template <size_t N>
void addNames(std::vector<std::string>& out, const char* prefix, const char* const (&names)[N]) {
  for (const char* name : names) out.push_back(std::string(prefix) + name);
}

}  // namespace

const std::vector<std::string>& allowList() {
  static const std::vector<std::string> kAllowList = [] {
    std::vector<std::string> names = {"math", "os", "string", "table", "tide"};
    addNames(names, "", kBaseFunctions);
    addNames(names, "", kReplacedBaseFunctions);
    addNames(names, "string.", kStringFunctions);
    addNames(names, "string.", kReplacedStringFunctions);
    addNames(names, "table.", kTableFunctions);
    addNames(names, "math.", kMathMembers);
    names.push_back("math.random");
    names.push_back("math.randomseed");
    addNames(names, "os.", kOsFunctions);
    addNames(names, "tide.", kTideMembers);
    std::sort(names.begin(), names.end());
    return names;
  }();
  return kAllowList;
}

void installSandbox(lua_State* L) {
  // Read once per process, here rather than in the first script that asks for a zone,
  // whose deadline it would take (tide.lib.time, bindings_time.h).
  loadTimeZoneDatabase();
  openLibrary(L, luaopen_base, "");
  openLibrary(L, luaopen_string, LUA_STRLIBNAME);
  openLibrary(L, luaopen_table, LUA_TABLIBNAME);
  openLibrary(L, luaopen_math, LUA_MATHLIBNAME);

  lua_pushvalue(L, LUA_GLOBALSINDEX);
  const int globals = lua_gettop(L);
  lua_getfield(L, globals, "string");
  const int real_string = lua_gettop(L);
  lua_pushnil(L);
  lua_setfield(L, real_string, "dump");
  lua_getfield(L, globals, "table");
  const int real_table = lua_gettop(L);
  lua_getfield(L, globals, "math");
  const int real_math = lua_gettop(L);

  lua_newtable(L);  // the values every environment starts from
  const int values = lua_gettop(L);
  copyFields(L, globals, kBaseFunctions);
  setClosure(L, "print", guarded<basePrint>, globals, "tostring");
  // pairs and ipairs hand plain tables the built-in iterators, which LuaJIT runs without
  // leaving the VM; only views need the view-aware ones.
  lua_pushcfunction(L, guarded<readOnlyAwareNext>);
  lua_pushvalue(L, -1);
  lua_setfield(L, values, "next");
  lua_getfield(L, globals, "next");
  lua_pushcclosure(L, guarded<readOnlyAwarePairs>, 2);
  lua_setfield(L, values, "pairs");
  lua_pushcfunction(L, guarded<readOnlyAwareIpairsStep>);
  lua_getfield(L, globals, "ipairs");
  lua_newtable(L);
  lua_call(L, 1, 1);  // ipairs' own step function
  lua_pushcclosure(L, guarded<readOnlyAwareIpairs>, 2);
  lua_setfield(L, values, "ipairs");
  setFunction(L, "type", guarded<readOnlyAwareType>);
  setFunction(L, "pcall", guarded<basePcall>);
  setFunction(L, "xpcall", guarded<baseXpcall>);
  setClosure(L, "unpack", guarded<readOnlyAwareUnpack>, globals, "unpack");

  // The sanitized string library doubles as the string metatable's __index, so
  // ("x"):rep(3) works and ("x").dump is nil.
  lua_newtable(L);
  copyFields(L, real_string, kStringFunctions);
  setFunction(L, "find", guarded<stringFind>);
  setFunction(L, "match", guarded<stringMatch>);
  setFunction(L, "gmatch", guarded<stringGmatch>);
  setFunction(L, "gsub", guarded<stringGsub>);
  setClosure(L, "format", guarded<callingBack>, real_string, "format");
  setClosure(L, "rep", guarded<stringRep>, real_string, "rep");
  lua_pushliteral(L, "");
  lua_getmetatable(L, -1);
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, "__index");
  lua_pushstring(L, kProtectedMetatable);
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 2);
  makeTopReadOnly(L);
  lua_setfield(L, values, "string");

  lua_newtable(L);
  setClosure(L, "concat", guarded<readOnlyAwareConcat>, real_table, "concat");
  setClosure(L, "maxn", guarded<readOnlyAwareMaxn>, real_table, "maxn");
  setClosure(L, "insert", guarded<refuseReadOnlyFirstArgument>, real_table, "insert");
  setClosure(L, "remove", guarded<refuseReadOnlyFirstArgument>, real_table, "remove");
  lua_getfield(L, real_table, "sort");
  pushLessThan(L);
  lua_pushcclosure(L, guarded<tableSort>, 2);
  lua_setfield(L, -2, "sort");
  makeTopReadOnly(L);
  lua_setfield(L, values, "table");

  lua_newtable(L);
  copyFields(L, real_math, kMathMembers);
  setFunction(L, "random", guarded<mathRandom>);
  setFunction(L, "randomseed", guarded<mathRandomseed>);
  makeTopReadOnly(L);
  lua_setfield(L, values, "math");

  lua_newtable(L);
  setFunction(L, "clock", guarded<osClock>);
  setFunction(L, "date", guarded<osDate>);
  setFunction(L, "time", guarded<osTime>);
  makeTopReadOnly(L);
  lua_setfield(L, values, "os");

  pushTideTable(L);
  lua_setfield(L, values, "tide");

  lua_pushlightuserdata(L, &kSandboxValuesKey);
  lua_pushvalue(L, values);
  lua_rawset(L, LUA_REGISTRYINDEX);

  for (const char* name : kRemovedGlobals) {
    lua_pushnil(L);
    lua_setfield(L, globals, name);
  }
  lua_settop(L, globals - 1);
}

void pushEnvironment(lua_State* L, std::span<const Verb> verbs) {
  lua_newtable(L);  // values: the allow-list plus the verbs
  const int values = lua_gettop(L);
  lua_pushlightuserdata(L, &kSandboxValuesKey);
  lua_rawget(L, LUA_REGISTRYINDEX);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, values);
  }
  lua_pop(L, 1);
  for (const Verb& verb : verbs) {
    lua_pushcfunction(L, verb.function);
    lua_setfield(L, values, verb.name);
  }
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, guarded<unknownGlobal>);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, values);

  lua_newtable(L);  // the environment itself stays empty, so every write hits __newindex
  lua_createtable(L, 0, 3);
  lua_pushvalue(L, values);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, guarded<assignGlobal>);
  lua_setfield(L, -2, "__newindex");
  lua_pushstring(L, kProtectedMetatable);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  lua_remove(L, values);
}

std::vector<std::string> environmentNames(lua_State* L, int index) {
  std::vector<std::string> names;
  if (!lua_getmetatable(L, index)) return names;
  lua_getfield(L, -1, "__index");
  const int values = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, values)) {
    const std::string name = lua_tostring(L, -2);
    names.push_back(name);
    if (isReadOnly(L, -1)) {
      pushUnderlying(L, -1);
      lua_pushnil(L);
      while (lua_next(L, -2)) {
        names.push_back(name + "." + lua_tostring(L, -2));
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_settop(L, values - 2);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace tide::lua
