#include "host/lua/runtime/bindings_time.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include <lua.hpp>

#include "host/core/clock.h"
#include "host/lua/runtime/guard.h"
#include "host/lua/runtime/time_zone.h"

namespace tide::lua {
namespace {

// The string argument at `index` (raising for a non-string), as a view into Lua's copy.
std::string_view stringArgument(lua_State* L, int index) {
  size_t length = 0;
  const char* text = luaL_checklstring(L, index, &length);
  return {text, length};
}

int nilAndMessage(lua_State* L, const Status& status) {
  lua_pushnil(L);
  lua_pushstring(L, status.message().c_str());
  return 2;
}

void setNumberField(lua_State* L, const char* key, long long value) {
  lua_pushnumber(L, static_cast<lua_Number>(value));
  lua_setfield(L, -2, key);
}

// "+02:00", "-05:00", "+05:45"
std::string offsetText(int64_t offset_seconds) {
  const int64_t minutes = (offset_seconds < 0 ? -offset_seconds : offset_seconds) / 60;
  char text[16];
  std::snprintf(text, sizeof text, "%c%02d:%02d", offset_seconds < 0 ? '-' : '+', static_cast<int>(minutes / 60),
                static_cast<int>(minutes % 60));
  return text;
}

int zoneLocalTime(lua_State* L) {
  const lua_Number epoch = std::floor(luaL_checknumber(L, 1));
  const std::string_view zone = stringArgument(L, 2);
  if (Result<TimePoint> in_range = timeFromUnixSeconds(epoch); !in_range.isOk()) {
    return nilAndMessage(L, in_range.status());
  }
  Result<ZonedTime> zoned = zonedTime(static_cast<int64_t>(epoch), zone);
  if (!zoned.isOk()) return nilAndMessage(L, zoned.status());
  const ZonedTime& t = *zoned;
  lua_createtable(L, 0, 14);
  setNumberField(L, "year", t.local.year);
  setNumberField(L, "month", t.local.month);
  setNumberField(L, "day", t.local.day);
  setNumberField(L, "hour", t.local.hour);
  setNumberField(L, "min", t.local.minute);
  setNumberField(L, "sec", t.local.second);
  setNumberField(L, "wday", t.weekday);
  setNumberField(L, "yday", t.yday);
  setNumberField(L, "epoch", static_cast<long long>(epoch));
  setNumberField(L, "offset_seconds", t.offset_seconds);
  lua_pushstring(L, t.abbrev.c_str());
  lua_setfield(L, -2, "zone_abbrev");
  lua_pushboolean(L, t.dst);
  lua_setfield(L, -2, "isdst");
  lua_pushvalue(L, 2);
  lua_setfield(L, -2, "zone");
  const std::string iso = formatCivilTime(t.local) + offsetText(t.offset_seconds);
  lua_pushstring(L, iso.c_str());
  lua_setfield(L, -2, "iso");
  return 1;
}

int zoneParseLocal(lua_State* L) {
  const std::string_view text = stringArgument(L, 1);
  const std::string_view zone = stringArgument(L, 2);
  Result<CivilTime> local = parseCivilTime(text);
  if (!local.isOk()) return nilAndMessage(L, local.status());
  Result<int64_t> epoch = unixSecondsOfLocal(*local, zone);
  if (!epoch.isOk()) return nilAndMessage(L, epoch.status());
  lua_pushnumber(L, static_cast<lua_Number>(*epoch));
  return 1;
}

int zoneCheck(lua_State* L) {
  if (Status known = checkTimeZone(stringArgument(L, 1)); !known.isOk()) return nilAndMessage(L, known);
  lua_pushvalue(L, 1);
  return 1;
}

const Verb kLibVerbs[] = {
    {"zone_check", guarded<zoneCheck>},
    {"zone_local_time", guarded<zoneLocalTime>},
    {"zone_parse_local", guarded<zoneParseLocal>},
};

}  // namespace

std::span<const Verb> libVerbs() { return kLibVerbs; }

}  // namespace tide::lua
