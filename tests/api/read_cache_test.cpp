// ReadCache (host/api/read_cache.h): values kept until the ledger commits a change to one
// of their tables, over a real ledger's change feed.

#include "host/api/read_cache.h"

#include <doctest/doctest.h>

#include <unistd.h>
#include <filesystem>
#include <memory>
#include <string>

#include "host/core/clock.h"

using namespace tide;

namespace {

struct LedgerFeedFixture {
  explicit LedgerFeedFixture(const std::string& url = "sqlite://:memory:") {
    auto opened = ledger::Ledger::open(url, clock);
    REQUIRE_MESSAGE(opened.isOk(), opened.status().toString());
    ledger = std::move(opened).value();
    REQUIRE(ledger->changesTracked());
  }

  // A node in `cluster`, or without one in the default cluster (both ALLOCATED).
  void addNode(const std::string& name, const std::string& cluster = "") {
    model::Node node;
    node.name = name;
    node.cluster = cluster;
    node.total = {8, 32};
    REQUIRE(ledger->inventory().createNode(node, "test").isOk());
  }
  void addCapability(const std::string& name) {
    model::Capability capability;
    capability.name = name;
    capability.type = "CPU";
    REQUIRE(ledger->inventory().createCapability(capability, "test").isOk());
  }

  FakeClock clock{*parseTimestamp("2026-11-21T12:00:00Z")};
  std::unique_ptr<ledger::Ledger> ledger;
};

}  // namespace

TEST_CASE("read cache: a value is loaded once and kept until a commit touches one of its tables") {
  LedgerFeedFixture f;
  api::ReadCache<std::string> cache(*f.ledger, {"nodes", "clusters"});
  int loads = 0;
  auto load = [&]() -> Result<std::string> { return "value " + std::to_string(++loads); };

  CHECK(cache.get("a", load).value() == "value 1");
  CHECK(cache.get("a", load).value() == "value 1");
  CHECK(cache.get("b", load).value() == "value 2");
  CHECK(cache.size() == 2);

  f.addCapability("gpu");  // another table: nothing changes
  CHECK(cache.get("a", load).value() == "value 1");
  CHECK(loads == 2);

  f.addNode("n1");
  CHECK(cache.size() == 0);
  CHECK(cache.get("a", load).value() == "value 3");
  CHECK(cache.get("a", load).value() == "value 3");
  CHECK(cache.get("b", load).value() == "value 4");
}

TEST_CASE("read cache: a value its keep() refuses is answered but loaded again next time") {
  LedgerFeedFixture f;
  api::ReadCache<std::string> cache(*f.ledger, {"nodes"});
  int loads = 0;
  auto load = [&]() -> Result<std::string> { return "value " + std::to_string(++loads); };
  auto keep_none = [](const std::string&) { return false; };

  CHECK(cache.get("a", load, keep_none).value() == "value 1");
  CHECK(cache.size() == 0);
  CHECK(cache.get("a", load, keep_none).value() == "value 2");
  CHECK(cache.get("a", load).value() == "value 3");
  CHECK(cache.get("a", load, keep_none).value() == "value 3");  // kept by the plain get()
}

TEST_CASE("read cache: a value whose load raced a commit is not served after that commit") {
  LedgerFeedFixture f;
  api::ReadCache<std::string> cache(*f.ledger, {"nodes"});
  int loads = 0;
  auto load_while_writing = [&]() -> Result<std::string> {
    ++loads;
    if (loads == 1) f.addNode("n1");  // lands while the first load is under way
    return "value " + std::to_string(loads);
  };
  CHECK(cache.get("a", load_while_writing).value() == "value 1");
  CHECK(cache.get("a", load_while_writing).value() == "value 2");
  CHECK(cache.get("a", load_while_writing).value() == "value 2");
}

TEST_CASE("read cache: errors are not kept, invalidate() forgets, and a full cache starts over") {
  LedgerFeedFixture f;
  api::ReadCache<std::string> cache(*f.ledger, {"nodes"}, /*capacity=*/2);
  int loads = 0;
  auto missing = [&]() -> Result<std::string> {
    ++loads;
    return Status::notFound("no such thing");
  };
  CHECK(cache.get("gone", missing).status().code() == Code::kNotFound);
  CHECK(cache.get("gone", missing).status().code() == Code::kNotFound);
  CHECK(loads == 2);

  auto found = [&]() -> Result<std::string> { return "value " + std::to_string(++loads); };
  CHECK(cache.get("a", found).value() == "value 3");
  cache.invalidate();
  CHECK(cache.get("a", found).value() == "value 4");

  CHECK(cache.get("b", found).value() == "value 5");
  CHECK(cache.size() == 2);
  CHECK(cache.get("c", found).value() == "value 6");  // past capacity: only c is kept
  CHECK(cache.size() == 1);
  CHECK(cache.get("c", found).value() == "value 6");
  CHECK(cache.get("a", found).value() == "value 7");
}

TEST_CASE("read cache: over a file ledger, whose reads have connections of their own, a commit is seen at once") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tide-read-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    LedgerFeedFixture f("sqlite://" + (dir / "tide.db").string());
    api::ReadCache<int64_t> cache(*f.ledger, {"nodes"});
    auto generation = [&]() -> Result<int64_t> {
      TIDE_ASSIGN_OR_RETURN(model::Node node, f.ledger->inventory().getNode("n1"));
      return node.meta.generation;
    };
    model::Cluster cluster;
    cluster.name = "c1";
    cluster.driver_kind = "sim";
    REQUIRE(f.ledger->inventory().createCluster(cluster, "test").isOk());
    f.addNode("n1", "c1");
    REQUIRE(cache.get("n1", generation).value() == 1);
    for (model::NodeState state :
         {model::NodeState::kCordoned, model::NodeState::kAllocated, model::NodeState::kCordoned}) {
      REQUIRE(f.ledger->inventory().setNodeState("n1", state, std::nullopt, "test").isOk());
      CHECK(cache.get("n1", generation).value() == f.ledger->inventory().getNode("n1")->meta.generation);
    }
    CHECK(cache.get("n1", generation).value() == 4);
  }
  std::filesystem::remove_all(dir);
}
