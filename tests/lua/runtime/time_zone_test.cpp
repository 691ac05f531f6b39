#include "host/lua/runtime/time_zone.h"
#include <doctest/doctest.h>

#include "host/core/clock.h"

using namespace tide;
using namespace tide::lua;

namespace {

int64_t unixSecondsOf(const char* utc) {
  return std::chrono::duration_cast<std::chrono::seconds>(parseTimestamp(utc)->time_since_epoch()).count();
}

// "2026-03-29T03:00:00 CEST +7200 dst Sun(1)"
std::string zonedReading(const char* utc, const char* zone) {
  Result<ZonedTime> t = zonedTime(unixSecondsOf(utc), zone);
  if (!t.isOk()) return "error: " + t.status().message();
  return formatCivilTime(t->local) + " " + t->abbrev + " " + std::to_string(t->offset_seconds) +
         (t->dst ? " dst" : " std") + " wday " + std::to_string(t->weekday) + " yday " + std::to_string(t->yday);
}

std::string utcOfLocal(const char* local, const char* zone) {
  Result<CivilTime> civil = parseCivilTime(local);
  REQUIRE(civil.isOk());
  Result<int64_t> epoch = unixSecondsOfLocal(*civil, zone);
  if (!epoch.isOk()) return "error: " + epoch.status().message();
  return formatTimestamp(TimePoint(std::chrono::seconds(*epoch)));
}

}  // namespace

TEST_CASE("time zones: Europe/Berlin's clocks jump on both DST changes of 2026") {
  // Spring forward on Sunday 2026-03-29 at 01:00 UTC: 02:00 CET becomes 03:00 CEST.
  CHECK(zonedReading("2026-03-29T00:59:59Z", "Europe/Berlin") == "2026-03-29T01:59:59 CET 3600 std wday 1 yday 88");
  CHECK(zonedReading("2026-03-29T01:00:00Z", "Europe/Berlin") == "2026-03-29T03:00:00 CEST 7200 dst wday 1 yday 88");
  // Fall back on Sunday 2026-10-25 at 01:00 UTC: 03:00 CEST becomes 02:00 CET.
  CHECK(zonedReading("2026-10-25T00:59:59Z", "Europe/Berlin") == "2026-10-25T02:59:59 CEST 7200 dst wday 1 yday 298");
  CHECK(zonedReading("2026-10-25T01:00:00Z", "Europe/Berlin") == "2026-10-25T02:00:00 CET 3600 std wday 1 yday 298");
  // A local date that differs from the UTC one.
  CHECK(zonedReading("2026-12-31T23:30:00Z", "Europe/Berlin") == "2027-01-01T00:30:00 CET 3600 std wday 6 yday 1");
}

TEST_CASE("time zones: America/New_York's clocks jump on both DST changes of 2026") {
  CHECK(zonedReading("2026-03-08T06:59:59Z", "America/New_York") ==
        "2026-03-08T01:59:59 EST -18000 std wday 1 yday 67");
  CHECK(zonedReading("2026-03-08T07:00:00Z", "America/New_York") ==
        "2026-03-08T03:00:00 EDT -14400 dst wday 1 yday 67");
  CHECK(zonedReading("2026-11-01T05:59:59Z", "America/New_York") ==
        "2026-11-01T01:59:59 EDT -14400 dst wday 1 yday 305");
  CHECK(zonedReading("2026-11-01T06:00:00Z", "America/New_York") ==
        "2026-11-01T01:00:00 EST -18000 std wday 1 yday 305");
  CHECK(zonedReading("2026-03-03T10:00:00Z", "UTC") == "2026-03-03T10:00:00 UTC 0 std wday 3 yday 62");
}

