// The pruner of `tide serve` (host/engine/retention.h): rounds at start and every interval
// of the injected clock, batch by batch, and one alarm for a prune the ledger refuses.

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>


#include "host/engine/retention.h"
#include "tests/ledger/ledger_test_util.h"
#include "tests/support/eventually.h"
#include "tests/support/raw_sql.h"

using namespace tide;
using tide::testing::eventually;
using tide::testing::appendEvents;
using tide::testing::LedgerFixture;

namespace {

model::RetentionPolicy keepTen(int64_t batch = 100) {
  model::RetentionPolicy policy;
  policy.events_max_count = 10;
  policy.batch = batch;
  policy.interval_minutes = 60;
  return policy;
}

int64_t alarms(LedgerFixture& f) {
  return f.ledger->audit().listEvents({100, 0, {{"kind", "alarm.audit"}}})->items.size();
}

}  // namespace

TEST_CASE("retention: the pruner prunes at start and again each interval of the ledger's clock") {
  LedgerFixture f;
  appendEvents(*f.ledger, 30);
  engine::Pruner pruner(*f.ledger, f.clock, keepTen());
  pruner.start();
  REQUIRE(eventually([&] { return f.eventCount() == 10; }));

  appendEvents(*f.ledger, 20);
  CHECK(f.eventCount() == 30);  // the clock has not moved: no round yet
  // The pruner may not be asleep yet when the clock first moves (its wait would then end an
  // hour later), so every poll moves the clock on.
  REQUIRE(eventually([&] {
    f.clock.advance(std::chrono::minutes(60));
    return f.eventCount() == 10;
  }));
  pruner.stop();

  auto report = f.ledger->audit().verifyAudit();
  REQUIRE(report.isOk());
  CHECK(report->ok);
  CHECK(report->checkpoint->actor == engine::Pruner::kActor);
}

TEST_CASE("retention: a round prunes batch by batch until it has caught up") {
  LedgerFixture f;
  appendEvents(*f.ledger, 40);
  engine::Pruner pruner(*f.ledger, f.clock, keepTen(7));
  auto round = pruner.runRound();
  REQUIRE_MESSAGE(round.isOk(), round.status().toString());
  CHECK(round->events == 35);  // 40 + one audit.pruned event per batch of 7, down to 10
  CHECK(f.eventCount() == 10);
  CHECK(f.ledger->audit().listEvents({100, 0, {{"kind", "audit.pruned"}}})->items.size() == 5);
  CHECK(f.ledger->audit().verifyAudit()->ok);
  CHECK(pruner.runRound()->total() == 0);
}

TEST_CASE("retention: with every rule off the pruner starts no thread and prunes nothing") {
  LedgerFixture f;
  appendEvents(*f.ledger, 30);
  engine::Pruner pruner(*f.ledger, f.clock, model::RetentionPolicy{});
  pruner.start();
  CHECK(pruner.runRound()->total() == 0);
  pruner.stop();
  CHECK(f.eventCount() == 30);
}

TEST_CASE("retention: a prune refused over a broken chain raises one alarm until it changes") {
  const auto dir = std::filesystem::temp_directory_path() / ("tide-retention-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    LedgerFixture f("sqlite://" + (dir / "tide.db").string());
    appendEvents(*f.ledger, 30);
    testing::execRawSql((dir / "tide.db").string(), "UPDATE events SET data = '{}' WHERE seq = 4");
    engine::Pruner pruner(*f.ledger, f.clock, keepTen());
    CHECK(pruner.runRound().status().code() == Code::kInternal);
    CHECK(pruner.runRound().status().code() == Code::kInternal);
    CHECK(f.eventCount() == 31);  // nothing pruned; one alarm
    CHECK(alarms(f) == 1);
    const auto alarm = f.ledger->audit().listEvents({100, 0, {{"kind", "alarm.audit"}}})->items.front();
    CHECK(alarm.data["error"].get<std::string>().find("event seq 4: hash mismatch") != std::string::npos);
  }
  std::filesystem::remove_all(dir);
}
