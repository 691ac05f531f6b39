#pragma once
// The sandbox: the one place that decides what a script can reach (docs/architecture.md#the-lua-host).
//
// A script runs with a locked environment made of the allow-list below plus the verbs of
// its kind (approve, deny, ... for policies). Reading a name that is not there raises
// "unknown global 'x'"; assigning any global raises, so a script file cannot define
// globals. Library tables (string, table, math, os, tide) are read-only views, the
// string metatable is hidden behind the sentinel "protected", and the real globals
// (load, setfenv, io, ...) are removed from the state altogether.

#include <span>
#include <string>
#include <vector>

struct lua_State;

namespace tide::lua {

// A function a kind adds to its scripts' environment. It must not let C++ exceptions
// escape: push it as guarded<F> (host/lua/runtime/guard.h).
struct Verb {
  const char* name;
  int (*function)(lua_State*);
};

// Opens the allowed libraries, hides the string metatable and strips the real globals.
// Called once by LuaState::create, inside a protected call.
void installSandbox(lua_State* L);

// Pushes a new locked environment: the allow-list plus `verbs`. Inside LuaState::call.
void pushEnvironment(lua_State* L, std::span<const Verb> verbs);

// The allow-list as sorted "name" and "library.member" entries ("pairs", "string.find").
const std::vector<std::string>& allowList();

// The names the environment at `index` exposes, in allowList()'s format. For tests and
// for `GET /v1/scripts`-style introspection; inside LuaState::call.
std::vector<std::string> environmentNames(lua_State* L, int index);

}  // namespace tide::lua
