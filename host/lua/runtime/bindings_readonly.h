#pragma once
// Read-only views of Lua tables (the `op` and `ctx` snapshots, the library tables of the
// sandbox, `tide`). A view is a userdata whose environment is the viewed table: reads go
// through, nested tables come back as views too, and every write raises
// "attempt to modify read-only field 'x'". `#view` works (userdata honour __len in Lua
// 5.1), getmetatable(view) returns the sentinel "protected", and the sandbox's pairs,
// ipairs, next, type, unpack and table.* understand views, so scripts treat them as tables.
//
// The same table always yields the same view (a weak cache), so views compare equal.
// Only call these inside LuaState::call().

#include <lua.hpp>

namespace tide::lua {

// The value getmetatable() returns for every protected table, view and string.
inline constexpr const char* kProtectedMetatable = "protected";

// Pushes a read-only view of the table at `index`.
void pushReadOnly(lua_State* L, int index);
// The same for a table that holds no tables and that nobody changes any more (the
// sandbox's string, table, math and os): the view reads it without calling into C. A table
// holding tables gets an ordinary view.
void pushSealedReadOnly(lua_State* L, int index);
bool isReadOnly(lua_State* L, int index);
// Pushes the table behind the view at `index`, or the value itself if it is not a view.
// Host code only: handing the result to a script would make the data writable.
void pushUnderlying(lua_State* L, int index);

// Marks the table at `index` as one that views hand out as itself instead of wrapping it:
// a writable hole in a read-only snapshot (a strategy's r.state). Marks are weak.
void markWritable(lua_State* L, int index);

// View-aware replacements the sandbox installs under the standard names.
// pairs: upvalue 1 readOnlyAwareNext (for views), 2 the built-in next (for tables).
int readOnlyAwarePairs(lua_State* L);
// ipairs: upvalue 1 readOnlyAwareIpairsStep (for views), 2 the built-in step (for tables).
int readOnlyAwareIpairs(lua_State* L);
int readOnlyAwareIpairsStep(lua_State* L);
int readOnlyAwareNext(lua_State* L);
int readOnlyAwareType(lua_State* L);
int readOnlyAwareUnpack(lua_State* L);  // upvalue 1: the original unpack
// table.concat joins at most this many items a call (bindings_readonly.cpp says why).
inline constexpr int kMaxConcatItems = 1'000'000;
int readOnlyAwareConcat(lua_State* L);  // upvalue 1: the original table.concat
int readOnlyAwareMaxn(lua_State* L);    // upvalue 1: the original table.maxn
// table.insert/remove/sort: upvalue 1 is the original; views are refused as read-only.
int refuseReadOnlyFirstArgument(lua_State* L);

}  // namespace tide::lua
