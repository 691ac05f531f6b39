#pragma once
// Local time in IANA time zones ("Europe/Berlin"), read from the OS's tz database
// (/usr/share/zoneinfo, Debian's tzdata) through Howard Hinnant's date/tz library
// (libhowardhinnant-date-dev). This is the one file that calls it: the library throws, and
// these functions return Status values instead. For tide.lib.time (bindings_time.h) and
// the `now` of policy test fixtures (docs/architecture.md#the-lua-host).
//
// Thread-safe: the database is read once per process and is immutable afterwards; a zone's
// transitions load on its first use, once.

#include <cstdint>
#include <string>
#include <string_view>

#include "host/core/status.h"

namespace tide::lua {

// A wall-clock reading without a zone: "2026-12-24T18:00:00".
struct CivilTime {
  int year = 1970;
  int month = 1;
  int day = 1;
  int hour = 0;
  int minute = 0;
  int second = 0;
};

// An instant as the clocks of one zone show it.
struct ZonedTime {
  CivilTime local;
  int weekday = 1;             // 1 = Sunday ... 7 = Saturday, as os.date's wday and ctx.now().wday
  int yday = 1;                // 1 = January 1st
  int64_t offset_seconds = 0;  // local minus UTC: 3600 for CET, 7200 for CEST, -18000 for EST
  std::string abbrev;          // "CET", "CEST", "EST"; "UTC"
  bool dst = false;            // daylight-saving time in effect
};

// Reads the tz database now, so the first script to ask for a zone does not spend its
// deadline on it (about 40 ms). Idempotent; a missing database is reported later, by the
// first lookup.
void loadTimeZoneDatabase();

// Whether `zone` names a zone of the database; InvalidArgument names it otherwise.
Status checkTimeZone(std::string_view zone);

// The instant `unix_seconds` (seconds since the epoch, UTC) as the clocks of `zone` show it.
Result<ZonedTime> zonedTime(int64_t unix_seconds, std::string_view zone);

// The instant at which the clocks of `zone` show `local`. A reading the clocks pass twice
// (the hour after a fall-back) is the earlier of the two instants; one they skip (the hour
// of a spring-forward) is InvalidArgument, saying what the clocks do then.
Result<int64_t> unixSecondsOfLocal(const CivilTime& local, std::string_view zone);

// "YYYY-MM-DDTHH:MM:SS", each field in range (no zone, no 'Z'); InvalidArgument otherwise.
Result<CivilTime> parseCivilTime(std::string_view text);

// "YYYY-MM-DDTHH:MM:SS" of `time`.
std::string formatCivilTime(const CivilTime& time);

}  // namespace tide::lua
