#include "drivers/agent/agent_driver.h"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "drivers/registry.h"
#include "tests/drivers/driver_test_support.h"
#include "tests/drivers/fake_agent.h"
#include "tests/support/eventually.h"

using namespace tide;
using namespace tide::drivers;
using namespace tide::testing;

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const TimePoint kDriverStart = TimePoint(std::chrono::hours(24 * 365 * 56));

struct AgentDriverFixture {
  TempDir dir;
  FakeClock clock{kDriverStart};
  std::unique_ptr<AgentHub> hub;
  std::unique_ptr<AgentDriver> driver;

  explicit AgentDriverFixture(milliseconds confirm_timeout = seconds(60)) {
    auto opened = AgentHub::open(dir.path(), clock, {seconds(10)});
    REQUIRE(opened.isOk());
    hub = std::move(opened).value();
    AgentDriverOptions options;
    options.confirm_timeout = confirm_timeout;
    options.cluster_nodes = [] { return std::vector<std::string>{"n1", "n2"}; };
    driver = std::make_unique<AgentDriver>(*hub, options);
  }
};

}  // namespace

TEST_CASE("agent driver: ensure records the instance and returns at once, status follows the agent's reports") {
  AgentDriverFixture f;
  auto ensured = f.driver->ensure(webSpec("1"));
  REQUIRE(ensured.isOk());
  CHECK(ensured->state == model::WorkloadState::kPending);
  REQUIRE(f.hub->document("n1").instances.size() == 1);
  CHECK(f.hub->document("n1").instances[0].want == kWantRunning);
  CHECK(f.driver->status({"1", "n1", ""}).status().code() == Code::kUnavailable);

  FakeAgent agent(*f.hub, "n1");
  CHECK(eventually([&] {
    auto status = f.driver->status({"1", "n1", ""});
    return status.isOk() && status->state == model::WorkloadState::kRunning;
  }));
  auto status = f.driver->status({"1", "n1", ""});
  CHECK(status->ports == Json{{"tcp/80", 31080}});
  CHECK(f.driver->ensure(webSpec("1"))->state == model::WorkloadState::kRunning);
  CHECK(f.driver->status({"99", "n1", ""}).status().code() == Code::kNotFound);
  auto listed = f.driver->list();
  REQUIRE(listed.isOk());
  REQUIRE(listed->size() == 1);
  CHECK(listed->at(0).node == "n1");
}

TEST_CASE("agent driver: stop and remove wait for the agent to report them done") {
  AgentDriverFixture f;
  FakeAgent agent(*f.hub, "n1");
  REQUIRE(f.driver->ensure(webSpec("1")).isOk());
  REQUIRE(f.driver->stop({"1", "n1", ""}).isOk());
  auto stopped = f.driver->status({"1", "n1", ""});
  REQUIRE(stopped.isOk());
  CHECK(stopped->state == model::WorkloadState::kStopped);
  CHECK(f.hub->document("n1").instances.at(0).want == kWantStopped);
  REQUIRE(f.driver->remove({"1", "n1", ""}).isOk());
  CHECK(f.driver->status({"1", "n1", ""}).status().code() == Code::kNotFound);
  CHECK(f.hub->document("n1").instances.empty());

  REQUIRE(f.driver->ensureVolume({"v-0", "n1", "SSD", 1, "/data"}).isOk());
  CHECK(eventually([&] { return f.hub->lastReport("n1")->volumes.size() == 1; }));
  REQUIRE(f.driver->removeVolume({"v-0", "n1"}).isOk());
  CHECK(f.hub->lastReport("n1")->volumes.empty());
}

TEST_CASE("agent driver: stop without the agent's confirmation is unavailable, naming the node") {
  AgentDriverFixture f(milliseconds(50));
  REQUIRE(f.driver->ensure(webSpec("1")).isOk());
  AgentReport heartbeat;
  heartbeat.epoch = f.hub->epoch();
  f.hub->report("n1", heartbeat);  // heard from, so reachable, but never applies anything
  Status stopped = f.driver->stop({"1", "n1", ""});
  CHECK(stopped.code() == Code::kUnavailable);
  CHECK(stopped.message().find("n1") != std::string::npos);
}

TEST_CASE("agent driver: stop on an unreachable node returns at once and stays in the document") {
  AgentDriverFixture f;  // confirmations would wait a minute
  REQUIRE(f.driver->ensure(webSpec("1")).isOk());
  f.clock.advance(seconds(11));
  auto lost = f.driver->unreachableNodes();
  REQUIRE(lost.size() == 2);
  CHECK(lost[0].node == "n1");
  CHECK(lost[0].since == kDriverStart);
  REQUIRE(f.driver->stop({"1", "n1", ""}).isOk());
  CHECK(f.hub->document("n1").instances.at(0).want == kWantStopped);

  // The agent comes back and applies it.
  FakeAgent agent(*f.hub, "n1");
  CHECK(eventually([&] {
    auto status = f.driver->status({"1", "n1", ""});
    return status.isOk() && status->state == model::WorkloadState::kStopped;
  }));
  CHECK(f.driver->unreachableNodes().size() == 1);  // n2 still never heard from
}

