#pragma once
// string.find, string.match, string.gmatch and string.gsub for the sandbox: Lua 5.1
// patterns (with %f frontiers), run by a matcher of tide's own that counts its steps and
// checks the call's deadline every few thousand of them (LuaState::checkLimits). LuaJIT's
// matcher runs to completion in C, where no count hook reaches it: a single
// ("a"):rep(10000):find("a*b") takes a quarter of a second, and a loop of them would run
// far past the deadline.
//
// Limits besides the deadline: 32 captures, and a pattern nesting (captures, `?`,
// backtracking) at most kMaxPatternDepth deep, which keeps the matcher's C recursion small.
// gsub with a function or a table counts as one level of C calling back into Lua
// (LuaState::CallDepth). Results are built in Lua memory, so the memory limit holds too.

#include <lua.hpp>

namespace tide::lua {

inline constexpr int kMaxPatternDepth = 200;

int stringFind(lua_State* L);
int stringMatch(lua_State* L);
int stringGmatch(lua_State* L);
int stringGsub(lua_State* L);
// string.rep(s, n[, sep]) whose result is checked against the memory limit first: LuaJIT
// takes n as a 32-bit integer, so string.rep("x", 2^31) returned "" instead of failing.
int stringRep(lua_State* L);  // upvalue 1: the original string.rep

}  // namespace tide::lua