TEST_CASE("time zones: a local reading becomes the instant the zone's clocks show it") {
  CHECK(utcOfLocal("2026-12-24T18:00:00", "Europe/Berlin") == "2026-12-24T17:00:00.000Z");
  CHECK(utcOfLocal("2026-07-01T09:00:00", "Europe/Berlin") == "2026-07-01T07:00:00.000Z");
  CHECK(utcOfLocal("2026-07-01T09:00:00", "America/New_York") == "2026-07-01T13:00:00.000Z");
  // Passed twice when the clocks fall back: the first time (still CEST, EDT).
  CHECK(utcOfLocal("2026-10-25T02:30:00", "Europe/Berlin") == "2026-10-25T00:30:00.000Z");
  CHECK(utcOfLocal("2026-11-01T01:30:00", "America/New_York") == "2026-11-01T05:30:00.000Z");
  // Skipped when they spring forward: refused, saying what the clocks do.
  CHECK(utcOfLocal("2026-03-29T02:30:00", "Europe/Berlin") ==
        "error: 2026-03-29T02:30:00 does not exist in Europe/Berlin: its clocks go from 02:00 to 03:00 that night");
  CHECK(utcOfLocal("2026-03-08T02:00:00", "America/New_York") ==
        "error: 2026-03-08T02:00:00 does not exist in America/New_York: its clocks go from 02:00 to 03:00 that night");
  // The minutes either side of the gap exist.
  CHECK(utcOfLocal("2026-03-29T01:59:59", "Europe/Berlin") == "2026-03-29T00:59:59.000Z");
  CHECK(utcOfLocal("2026-03-29T03:00:00", "Europe/Berlin") == "2026-03-29T01:00:00.000Z");
}

TEST_CASE("time zones: every hour of 2026 in Berlin reads back as itself, but for the repeated one") {
  const int64_t start = unixSecondsOf("2026-01-01T00:00:00Z");
  const int64_t repeated_from = unixSecondsOf("2026-10-25T01:00:00Z");  // 02:00-02:59 CET, the second time
  int checked = 0;
  for (int64_t t = start; t < start + 365 * 86400; t += 1800) {
    Result<ZonedTime> zoned = zonedTime(t, "Europe/Berlin");
    REQUIRE(zoned.isOk());
    Result<int64_t> back = unixSecondsOfLocal(zoned->local, "Europe/Berlin");
    REQUIRE(back.isOk());
    if (t >= repeated_from && t < repeated_from + 3600) {
      CHECK(*back == t - 3600);
    } else {
      CHECK(*back == t);
    }
    ++checked;
  }
  CHECK(checked == 365 * 48);
}

TEST_CASE("time zones: an unknown zone is an error naming it") {
  for (const char* zone : {"Europe/Berln", "", "europe/berlin", "../../etc/passwd", "posixrules", "CEST"}) {
    CAPTURE(zone);
    const std::string expected = std::string("unknown time zone '") + zone + "'";
    CHECK(checkTimeZone(zone).message().find(expected) == 0);
    CHECK(zonedTime(0, zone).status().message().find(expected) == 0);
    CHECK(unixSecondsOfLocal(CivilTime{2026, 1, 1, 0, 0, 0}, zone).status().message().find(expected) == 0);
  }
  const std::string huge(100000, 'x');
  CHECK(checkTimeZone(huge).message().find("unknown time zone '" + std::string(64, 'x') + "...'") == 0);
  CHECK(checkTimeZone("Europe/Berlin").isOk());
  CHECK(checkTimeZone("UTC").isOk());
}

TEST_CASE("time zones: local readings are parsed strictly") {
  Result<CivilTime> t = parseCivilTime("2026-12-24T18:05:09");
  REQUIRE(t.isOk());
  CHECK(formatCivilTime(*t) == "2026-12-24T18:05:09");
  CHECK(t->year == 2026);
  CHECK(t->second == 9);
  for (const char* bad : {"2026-12-24T18:00:00Z", "2026-12-24 18:00:00", "2026-12-24T18:00", "", "2026-02-29T00:00:00",
                          "2026-13-01T00:00:00", "2026-12-24T24:00:00", "2026-12-24T18:60:00", "x026-12-24T18:00:00",
                          "1600-01-01T00:00:00", "2026-12-24T18:00:0 "}) {
    CAPTURE(bad);
    CHECK_FALSE(parseCivilTime(bad).isOk());
  }
  CHECK(parseCivilTime("2028-02-29T00:00:00").isOk());
  CHECK(parseCivilTime("2026-12-24T18:00:00Z").status().message().find("YYYY-MM-DDTHH:MM:SS") != std::string::npos);
}
