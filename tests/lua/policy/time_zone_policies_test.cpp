// The shipped business_hours and change_freeze policies set to a time zone, decided on both
// sides of a daylight-saving change, and tide.lib.time as policies call it.
#include <doctest/doctest.h>

#include <regex>

#include "host/lua/policy/policy_data.h"
#include "host/lua/policy/policy_engine.h"
#include "tests/lua/lua_test_util.h"

using namespace tide;
using namespace tide::lua;
using namespace tide::lua::testing;

namespace {

class NoPolicyData final : public PolicyDataSource {
 public:
  Result<int64_t> inFlight(const Json&) override { return int64_t{0}; }
  Result<int64_t> count(const Json&) override { return int64_t{0}; }
  Result<int64_t> recentFailures(const Json&) override { return int64_t{0}; }
  Result<Json> instances(const std::string&) override { return Json::array(); }
  Result<Json> node(const std::string&) override { return Json(nullptr); }
};

std::string shippedPolicy(const std::string& file) {
  std::ifstream in(std::filesystem::path(TIDE_SOURCE_DIR) / "policies" / file);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The shipped file with `from` replaced by `to`, as an operator edits it.
std::string editedPolicy(const std::string& file, const std::string& from, const std::string& to) {
  std::string text = shippedPolicy(file);
  const size_t at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, file << " no longer contains " << from);
  return text.replace(at, from.size(), to);
}

// A registry over the shipped libs and the one policy file given.
struct ZonedPolicy {
  ZonedPolicy(const std::string& file, const std::string& text) {
    std::filesystem::copy(std::filesystem::path(TIDE_SOURCE_DIR) / "scripts" / "lib",
                          fx.dir.path() / "scripts" / "lib");
    writeFile(fx.policy(file), text);
    summary = fx.registry->reloadAll();
  }

  // "verdict: reason" of the only policy at `utc`, or "not_applicable".
  std::string decideAt(const char* utc, const char* ns = "prod-web") {
    fx.clock.set(*parseTimestamp(utc));
    PolicyEngine engine(*fx.registry, fx.clock);
    NoPolicyData data;
    const Json op = {{"type", "UPDATE"}, {"meta_instance", "web-1"}, {"plan", {{"name", "web"}, {"namespace", ns}}}};
    const Evaluation e = engine.evaluate(op, data);
    if (e.decisions.empty()) return "not_applicable";  // the engine lists only the policies that applied
    REQUIRE(e.decisions.size() == 1);
    const auto& record = e.decisions[0].record;
    return record.verdict + (record.reasons.empty() ? "" : ": " + record.reasons[0].get<std::string>());
  }

