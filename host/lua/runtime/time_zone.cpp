#include "host/lua/runtime/time_zone.h"

#include <date/tz.h>

#include <chrono>
#include <cstdio>
#include <exception>

namespace tide::lua {
namespace {

// The years a TimePoint holds (host/core/clock.h): readings outside them are refused
// before the library sees them.
constexpr int kFirstYear = 1678;
constexpr int kLastYear = 2261;

// Zone names are at most a few dozen bytes; a longer "name" is cut in the message.
constexpr size_t kMaxZoneNameEcho = 64;

Status unknownZone(std::string_view zone) {
  const std::string shown =
      zone.size() <= kMaxZoneNameEcho ? std::string(zone) : std::string(zone.substr(0, kMaxZoneNameEcho)) + "...";
  return Status::invalidArgument("unknown time zone '" + shown +
                                 "' (not in the OS's tz database, /usr/share/zoneinfo: an IANA name such as "
                                 "\"Europe/Berlin\", \"America/New_York\" or \"UTC\")");
}

// The zone named `zone`, or nullptr. date::locate_zone throws for an unknown name and when
// the database cannot be read; both are "unknown" to the caller.
const date::time_zone* findZone(std::string_view zone) {
  try {
    return date::locate_zone(zone);
  } catch (const std::exception&) {
    return nullptr;
  }
}

std::string hourMinute(std::chrono::seconds since_midnight) {
  const auto in_day = ((since_midnight.count() % 86400) + 86400) % 86400;
  char text[8];
  std::snprintf(text, sizeof text, "%02d:%02d", static_cast<int>(in_day / 3600), static_cast<int>(in_day / 60 % 60));
  return text;
}

bool twoDigits(std::string_view text, size_t at, int* out) {
  if (text[at] < '0' || text[at] > '9' || text[at + 1] < '0' || text[at + 1] > '9') return false;
  *out = (text[at] - '0') * 10 + (text[at + 1] - '0');
  return true;
}

Status checkCivilTime(const CivilTime& time) {
  const bool in_range = time.year >= kFirstYear && time.year <= kLastYear && time.month >= 1 && time.month <= 12 &&
                        time.day >= 1 && time.day <= 31 && time.hour >= 0 && time.hour <= 23 && time.minute >= 0 &&
                        time.minute <= 59 && time.second >= 0 && time.second <= 59;
  // In range, the fields fit the library's types; it also knows February and leap years.
  if (in_range && date::year_month_day{date::year{time.year} / time.month / time.day}.ok()) return Status::ok();
  return Status::invalidArgument("'" + formatCivilTime(time) + "' is not a date and time of the years " +
                                 std::to_string(kFirstYear) + " to " + std::to_string(kLastYear));
}

}  // namespace

void loadTimeZoneDatabase() {
  try {
    date::get_tzdb();
  } catch (const std::exception&) {
    // Reported by the first lookup, as an unknown zone.
  }
}

Status checkTimeZone(std::string_view zone) { return findZone(zone) ? Status::ok() : unknownZone(zone); }

Result<ZonedTime> zonedTime(int64_t unix_seconds, std::string_view zone) {
  const date::time_zone* tz = findZone(zone);
  if (!tz) return unknownZone(zone);
  const date::sys_seconds instant{std::chrono::seconds{unix_seconds}};
  try {
    const date::sys_info info = tz->get_info(instant);
    const date::local_seconds local{instant.time_since_epoch() + info.offset};
    const date::local_days day = date::floor<date::days>(local);
    const date::year_month_day ymd{day};
    const date::hh_mm_ss<std::chrono::seconds> time_of_day{local - day};
    ZonedTime out;
    out.local.year = static_cast<int>(ymd.year());
    out.local.month = static_cast<int>(static_cast<unsigned>(ymd.month()));
    out.local.day = static_cast<int>(static_cast<unsigned>(ymd.day()));
    out.local.hour = static_cast<int>(time_of_day.hours().count());
    out.local.minute = static_cast<int>(time_of_day.minutes().count());
    out.local.second = static_cast<int>(time_of_day.seconds().count());
    out.weekday = static_cast<int>(date::weekday{day}.c_encoding()) + 1;
    out.yday = static_cast<int>((day - date::local_days{ymd.year() / date::January / 1}).count()) + 1;
    out.offset_seconds = info.offset.count();
    out.abbrev = info.abbrev;
    out.dst = info.save != std::chrono::minutes{0};
    return out;
  } catch (const std::exception& e) {
    return Status::internal(std::string("time zone '") + std::string(zone) + "': " + e.what());
  }
}

Result<int64_t> unixSecondsOfLocal(const CivilTime& local, std::string_view zone) {
  if (Status valid = checkCivilTime(local); !valid.isOk()) return valid;
  const date::time_zone* tz = findZone(zone);
  if (!tz) return unknownZone(zone);
  const date::local_seconds reading = date::local_days{date::year{local.year} / local.month / local.day} +
                                      std::chrono::hours{local.hour} + std::chrono::minutes{local.minute} +
                                      std::chrono::seconds{local.second};
  try {
    const date::local_info info = tz->get_info(reading);
    if (info.result == date::local_info::nonexistent) {
      const std::chrono::seconds jump = info.second.begin.time_since_epoch();
      return Status::invalidArgument(formatCivilTime(local) + " does not exist in " + std::string(zone) +
                                     ": its clocks go from " + hourMinute(jump + info.first.offset) + " to " +
                                     hourMinute(jump + info.second.offset) + " that night");
    }
    // Unique, or ambiguous: `first` is the earlier of the two periods.
    return (reading.time_since_epoch() - info.first.offset).count();
  } catch (const std::exception& e) {
    return Status::internal(std::string("time zone '") + std::string(zone) + "': " + e.what());
  }
}

Result<CivilTime> parseCivilTime(std::string_view text) {
  CivilTime time;
  const bool shaped =
      text.size() == 19 && text[4] == '-' && text[7] == '-' && text[10] == 'T' && text[13] == ':' && text[16] == ':';
  int century = 0, year_in_century = 0;
  if (!shaped || !twoDigits(text, 0, &century) || !twoDigits(text, 2, &year_in_century) ||
      !twoDigits(text, 5, &time.month) || !twoDigits(text, 8, &time.day) || !twoDigits(text, 11, &time.hour) ||
      !twoDigits(text, 14, &time.minute) || !twoDigits(text, 17, &time.second)) {
    return Status::invalidArgument("not a local date and time (YYYY-MM-DDTHH:MM:SS, no zone): '" + std::string(text) +
                                   "'");
  }
  time.year = century * 100 + year_in_century;
  if (Status valid = checkCivilTime(time); !valid.isOk()) return valid;
  return time;
}

std::string formatCivilTime(const CivilTime& time) {
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d", time.year, time.month, time.day, time.hour,
                time.minute, time.second);
  return text;
}

}  // namespace tide::lua
