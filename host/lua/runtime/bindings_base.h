#pragma once
// The sandbox's own versions of base-library functions whose originals reach outside the
// state or are not reproducible: print (to the state's log sink), os.time/os.date/os.clock
// (UTC, from the state's injected Clock), math.random/math.randomseed (a per-call seeded
// generator), pcall and xpcall (which cannot swallow a limit error, and count C depth).
// sandbox.cpp decides which names scripts see; this file only implements them.

#include <lua.hpp>

#include "host/core/clock.h"

namespace tide::lua {

int basePrint(lua_State* L);  // upvalue 1: the original tostring
// xpcall(f, handler, ...) whose handler runs after the failed call has unwound. LuaJIT
// runs a real xpcall handler before unwinding, with the count hook still marked active
// when the error came from the hook, so a looping handler would escape the deadline. A
// tripped call re-raises without running the handler, as pcall does.
int baseXpcall(lua_State* L);
// pcall(f, ...) as Lua's, except that an error raised once the call is tripped (deadline or
// memory limit, LuaState::tripped) goes on up instead of being returned.
int basePcall(lua_State* L);
// Calls upvalue 1 with the arguments and returns all its results, as one level of
// LuaState::CallDepth, and checks the deadline after it: for library functions that may
// call back into Lua from C (string.format's __tostring, table.sort's comparator) or work
// through a whole table in C (table.sort, insert, remove, concat), so a loop of them
// cannot run on between two count hooks.
int callingBack(lua_State* L);
// table.sort(t[, comp]) (upvalue 1: the original; upvalue 2: a Lua function a < b). Without
// a comparator LuaJIT compares in C, where a sort of a million elements runs on unchecked;
// with the Lua one every comparison is under the count hook and the deadline.
int tableSort(lua_State* L);
// Pushes the Lua comparator tableSort uses by default.
void pushLessThan(lua_State* L);
int osTime(lua_State* L);
int osDate(lua_State* L);
int osClock(lua_State* L);
int mathRandom(lua_State* L);
int mathRandomseed(lua_State* L);

// Pushes a fresh table describing `t` in UTC: year, month, day, hour, min, sec, wday
// (1 = Sunday, as os.date), yday, epoch (seconds) and iso ("2026-03-02T10:00:00Z").
void pushTimeTable(lua_State* L, TimePoint t);

// "chunk:line" of the Lua code that called the running C function, or "".
std::string callerWhere(lua_State* L);

}  // namespace tide::lua
