#include <doctest/doctest.h>

#include "host/core/clock.h"
#include "host/core/status.h"

using namespace tide;

namespace {
Result<int> half(int x) {
  if (x % 2 != 0) return Status::invalidArgument("odd", {{"x", "must be even", ""}});
  return x / 2;
}
Result<int> quarter(int x) {
  TIDE_ASSIGN_OR_RETURN(int h, half(x));
  return half(h);
}
}  // namespace

TEST_CASE("Result carries a value or the status that explains its absence") {
  CHECK(half(4).value() == 2);
  auto odd = half(3);
  REQUIRE_FALSE(odd.isOk());
  CHECK(odd.status().code() == Code::kInvalidArgument);
  CHECK(odd.status().details().front().field == "x");
  CHECK(quarter(8).value() == 2);
  CHECK(quarter(6).status().message() == "odd");
}

TEST_CASE("Status renders its code, prefix and details") {
  Status s = Status::conflict("stale generation").withPrefix("node kind-worker");
  CHECK(s.toString() == "conflict: node kind-worker: stale generation");
  CHECK(Status::ok().toString() == "ok");
  CHECK(std::string(codeName(Code::kUnprocessable)) == "unprocessable");
}

TEST_CASE("timestamps round-trip through RFC 3339 with milliseconds") {
  auto parsed = parseTimestamp("2026-11-21T11:47:50.123Z");
  REQUIRE(parsed.isOk());
  CHECK(formatTimestamp(*parsed) == "2026-11-21T11:47:50.123Z");
  CHECK(formatTimestamp(*parseTimestamp("1970-01-01T00:00:00Z")) == "1970-01-01T00:00:00.000Z");
  CHECK_FALSE(parseTimestamp("2026-13-01T00:00:00Z").isOk());
  CHECK_FALSE(parseTimestamp("yesterday").isOk());
}

TEST_CASE("a fake clock only moves when told") {
  FakeClock clock(*parseTimestamp("2026-01-01T00:00:00Z"));
  clock.advance(std::chrono::milliseconds(1500));
  CHECK(formatTimestamp(clock.now()) == "2026-01-01T00:00:01.500Z");
}
