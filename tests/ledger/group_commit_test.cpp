// Group commit, reader connections and the change feed of host/ledger/ledger.h, on SQLite
// files in a scratch dir (reader connections exist only for file ledgers).

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <thread>

#include "host/ledger/ledger.h"
#include "tests/ledger/ledger_test_util.h"

namespace tide {
namespace {

using testing::LedgerFixture;

struct ScratchLedger {
  std::filesystem::path dir;
  std::string url;
  ScratchLedger() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tide-ledger-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    dir = pattern;
    url = "sqlite://" + (dir / "tide.db").string();
  }
  ~ScratchLedger() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

model::Capability capability(const std::string& name) { return {{}, name, "CPU", 10}; }

bool hasCapability(ledger::Ledger& ledger, const std::string& name) { return ledger.inventory().getCapability(name).isOk(); }

TEST_CASE("a batch commits its writes in one transaction and a failing write rolls back alone") {
  ScratchLedger scratch;
  LedgerFixture f(scratch.url);
  const auto before = f.ledger->writeStats();
  const int64_t events_before = f.eventCount();
  {
    ledger::Ledger::Batch batch(*f.ledger);
    for (int i = 0; i < 20; ++i)
      REQUIRE(f.ledger->inventory().createCapability(capability(std::string("c").append(std::to_string(i))), "t").isOk());
    // A duplicate name fails inside the batch; the writes around it stay.
    auto duplicate = f.ledger->inventory().createCapability(capability("c3"), "t");
    CHECK_FALSE(duplicate.isOk());
    REQUIRE(f.ledger->inventory().createCapability(capability("after"), "t").isOk());
    // This thread reads what its batch wrote before the batch commits.
    CHECK(hasCapability(*f.ledger, "after"));
    REQUIRE(batch.commit().isOk());
  }
  const auto after = f.ledger->writeStats();
  CHECK(after.commits - before.commits == 1);
  CHECK(after.writes - before.writes == 22);
  CHECK(after.largest_group >= 22);
  CHECK(hasCapability(*f.ledger, "c19"));
  CHECK(hasCapability(*f.ledger, "after"));
  CHECK(f.eventCount() == events_before + 21);  // no event of the failed write
  CHECK(f.ledger->audit().verifyEventChain().isOk());
}

TEST_CASE("writes of an open batch are invisible to other threads until it commits") {
  ScratchLedger scratch;
  LedgerFixture f(scratch.url);
  ledger::Ledger::Batch batch(*f.ledger);
  REQUIRE(f.ledger->inventory().createCapability(capability("pending"), "t").isOk());
  bool seen_before = true;
  std::thread([&] { seen_before = hasCapability(*f.ledger, "pending"); }).join();
  CHECK_FALSE(seen_before);
  REQUIRE(batch.commit().isOk());
  bool seen_after = false;
  std::thread([&] { seen_after = hasCapability(*f.ledger, "pending"); }).join();
  CHECK(seen_after);
}

TEST_CASE("reads inside a snapshot see the moment it opened, and later reads see what committed since") {
  ScratchLedger scratch;
  LedgerFixture f(scratch.url);
  REQUIRE(f.ledger->inventory().createCapability(capability("before"), "t").isOk());
  {
    ledger::Ledger::Snapshot one_moment(*f.ledger);
    CHECK(hasCapability(*f.ledger, "before"));  // the snapshot begins with its first read
    std::thread([&] { REQUIRE(f.ledger->inventory().createCapability(capability("since"), "t").isOk()); }).join();
    CHECK_FALSE(hasCapability(*f.ledger, "since"));
    {
      ledger::Ledger::Snapshot nested(*f.ledger);  // leaves the work to the outer one
      CHECK_FALSE(hasCapability(*f.ledger, "since"));
    }
    CHECK_FALSE(hasCapability(*f.ledger, "since"));
    bool other_thread_sees = false;  // other threads are not held to it
    std::thread([&] { other_thread_sees = hasCapability(*f.ledger, "since"); }).join();
    CHECK(other_thread_sees);
  }
  CHECK(hasCapability(*f.ledger, "since"));
}

TEST_CASE("a batch cut off by a crash leaves nothing of itself behind") {
  ScratchLedger scratch;
  {
    LedgerFixture f(scratch.url);
    REQUIRE(f.ledger->inventory().createCapability(capability("before"), "t").isOk());
  }
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Frozen: the group never grows old (kMaxGroupAge), so however slowly this machine runs
    // the 50 writes (fewer than kMaxGroupWrites), they stay in one uncommitted group.
    FakeClock clock(*parseTimestamp("2026-01-01T00:00:00Z"));
    auto ledger = ledger::Ledger::open(scratch.url, clock);
    if (!ledger.isOk()) ::_exit(2);
    ledger::Ledger::Batch batch(**ledger);
    for (int i = 0; i < 50; ++i) {
      if (!(*ledger)->inventory().createCapability(capability(std::string("lost").append(std::to_string(i))), "t").isOk())
        ::_exit(3);
    }
    ::_exit(0);  // dies with the batch open: no destructor, no commit
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  LedgerFixture reopened(scratch.url);
  CHECK(hasCapability(*reopened.ledger, "before"));
  CHECK_FALSE(hasCapability(*reopened.ledger, "lost0"));
  CHECK_FALSE(hasCapability(*reopened.ledger, "lost49"));
  CHECK(reopened.ledger->audit().verifyEventChain().isOk());
  auto violations = reopened.ledger->checkInvariants();
  REQUIRE(violations.isOk());
  CHECK(violations->empty());
}

TEST_CASE("writes from many threads are each durable when they return and share commits when they queue") {
  ScratchLedger scratch;
  LedgerFixture f(scratch.url);
  const auto before = f.ledger->writeStats();
  constexpr int kThreads = 16;
  constexpr int kEach = 25;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const std::string name = std::string("t").append(std::to_string(t)).append("-").append(std::to_string(i));
        if (!f.ledger->inventory().createCapability(capability(name), "t").isOk()) ++failures;
        // Durable on return: a reader connection sees it at once.
        if (!hasCapability(*f.ledger, name)) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  const auto after = f.ledger->writeStats();
  CHECK(after.writes - before.writes == kThreads * kEach);
  CHECK(after.commits - before.commits <= kThreads * kEach);
  CHECK(after.failed_commits == 0);
  ledger::ListOptions all;
  all.limit = ledger::kMaxPageSize;
  auto page = f.ledger->inventory().listCapabilities(all);
  REQUIRE(page.isOk());
  CHECK(page->items.size() == kThreads * kEach);
  CHECK(f.ledger->audit().lastEventSeq() == f.eventCount());
}

TEST_CASE("the change feed names every row a commit touched, once per commit, and nothing of a rolled-back batch") {
  LedgerFixture f;
  REQUIRE(f.ledger->changesTracked());
  std::vector<std::vector<ledger::RowChange>> commits;
  const int id =
      f.ledger->subscribe([&](const std::vector<ledger::RowChange>& rows) { commits.push_back(rows); });
  const std::string instance = f.addInstance();
  REQUIRE(!commits.empty());
  auto meta = f.ledger->instances().getMetaInstance(instance);
  REQUIRE(meta.isOk());
  commits.clear();
  REQUIRE(f.ledger->instances().setMetaInstanceState(instance, model::MetaState::kStopped, std::nullopt, "t").isOk());
  REQUIRE(commits.size() == 1);
  std::set<std::string> tables;
  bool names_instance = false;
  for (const auto& row : commits[0]) {
    tables.insert(row.table);
    if (row.table == "meta_instances" && row.id == meta->meta.id) names_instance = true;
  }
  CHECK(names_instance);
  CHECK(tables.count("events") == 1);
  f.ledger->unsubscribe(id);
  REQUIRE(f.ledger->instances().setMetaInstanceState(instance, model::MetaState::kActive, std::nullopt, "t").isOk());
  CHECK(commits.size() == 1);
}

}  // namespace
}  // namespace tide
