#include <doctest/doctest.h>

#include <stdexcept>

#include "host/core/thread_guard.h"
#include "host/engine/loop_errors.h"
#include "tests/ledger/ledger_test_util.h"

using namespace tide;
using tide::testing::LedgerFixture;

TEST_CASE("engine: an exception escaping a loop round is an engine.error event naming where") {
  LedgerFixture f;
  const bool returned = runGuarded(
      [] { throw std::runtime_error("driver exploded"); },
      [&](const std::string& what) { engine::reportLoopException(*f.ledger, "executor, operation 7", what); });
  CHECK_FALSE(returned);
  auto events = f.ledger->audit().listEvents({100, 0, {{"kind", "engine.error"}}});
  REQUIRE(events.isOk());
  REQUIRE(events->items.size() == 1);
  CHECK(events->items[0].data["where"] == "executor, operation 7");
  CHECK(events->items[0].data["exception"] == "driver exploded");
  CHECK(events->items[0].actor == "host");
}
