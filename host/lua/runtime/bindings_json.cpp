#include "host/lua/runtime/bindings_json.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "host/core/utf8.h"
#include "host/lua/runtime/bindings_readonly.h"

namespace tide::lua {
namespace {

using Json = nlohmann::json;

void push(lua_State* L, const Json& value, int depth) {
  if (depth > kMaxJsonDepth) luaL_error(L, "JSON value nested deeper than %d levels", kMaxJsonDepth);
  luaL_checkstack(L, 4, "JSON value nested too deeply");
  switch (value.type()) {
    case Json::value_t::null:
    case Json::value_t::discarded: lua_pushnil(L); return;
    case Json::value_t::boolean: lua_pushboolean(L, value.get<bool>() ? 1 : 0); return;
    case Json::value_t::number_integer: lua_pushnumber(L, static_cast<lua_Number>(value.get<int64_t>())); return;
    case Json::value_t::number_unsigned: lua_pushnumber(L, static_cast<lua_Number>(value.get<uint64_t>())); return;
    case Json::value_t::number_float: lua_pushnumber(L, value.get<double>()); return;
    case Json::value_t::string: {
      const auto& text = value.get_ref<const std::string&>();
      lua_pushlstring(L, text.data(), text.size());
      return;
    }
    case Json::value_t::binary: lua_pushnil(L); return;
    case Json::value_t::array: {
      lua_createtable(L, static_cast<int>(value.size()), 0);
      int i = 0;
      for (const Json& item : value) {
        ++i;
        if (item.is_null()) continue;
        push(L, item, depth + 1);
        lua_rawseti(L, -2, i);
      }
      return;
    }
    case Json::value_t::object: {
      lua_createtable(L, 0, static_cast<int>(value.size()));
      for (const auto& [key, item] : value.items()) {
        if (item.is_null()) continue;
        lua_pushlstring(L, key.data(), key.size());
        push(L, item, depth + 1);
        lua_rawset(L, -3);
      }
      return;
    }
  }
  lua_pushnil(L);
}

Result<Json> numberToJson(lua_Number n) {
  if (!std::isfinite(n)) return Status::invalidArgument("cannot convert NaN or infinity to JSON");
  if (std::floor(n) == n && std::fabs(n) < 9.007199254740992e15) return Json(static_cast<int64_t>(n));
  return Json(n);
}

std::string keyText(lua_State* L, int index) {
  if (lua_type(L, index) == LUA_TSTRING) {
    size_t len = 0;
    const char* text = lua_tolstring(L, index, &len);
    return std::string(text, len);
  }
  char buf[64];
  const lua_Number n = lua_tonumber(L, index);
  if (std::floor(n) == n && std::fabs(n) < 1e15) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  } else {
    std::snprintf(buf, sizeof buf, "%.17g", n);
  }
  return buf;
}

Result<Json> convert(lua_State* L, int index, int depth) {
  if (depth > kMaxJsonDepth) {
    return Status::invalidArgument("value nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  switch (lua_type(L, index)) {
    case LUA_TNIL: return Json(nullptr);
    case LUA_TBOOLEAN: return Json(lua_toboolean(L, index) != 0);
    case LUA_TNUMBER: return numberToJson(lua_tonumber(L, index));
    case LUA_TSTRING: {
      size_t len = 0;
      const char* text = lua_tolstring(L, index, &len);
      return Json(validUtf8(std::string_view(text, len)));
    }
    case LUA_TTABLE:
    case LUA_TUSERDATA: break;
    default: return Status::invalidArgument(std::string("cannot convert a ") + luaL_typename(L, index) + " to JSON");
  }
  if (lua_type(L, index) == LUA_TUSERDATA && !isReadOnly(L, index)) {
    return Status::invalidArgument("cannot convert a userdata to JSON");
  }
  if (!lua_checkstack(L, 4)) return Status::invalidArgument("value nested too deeply");
  pushUnderlying(L, index);
  const int table = lua_gettop(L);

  // An array when the keys are exactly 1..n.
  size_t count = 0;
  bool sequence = true;
  lua_pushnil(L);
  while (lua_next(L, table)) {
    lua_pop(L, 1);
    ++count;
    if (lua_type(L, -1) == LUA_TNUMBER) {
      const lua_Number k = lua_tonumber(L, -1);
      if (k < 1 || std::floor(k) != k) sequence = false;
    } else if (lua_type(L, -1) == LUA_TSTRING) {
      sequence = false;
    } else {
      std::string type = luaL_typename(L, -1);
      lua_settop(L, table - 1);
      return Status::invalidArgument("cannot convert a table key of type " + type + " to JSON");
    }
  }
  sequence = sequence && count > 0 && lua_objlen(L, table) == count;

  Json out = sequence ? Json::array() : Json::object();
  if (sequence) {
    for (size_t i = 1; i <= count; ++i) {
      lua_rawgeti(L, table, static_cast<int>(i));
      auto item = convert(L, lua_gettop(L), depth + 1);
      lua_pop(L, 1);
      if (!item.isOk()) {
        lua_settop(L, table - 1);
        return item.status().withPrefix("[" + std::to_string(i) + "]");
      }
      out.push_back(std::move(item).value());
    }
  } else {
    lua_pushnil(L);
    while (lua_next(L, table)) {
      const std::string key = validUtf8(keyText(L, -2));
      auto item = convert(L, lua_gettop(L), depth + 1);
      lua_pop(L, 1);
      if (!item.isOk()) {
        lua_settop(L, table - 1);
        return item.status().withPrefix(key);
      }
      out[key] = std::move(item).value();
    }
  }
  lua_settop(L, table - 1);
  return out;
}

}  // namespace

std::string validUtf8(std::string_view text) {
  // Most text is ASCII, which is valid as it is.
  if (std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) {
    return std::string(text);
  }
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (const size_t len = utf8SequenceLength(text.substr(i)); len > 0) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

void pushJson(lua_State* L, const Json& value) { push(L, value, 0); }

void pushReadOnlyJson(lua_State* L, const Json& value) {
  push(L, value, 0);
  if (lua_type(L, -1) == LUA_TTABLE) {
    pushReadOnly(L, -1);
    lua_replace(L, -2);
  }
}

Result<Json> toJson(lua_State* L, int index) {
  index = index < 0 && index > LUA_REGISTRYINDEX ? lua_gettop(L) + index + 1 : index;
  return convert(L, index, 0);
}

}  // namespace tide::lua
