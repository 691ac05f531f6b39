// Waiting on a Clock: a FakeClock's waiters return when the clock is moved past their
// deadline and not before, wake() ends waits whose condition holds, and the system clock's
// waits take real time. Timestamps format and parse within the years a TimePoint holds.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <limits>

#include "host/core/clock.h"
#include "tests/support/eventually.h"

namespace tide {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

const TimePoint kNewYear = *parseTimestamp("2026-01-01T00:00:00Z");

TEST_CASE("a fake clock's sleeper returns once the clock is moved past its deadline, not before") {
  FakeClock clock(kNewYear);
  std::atomic<int> looks{0};
  auto sleeper = std::async(std::launch::async, [&] {
    return clock.sleepFor(10s, [&] {
      ++looks;
      return false;
    });
  });
  REQUIRE(eventually([&] { return looks == 1; }));  // asleep

  clock.advance(9s);
  REQUIRE(eventually([&] { return looks == 2; }));  // woken, looked, and ...
  clock.wake();
  REQUIRE(eventually([&] { return looks == 3; }));  // ... still waiting: 1 s is left
  CHECK(sleeper.wait_for(0s) == std::future_status::timeout);

  clock.advance(1s);
  CHECK_FALSE(sleeper.get());  // the deadline, not done(), ended it
}

TEST_CASE("a fake clock's set() wakes the sleepers it moves past, a sleeper already due returns at once") {
  FakeClock clock(kNewYear);
  auto sleeper = std::async(std::launch::async, [&] { return clock.waitUntil(kNewYear + 1h, nullptr); });
  clock.set(kNewYear + 2h);
  CHECK_FALSE(sleeper.get());
  CHECK_FALSE(clock.waitUntil(kNewYear + 1h, nullptr));
  CHECK_FALSE(clock.sleepFor(0s));
}

TEST_CASE("wake() ends a wait whose condition now holds, on any clock") {
  FakeClock fake(kNewYear);
  SystemClock system;
  for (const Clock* clock : {static_cast<const Clock*>(&fake), static_cast<const Clock*>(&system)}) {
    std::atomic<bool> stopping{false};
    std::atomic<int> looks{0};
    auto waiter = std::async(std::launch::async, [&] {
      return clock->sleepFor(1h, [&] {
        ++looks;
        return stopping.load();
      });
    });
    REQUIRE(eventually([&] { return looks >= 1; }));
    stopping = true;
    clock->wake();
    REQUIRE(waiter.wait_for(30s) == std::future_status::ready);
    CHECK(waiter.get());  // done() ended it
  }
}

TEST_CASE("a condition that already holds ends a wait before it starts") {
  FakeClock clock(kNewYear);
  CHECK(clock.sleepFor(1h, [] { return true; }));
  CHECK(clock.now() == kNewYear);
}

TEST_CASE("the system clock's waits take real time") {
  SystemClock clock;
  const auto started = std::chrono::steady_clock::now();
  CHECK_FALSE(clock.sleepFor(20ms));
  CHECK(std::chrono::steady_clock::now() - started >= 20ms);
}

TEST_CASE("a real-time fake clock runs on its own and jumps when advanced") {
  FakeClock clock(kNewYear, FakeClock::Flow::kRealTime);
  REQUIRE(eventually([&] { return clock.now() > kNewYear; }));
  auto sleeper = std::async(std::launch::async, [&] { return clock.waitUntil(kNewYear + 1h, nullptr); });
  clock.advance(1h);
  REQUIRE(sleeper.wait_for(30s) == std::future_status::ready);
  CHECK_FALSE(sleeper.get());
  CHECK(clock.now() >= kNewYear + 1h);
  CHECK_FALSE(clock.sleepFor(5ms));  // and a short wait ends by itself
}

TEST_CASE("timestamps format as RFC 3339 UTC with milliseconds, before the epoch and on leap days too") {
  CHECK(formatTimestamp(TimePoint{}) == "1970-01-01T00:00:00.000Z");
  CHECK(formatTimestamp(TimePoint{} - 1ms) == "1969-12-31T23:59:59.999Z");
  CHECK(formatTimestamp(TimePoint{} + 951868799999ms) == "2000-02-29T23:59:59.999Z");
  for (const char* text : {"2026-11-21T11:47:50.123Z", "2024-02-29T00:00:00.000Z", "2026-12-31T23:59:59.999Z"}) {
    auto parsed = parseTimestamp(text);
    REQUIRE(parsed.isOk());
    CHECK(formatTimestamp(*parsed) == text);
  }
}

TEST_CASE("times beyond the years a TimePoint holds are refused, not overflowed") {
  // A ctx.now of "4026-03-03T10:00:00Z" in POST /v1/policies/evaluate overflowed the
  // nanosecond count (found by api_body_fuzz under UBSan).
  for (const char* text : {"4026-03-03T10:00:00Z", "9999-12-31T23:59:59Z", "2262-04-12T00:00:00Z",
                           "0001-01-01T00:00:00Z", "-999-01-01T00:00:00Z", "2026-01-01T-1:00:00Z"}) {
    CAPTURE(text);
    CHECK(parseTimestamp(text).status().code() == Code::kInvalidArgument);
  }
  for (const char* text : {"2262-04-10T23:00:00.999Z", "1677-09-23T00:00:00.000Z"}) {
    auto parsed = parseTimestamp(text);
    REQUIRE(parsed.isOk());
    CHECK(formatTimestamp(*parsed) == text);
  }

  for (double seconds : {1e300, -1e11, 9.3e9, std::nan(""), std::numeric_limits<double>::infinity()}) {
    CAPTURE(seconds);
    CHECK(timeFromUnixSeconds(seconds).status().code() == Code::kInvalidArgument);
  }
  CHECK(formatTimestamp(*timeFromUnixSeconds(1790000000.25)) == "2026-09-21T14:13:20.250Z");
  CHECK(formatTimestamp(*timeFromUnixSeconds(-1.5)) == "1969-12-31T23:59:58.500Z");
  CHECK(formatTimestamp(*timeFromUnixSeconds(9.2e9)) == "2261-07-15T11:33:20.000Z");
}

}  // namespace
}  // namespace tide

TEST_CASE("a span people type is a positive whole number of minutes, hours or days") {
  using tide::parseWholeDuration;
  CHECK(parseWholeDuration("90m") == std::chrono::seconds(5400));
  CHECK(parseWholeDuration("2h") == std::chrono::seconds(7200));
  CHECK(parseWholeDuration("7d") == std::chrono::seconds(7 * 86400));
  for (const char* text : {"", "m", "0m", "-3h", "+3h", "2", "2s", "2w", "1.5h", " 2h", "2h ", "2H", "h2",
                           "99999999999999999999d", "200000000d"}) {
    CAPTURE(text);
    CHECK_FALSE(parseWholeDuration(text).has_value());
  }
}
