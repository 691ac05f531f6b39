#pragma once
// The sandbox's own versions of base-library functions whose originals reach outside the
// state or are not reproducible: print (to the state's log sink), os.time/os.date/os.clock
// (UTC, from the state's injected Clock), math.random/math.randomseed (a per-call seeded
// generator), xpcall (whose handler must stay under the deadline) and the pattern functions
// of string (whose cost must stay bounded). sandbox.cpp decides which names scripts see;
// this file only implements them.

#include <lua.hpp>

#include "host/core/clock.h"

namespace tide::lua {

int basePrint(lua_State* L);  // upvalue 1: the original tostring
// xpcall(f, handler, ...) whose handler runs after the failed call has unwound. LuaJIT
// runs a real xpcall handler before unwinding, with the count hook still marked active
// when the error came from the hook, so a looping handler would escape the deadline.
int baseXpcall(lua_State* L);
// string.find/match/gmatch/gsub (upvalue 1: the original; upvalue 2: true for find, whose
// 4th argument asks for a plain search). The matcher is C and cannot be
// interrupted by the deadline, so a pattern whose worst-case backtracking over the
// subject exceeds kMaxPatternSteps is refused before it runs.
int guardedPatternCall(lua_State* L);
inline constexpr double kMaxPatternSteps = 1e8;
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