  RegistryFixture fx;
  ReloadSummary summary;
};

bool beginsWith(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

TEST_CASE("time zones: business hours in Europe/Berlin open at 09:00 local on both sides of each DST change") {
  ZonedPolicy p("business_hours.lua", editedPolicy("business_hours.lua", "zone = \"UTC\"", "zone = \"Europe/Berlin\""));
  REQUIRE(p.summary.failed == 0);
  // Friday 2026-03-27, CET (UTC+1), and Monday 2026-03-30, CEST (UTC+2): the clocks sprang
  // forward on the Sunday between.
  CHECK(p.decideAt("2026-03-27T07:59:00Z") ==
        "manual: outside business hours (Mon-Fri 09:00-17:00 Europe/Berlin): it is Fri 08:59 CET");
  CHECK(p.decideAt("2026-03-27T08:00:00Z") == "abstain");
  CHECK(p.decideAt("2026-03-27T15:59:00Z") == "abstain");
  CHECK(beginsWith(p.decideAt("2026-03-27T16:00:00Z"), "manual: outside business hours"));
  CHECK(p.decideAt("2026-03-30T06:59:00Z") ==
        "manual: outside business hours (Mon-Fri 09:00-17:00 Europe/Berlin): it is Mon 08:59 CEST");
  CHECK(p.decideAt("2026-03-30T07:00:00Z") == "abstain");
  CHECK(p.decideAt("2026-03-30T14:59:00Z") == "abstain");
  CHECK(p.decideAt("2026-03-30T15:00:00Z") ==
        "manual: outside business hours (Mon-Fri 09:00-17:00 Europe/Berlin): it is Mon 17:00 CEST");
  // Friday 2026-10-23, CEST, and Monday 2026-10-26, CET: they fell back on the Sunday between.
  CHECK(p.decideAt("2026-10-23T07:00:00Z") == "abstain");
  CHECK(p.decideAt("2026-10-23T15:00:00Z") ==
        "manual: outside business hours (Mon-Fri 09:00-17:00 Europe/Berlin): it is Fri 17:00 CEST");
  CHECK(p.decideAt("2026-10-26T07:00:00Z") ==
        "manual: outside business hours (Mon-Fri 09:00-17:00 Europe/Berlin): it is Mon 08:00 CET");
  CHECK(p.decideAt("2026-10-26T08:00:00Z") == "abstain");
  CHECK(p.decideAt("2026-10-26T15:59:00Z") == "abstain");
  // Sunday 2026-03-29 across the jump itself is closed all day, as a Sunday should be.
  CHECK(beginsWith(p.decideAt("2026-03-29T09:00:00Z"), "manual: outside business hours"));
  CHECK(p.decideAt("2026-03-30T07:00:00Z", "dev-web") == "not_applicable");
}

TEST_CASE("time zones: business hours in America/New_York follow its own DST dates") {
  ZonedPolicy p("business_hours.lua",
                editedPolicy("business_hours.lua", "zone = \"UTC\"", "zone = \"America/New_York\""));
  REQUIRE(p.summary.failed == 0);
  // Friday 2026-03-06, EST (UTC-5); Monday 2026-03-09, EDT (UTC-4); Europe has not moved yet.
  CHECK(p.decideAt("2026-03-06T13:59:00Z") ==
        "manual: outside business hours (Mon-Fri 09:00-17:00 America/New_York): it is Fri 08:59 EST");
  CHECK(p.decideAt("2026-03-06T14:00:00Z") == "abstain");
  CHECK(p.decideAt("2026-03-09T12:59:00Z") ==
        "manual: outside business hours (Mon-Fri 09:00-17:00 America/New_York): it is Mon 08:59 EDT");
  CHECK(p.decideAt("2026-03-09T13:00:00Z") == "abstain");
  CHECK(p.decideAt("2026-03-09T20:59:00Z") == "abstain");
  CHECK(beginsWith(p.decideAt("2026-03-09T21:00:00Z"), "manual: outside business hours"));
  // Friday evening in New York is Saturday in UTC, and still business hours.
  CHECK(p.decideAt("2026-03-07T01:30:00Z") ==
        "manual: outside business hours (Mon-Fri 09:00-17:00 America/New_York): it is Fri 20:30 EST");
  CHECK(p.decideAt("2026-11-02T14:00:00Z") == "abstain");  // Monday after fall-back, 09:00 EST
  CHECK(beginsWith(p.decideAt("2026-11-02T13:59:00Z"), "manual: outside business hours"));
}

TEST_CASE("time zones: a change freeze in Europe/Berlin starts and ends at the local times written across DST") {
  // The shipped freezes stay (the file's own tests decide them), read in the file's zone,
  // now Asia/Tokyo; the freezes before them name their own zones or are UTC.
  const std::string freezes = R"(
  { from = "2026-03-27T18:00:00", to = "2026-03-30T06:00:00", zone = "Europe/Berlin", reason = "spring release weekend" },
  { from = "2026-10-23T18:00:00", to = "2026-10-26T06:00:00", zone = "Europe/Berlin", reason = "autumn release weekend" },
  { from = "2026-11-01T00:00:00", to = "2026-11-01T03:00:00", zone = "America/New_York", reason = "the night NY falls back" },
  { from = "2026-06-01T00:00:00Z", to = "2026-06-02T00:00:00Z", reason = "a UTC freeze" },
  { from = "2026-06-03T00:00:00", to = "2026-06-04T00:00:00", reason = "in the file's zone" },)";
  const std::string text = editedPolicy("change_freeze.lua", "local zone = \"UTC\"\nlocal freezes = {",
                                        "local zone = \"Asia/Tokyo\"\nlocal freezes = {" + freezes);
  ZonedPolicy p("change_freeze.lua", text);
  REQUIRE_MESSAGE(p.summary.failed == 0, (p.summary.errors.empty() ? "" : p.summary.errors[0]));
  // Spring: from 18:00 CET (17:00 UTC) to 06:00 CEST (04:00 UTC).
  CHECK(p.decideAt("2026-03-27T16:59:59Z") == "abstain");
  CHECK(p.decideAt("2026-03-27T17:00:00Z") == "deny: spring release weekend until 2026-03-30T06:00:00 Europe/Berlin");
  CHECK(beginsWith(p.decideAt("2026-03-30T03:59:59Z"), "deny: spring release weekend"));
  CHECK(p.decideAt("2026-03-30T04:00:00Z") == "abstain");
  // Autumn: from 18:00 CEST (16:00 UTC) to 06:00 CET (05:00 UTC).
  CHECK(p.decideAt("2026-10-23T15:59:59Z") == "abstain");
  CHECK(beginsWith(p.decideAt("2026-10-23T16:00:00Z"), "deny: autumn release weekend"));
  CHECK(beginsWith(p.decideAt("2026-10-26T04:59:59Z"), "deny: autumn release weekend"));
  CHECK(p.decideAt("2026-10-26T05:00:00Z") == "abstain");
  // New York: 00:00 EDT (04:00 UTC) to 03:00 EST (08:00 UTC), four hours for three on the wall.
  CHECK(p.decideAt("2026-11-01T03:59:59Z") == "abstain");
  CHECK(beginsWith(p.decideAt("2026-11-01T04:00:00Z"), "deny: the night NY falls back"));
  CHECK(beginsWith(p.decideAt("2026-11-01T07:59:59Z"), "deny: the night NY falls back"));
  CHECK(p.decideAt("2026-11-01T08:00:00Z") == "abstain");
  // Times ending in Z stay UTC; the others without a zone take the file's (UTC+9).
  CHECK(p.decideAt("2026-05-31T23:59:59Z") == "abstain");
  CHECK(p.decideAt("2026-06-01T00:00:00Z") == "deny: a UTC freeze until 2026-06-02T00:00:00Z");
  CHECK(p.decideAt("2026-06-02T14:59:59Z") == "abstain");
  CHECK(p.decideAt("2026-06-02T15:00:00Z") == "deny: in the file's zone until 2026-06-04T00:00:00 Asia/Tokyo");
  CHECK(p.decideAt("2026-12-20T15:00:00Z") == "deny: year-end freeze until 2027-01-04T00:00:00 Asia/Tokyo");
}

TEST_CASE("time zones: a policy naming an unknown zone or a skipped local time fails its reload, saying which") {
  {
    ZonedPolicy p("business_hours.lua",
                  editedPolicy("business_hours.lua", "zone = \"UTC\"", "zone = \"Europe/Berln\""));
    CHECK(p.summary.failed == 1);
    REQUIRE(p.summary.errors.size() == 1);
    // At the line of the policy that named it.
    CHECK(std::regex_search(p.summary.errors[0],
                            std::regex(R"(business_hours\.lua:\d+: check_zone: unknown time zone 'Europe/Berln')")));
  }
  {
    ZonedPolicy p(
        "change_freeze.lua",
        editedPolicy("change_freeze.lua", "{ from = \"2026-11-26T00:00:00\", to = \"2026-11-30T00:00:00\",",
                     "{ from = \"2026-03-29T02:30:00\", to = \"2026-03-30T00:00:00\", zone = \"Europe/Berlin\","));
    CHECK(p.summary.failed == 1);
    REQUIRE(p.summary.errors.size() == 1);
    CHECK(std::regex_search(p.summary.errors[0],
                            std::regex(R"(change_freeze\.lua:\d+: parse_local: 2026-03-29T02:30:00 does not exist in )"
                                       R"(Europe/Berlin: its clocks go from 02:00 to 03:00 that night)")));
  }
}

TEST_CASE("time zones: tide.lib.time gives policies local time, parses local readings and names what is wrong") {
  ZonedPolicy p("zones.lua", R"(
    local time = tide.lib.time
    local function failure(f, ...)
      local ok, message = pcall(f, ...)
      return ok and "no error" or message
    end
    return {
      name = "zones",
      decide = function(op, ctx)
        local berlin = time.local_time(ctx.now(), "Europe/Berlin")
        local tokyo = time.local_time(berlin.epoch, "Asia/Tokyo")
        local parts = {
          berlin.iso, berlin.zone, berlin.zone_abbrev, tostring(berlin.offset_seconds), tostring(berlin.isdst),
          time.weekday(berlin), tostring(berlin.yday), tokyo.iso, time.weekday(tokyo),
          tostring(time.parse_local("2026-12-24T18:00:00", "Europe/Berlin")),
          time.check_zone("America/New_York"),
          failure(time.local_time, ctx.now(), "Mars/Olympus_Mons"),
          failure(time.local_time, ctx.now()),
          failure(time.local_time, "now", "UTC"),
          failure(time.parse_local, "2026-12-24T18:00:00Z", "UTC"),
          failure(time.parse_local, "2026-10-25T02:30:00", "Europe/Berlin") ~= "no error" and "error" or "earlier",
        }
        return approve(table.concat(parts, " | "))
      end,
    })");
  REQUIRE(p.summary.failed == 0);
  const std::string reason = p.decideAt("2026-03-29T22:30:00Z");
  CHECK(reason ==
        "approve: 2026-03-30T00:30:00+02:00 | Europe/Berlin | CEST | 7200 | true | Mon | 89 | "
        "2026-03-30T07:30:00+09:00 | Mon | 1798131600 | America/New_York | "
        "local_time: unknown time zone 'Mars/Olympus_Mons' (not in the OS's tz database, /usr/share/zoneinfo: "
        "an IANA name such as \"Europe/Berlin\", \"America/New_York\" or \"UTC\") | "
        "local_time: the zone (\"Europe/Berlin\") must be a string, got nil | "
        "local_time: expected ctx.now() or seconds since the epoch, got string | "
        "parse_local: not a local date and time (YYYY-MM-DDTHH:MM:SS, no zone): '2026-12-24T18:00:00Z' | earlier");
}

TEST_CASE("time zones: a policy test's now may be a local time in a zone") {
  const TimePoint fallback = *parseTimestamp("2026-01-05T12:00:00Z");
  CHECK(*fixtureNow(Json{{"now", "2026-03-30T08:59:00 Europe/Berlin"}}, fallback) ==
        *parseTimestamp("2026-03-30T06:59:00Z"));
  CHECK(*fixtureNow(Json{{"now", "2026-03-27T08:59:00 Europe/Berlin"}}, fallback) ==
        *parseTimestamp("2026-03-27T07:59:00Z"));
  CHECK(*fixtureNow(Json{{"now", "2026-03-03T10:00:00Z"}}, fallback) == *parseTimestamp("2026-03-03T10:00:00Z"));
  CHECK(fixtureNow(Json{{"now", "2026-03-29T02:30:00 Europe/Berlin"}}, fallback)
            .status()
            .message()
            .find("does not exist in Europe/Berlin") != std::string::npos);
  CHECK(fixtureNow(Json{{"now", "2026-03-30T08:59:00 Europe/Berln"}}, fallback)
            .status()
            .message()
            .find("unknown time zone 'Europe/Berln'") != std::string::npos);
}
