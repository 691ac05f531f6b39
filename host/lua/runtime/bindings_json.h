#pragma once
// JSON <-> Lua values, for snapshots handed to scripts and values scripts hand back.
//
// JSON -> Lua: objects become tables with string keys, arrays 1-based sequences, null
// becomes nil (an absent field; a hole in an array), numbers Lua numbers.
// Lua -> JSON: a table whose keys are exactly 1..n (n >= 1) becomes an array, any other
// table an object (the empty table is {}); read-only views convert as their table;
// integral numbers become integers. Functions, userdata, NaN/inf, keys that are neither
// strings nor numbers and nesting deeper than kMaxJsonDepth are refused.
//
// Only inside LuaState::call(): pushing may raise Lua memory errors.

#include <string>
#include <string_view>

#include <lua.hpp>
#include <nlohmann/json.hpp>

#include "host/core/status.h"

namespace tide::lua {

inline constexpr int kMaxJsonDepth = 64;

// `text` with every invalid UTF-8 sequence replaced by U+FFFD, so scripts' strings can
// always be serialised (nlohmann refuses invalid UTF-8).
std::string validUtf8(std::string_view text);

void pushJson(lua_State* L, const nlohmann::json& value);
// pushJson, then replaces tables by read-only views (nested ones become views on access).
void pushReadOnlyJson(lua_State* L, const nlohmann::json& value);
Result<nlohmann::json> toJson(lua_State* L, int index);

}  // namespace tide::lua
