#include "host/lua/runtime/bindings_base.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>
#include <string_view>

#include "host/lua/runtime/bindings_readonly.h"
#include "host/lua/runtime/lua_state.h"

namespace tide::lua {
namespace {

std::time_t epochSeconds(TimePoint t) {
  return static_cast<std::time_t>(std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count());
}

// Sets *out to `seconds` since the epoch; false when a TimePoint cannot hold it. Leaves no
// C++ object alive for the caller's luaL_error to unwind past.
bool timeOfUnixSeconds(lua_Number seconds, TimePoint* out) {
  Result<TimePoint> time = timeFromUnixSeconds(seconds);
  if (time.isOk()) *out = *time;
  return time.isOk();
}

// A field of os.time()'s date table, clamped to a billion either way: far past any date
// (timegm then reports the overflow), and the caller's "- 1900" cannot overflow an int.
int tableField(lua_State* L, const char* key, int fallback) {
  constexpr lua_Integer kLimit = 1000000000;
  lua_getfield(L, 1, key);
  int value = fallback;
  if (lua_isnumber(L, -1)) {
    value = static_cast<int>(std::clamp(lua_tointeger(L, -1), -kLimit, kLimit));
  } else if (fallback < 0) {
    luaL_error(L, "field '%s' missing in date table", key);
  }
  lua_pop(L, 1);
  return value;
}

void setIntField(lua_State* L, const char* key, long long value) {
  lua_pushnumber(L, static_cast<lua_Number>(value));
  lua_setfield(L, -2, key);
}

// lua_pcall as one level of C depth, restoring the depth the unwinding may have skipped.
// Once the call is tripped an error is raised on instead of returned.
int protectedCall(lua_State* L, int nargs) {
  LuaState& state = LuaState::from(L);
  const int depth = state.callDepth();
  int status = 0;
  {
    LuaState::CallDepth level(L);
    status = lua_pcall(L, nargs, LUA_MULTRET, 0);
  }
  state.restoreCallDepth(depth);
  if (status != 0 && state.tripped()) lua_error(L);
  return status;
}

}  // namespace

std::string callerWhere(lua_State* L) {
  lua_Debug ar;
  if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
    return std::string(ar.short_src) + ":" + std::to_string(ar.currentline);
  }
  return "";
}

int basePrint(lua_State* L) {
  LuaState::CallDepth depth(L);
  const int n = lua_gettop(L);
  luaL_Buffer buffer;
  luaL_buffinit(L, &buffer);
  for (int i = 1; i <= n; ++i) {
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, i);
    lua_call(L, 1, 1);
    if (!lua_isstring(L, -1)) return luaL_error(L, "'tostring' must return a string to 'print'");
    if (i > 1) luaL_addchar(&buffer, '\t');
    luaL_addvalue(&buffer);
  }
  luaL_pushresult(&buffer);
  LuaState::from(L).log({"info", callerWhere(L), lua_tostring(L, -1), nullptr});
  return 0;
}

int callingBack(lua_State* L) {
  LuaState::CallDepth depth(L);
  const int nargs = lua_gettop(L);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, nargs, LUA_MULTRET);
  LuaState::from(L).checkLimits(L);
  return lua_gettop(L);
}

int basePcall(lua_State* L) {
  luaL_checkany(L, 1);
  const int status = protectedCall(L, lua_gettop(L) - 1);
  lua_pushboolean(L, status == 0);
  lua_insert(L, 1);
  return lua_gettop(L);
}

int baseXpcall(lua_State* L) {
  const int n = lua_gettop(L);
  luaL_checkany(L, 2);
  lua_pushvalue(L, 1);
  for (int i = 3; i <= n; ++i) lua_pushvalue(L, i);
  if (protectedCall(L, n - 2 < 0 ? 0 : n - 2) == 0) {
    lua_pushboolean(L, 1);
    lua_insert(L, n + 1);
    return lua_gettop(L) - n;
  }
  lua_pushvalue(L, 2);
  lua_insert(L, -2);
  protectedCall(L, 1);  // an error in the handler becomes the result, as in Lua
  lua_settop(L, n + 1);
  lua_pushboolean(L, 0);
  lua_insert(L, -2);
  return 2;
}

int tableSort(lua_State* L) {
  if (lua_isnoneornil(L, 2)) {
    lua_settop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(2));
  }
  return refuseReadOnlyFirstArgument(L);
}

void pushLessThan(lua_State* L) {
  loadTextChunk(L, "return function(a, b) return a < b end", "table.sort");
  lua_call(L, 0, 1);
}