TEST_CASE("agent driver: the registry refuses an agent cluster without a hub and reads logs through the agent") {
  DriverContext context;
  auto refused = makeDriver("agent", Json(), context);
  CHECK(refused.status().code() == Code::kInvalidArgument);
  CHECK(refused.status().message().find("agent hub") != std::string::npos);
  CHECK(makeDriver("agent", Json{{"confirm_timeout_s", -1}}, context).status().details().at(0).field ==
        "driver_config.confirm_timeout_s");

  AgentDriverFixture f;
  context.agent_hub = f.hub.get();
  context.cluster = "edge";
  context.cluster_nodes = [](const std::string& cluster) {
    return cluster == "edge" ? std::vector<std::string>{"n1"} : std::vector<std::string>{};
  };
  auto made = makeDriver("agent", Json{{"confirm_timeout_s", 5}}, context);
  REQUIRE(made.isOk());
  REQUIRE((*made)->ensure(webSpec("1")).isOk());
  Result<std::string> log = Status::internal("not yet");
  std::thread reader([&] { log = readInstanceLog(**made, "1", 1024); });
  CHECK(eventually([&] { return f.hub->document("n1").logs == std::vector<std::string>{"1"}; }));
  f.hub->postLog("n1", "1", "hello\n");
  reader.join();
  REQUIRE(log.isOk());
  CHECK(*log == "hello\n");
  CHECK(readInstanceLog(**made, "404", 1024).status().code() == Code::kNotFound);

  // An agent sends only a log's end: a slice of it names no place to go on from, and a
  // place asked for is not honoured (docs/api.md#following-a-log).
  Result<LogSlice> slice = Status::internal("not yet");
  std::thread slicer([&] { slice = (*made)->readLogSlice("1", LogCursor{"1.7", 3}, 1024); });
  CHECK(eventually([&] { return f.hub->document("n1").logs == std::vector<std::string>{"1"}; }));
  f.hub->postLog("n1", "1", "hello\nagain\n");
  slicer.join();
  REQUIRE(slice.isOk());
  CHECK(slice->text == "hello\nagain\n");
  CHECK_FALSE(slice->end.has_value());
  CHECK_FALSE(slice->continues);
}

TEST_CASE("agent driver: the log of an instance removed from its node's document comes from the node the ledger names") {
  AgentDriverFixture f;
  FakeAgent agent(*f.hub, "n1");
  DriverContext context;
  context.agent_hub = f.hub.get();
  context.cluster = "edge";
  context.cluster_nodes = [](const std::string&) { return std::vector<std::string>{"n1", "n2"}; };
  context.runtime_node = [](const std::string& id) -> std::optional<std::string> {
    if (id == "1") return "n1";
    if (id == "2") return "n9";  // not a node of this cluster
    return std::nullopt;
  };
  auto made = makeDriver("agent", Json(), context);
  REQUIRE(made.isOk());
  // It exited and the host removed it: no document and no report lists it any more.
  REQUIRE((*made)->ensure(webSpec("1")).isOk());
  REQUIRE((*made)->remove({"1", "n1", ""}).isOk());
  REQUIRE(f.hub->document("n1").instances.empty());
  CHECK(f.driver->readLog("1", 1024).status().code() == Code::kNotFound);  // a driver that cannot ask the ledger

  Result<std::string> log = Status::internal("not yet");
  std::thread reader([&] { log = readInstanceLog(**made, "1", 1024); });
  CHECK(eventually([&] { return f.hub->document("n1").logs == std::vector<std::string>{"1"}; }));
  f.hub->postLog("n1", "1", "last words\n");
  reader.join();
  REQUIRE(log.isOk());
  CHECK(*log == "last words\n");
  CHECK(readInstanceLog(**made, "2", 1024).status().code() == Code::kNotFound);
  CHECK(readInstanceLog(**made, "3", 1024).status().code() == Code::kNotFound);
}

TEST_CASE("agent driver: an instance its unreachable node has not applied is unavailable at once, naming the node") {
  AgentDriverFixture f;
  AgentReport heartbeat;
  heartbeat.epoch = f.hub->epoch();
  f.hub->report("n1", heartbeat);  // heard from, never applies anything
  REQUIRE(f.driver->ensure(webSpec("1")).isOk());
  CHECK(f.driver->status({"1", "n1", ""})->state == model::WorkloadState::kPending);  // reachable: it may yet apply it

  f.clock.advance(seconds(11));  // past the TTL: an operation waiting on it need not wait out its deadline
  auto waiting = f.driver->status({"1", "n1", ""});
  REQUIRE_FALSE(waiting.isOk());
  CHECK(waiting.status().code() == Code::kUnavailable);
  CHECK(waiting.status().message().find("node n1 is unreachable") != std::string::npos);
}
