#pragma once
// Keeps C++ exceptions out of Lua frames (STYLE rule 2). Every C function handed to Lua
// is pushed as guarded<F>: a std::exception thrown by F becomes a Lua error carrying its
// what(). Lua errors raised inside F are not std::exceptions and pass through untouched.

#include <cstdio>
#include <exception>

#include <lua.hpp>

namespace tide::lua {

template <lua_CFunction F>
int guarded(lua_State* L) {
  char message[512];
  try {
    return F(L);
  } catch (const std::exception& e) {
    std::snprintf(message, sizeof message, "internal error: %s", e.what());
  }
  return luaL_error(L, "%s", message);
}

}  // namespace tide::lua