int osTime(lua_State* L) {
  if (lua_isnoneornil(L, 1)) {
    lua_pushnumber(L, static_cast<lua_Number>(epochSeconds(LuaState::from(L).clock().now())));
    return 1;
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  std::tm tm{};
  tm.tm_sec = tableField(L, "sec", 0);
  tm.tm_min = tableField(L, "min", 0);
  tm.tm_hour = tableField(L, "hour", 12);
  tm.tm_mday = tableField(L, "day", -1);
  tm.tm_mon = tableField(L, "month", -1) - 1;
  tm.tm_year = tableField(L, "year", -1) - 1900;
  lua_pushnumber(L, static_cast<lua_Number>(timegm(&tm)));
  return 1;
}

int osDate(lua_State* L) {
  const char* format = luaL_optstring(L, 1, "%c");
  TimePoint when = LuaState::from(L).clock().now();
  if (!lua_isnoneornil(L, 2) && !timeOfUnixSeconds(luaL_checknumber(L, 2), &when)) {
    return luaL_error(L, "os.date: time out of range (years 1677 to 2262)");
  }
  const std::time_t t = epochSeconds(when);
  if (*format == '!') ++format;  // always UTC
  if (format[0] == '*' && format[1] == 't') {
    pushTimeTable(L, when);
    return 1;
  }
  std::tm tm{};
  gmtime_r(&t, &tm);
  char out[512];
  const size_t len = std::strftime(out, sizeof out, format, &tm);
  if (len == 0 && *format != '\0') return luaL_error(L, "os.date: format too long or empty result");
  lua_pushlstring(L, out, len);
  return 1;
}

int osClock(lua_State* L) {
  lua_pushnumber(L, static_cast<lua_Number>(std::clock()) / CLOCKS_PER_SEC);
  return 1;
}

int mathRandom(lua_State* L) {
  const double r = static_cast<double>(LuaState::from(L).nextRandom() >> 11) * 0x1.0p-53;
  switch (lua_gettop(L)) {
    case 0: lua_pushnumber(L, r); return 1;
    case 1: {
      const double upper = std::floor(luaL_checknumber(L, 1));
      luaL_argcheck(L, upper >= 1, 1, "interval is empty");
      lua_pushnumber(L, std::floor(r * upper) + 1);
      return 1;
    }
    case 2: {
      const double lower = std::floor(luaL_checknumber(L, 1));
      const double upper = std::floor(luaL_checknumber(L, 2));
      luaL_argcheck(L, lower <= upper, 2, "interval is empty");
      lua_pushnumber(L, std::floor(r * (upper - lower + 1)) + lower);
      return 1;
    }
    default: return luaL_error(L, "wrong number of arguments");
  }
}

int mathRandomseed(lua_State* L) {
  LuaState::from(L).seedRandom(static_cast<uint64_t>(luaL_checknumber(L, 1)));
  return 0;
}

void pushTimeTable(lua_State* L, TimePoint t) {
  // Calendar arithmetic rather than gmtime_r, which takes glibc's time zone lock: ctx.now()
  // runs in most decisions.
  using namespace std::chrono;
  const std::time_t secs = epochSeconds(t);
  const sys_days day = floor<days>(sys_seconds{seconds{secs}});
  const year_month_day date{day};
  const long long in_day = secs - duration_cast<seconds>(day.time_since_epoch()).count();
  const long long year = static_cast<int>(date.year());
  const long long month = static_cast<unsigned>(date.month());
  const long long mday = static_cast<unsigned>(date.day());
  const long long hour = in_day / 3600, minute = in_day / 60 % 60, second = in_day % 60;
  lua_createtable(L, 0, 11);
  setIntField(L, "year", year);
  setIntField(L, "month", month);
  setIntField(L, "day", mday);
  setIntField(L, "hour", hour);
  setIntField(L, "min", minute);
  setIntField(L, "sec", second);
  setIntField(L, "wday", weekday{day}.c_encoding() + 1);
  setIntField(L, "yday", (day - sys_days{date.year() / January / 1}).count() + 1);
  setIntField(L, "epoch", secs);
  char iso[48];
  int len = 0;
  if (year >= 0 && year <= 9999) {
    // "%04d-%02d-%02dT%02d:%02d:%02dZ" by hand: snprintf costs more than the rest of ctx.now().
    char* out = iso;
    auto digits = [&out](long long value, int width) {
      for (int i = width - 1; i >= 0; --i, value /= 10) out[i] = static_cast<char>('0' + value % 10);
      out += width;
    };
    digits(year, 4);
    *out++ = '-';
    digits(month, 2);
    *out++ = '-';
    digits(mday, 2);
    *out++ = 'T';
    digits(hour, 2);
    *out++ = ':';
    digits(minute, 2);
    *out++ = ':';
    digits(second, 2);
    *out++ = 'Z';
    len = static_cast<int>(out - iso);
  } else {
    len = std::snprintf(iso, sizeof iso, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ", year, month, mday, hour, minute,
                        second);
  }
  lua_pushlstring(L, iso, static_cast<size_t>(len));
  lua_setfield(L, -2, "iso");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "isdst");
}

}  // namespace tide::lua
