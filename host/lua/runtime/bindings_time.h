#pragma once
// The verbs of libraries (scripts/lib/*.lua): host functions only tide.lib code calls, and
// wraps for scripts. tide.lib.time (scripts/lib/time.lua) turns them into local_time,
// parse_local and check_zone (docs/lua.md#shared-helpers-tidelib). Pure functions of their
// arguments and the OS's tz database (time_zone.h): no other I/O, no clock.
//
//   zone_local_time(epoch, zone) -> { year, month, day, hour, min, sec, wday (1 = Sunday),
//       yday, epoch, offset_seconds, zone_abbrev, isdst, zone, iso ("2026-03-29T03:00:00+02:00") }
//   zone_parse_local("2026-12-24T18:00:00", zone) -> epoch seconds
//   zone_check(zone) -> zone
//
// Each returns nil and a message instead when the zone is unknown or the time is not one
// (so the lib can raise the error at its caller's line); a wrong argument type raises.

#include <span>

#include "host/lua/runtime/sandbox.h"

namespace tide::lua {

std::span<const Verb> libVerbs();

}  // namespace tide::lua
