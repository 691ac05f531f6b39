#include "drivers/agent/agent_hub.h"

#include <doctest/doctest.h>

#include <thread>

#include "tests/drivers/driver_test_support.h"
#include "tests/support/eventually.h"
#include "tests/support/vocabulary.h"

using namespace tide;
using namespace tide::drivers;
using namespace tide::testing;

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const TimePoint kHubStart = TimePoint(std::chrono::hours(24 * 365 * 56));

DesiredInstance webInstance(const std::string& id, const std::string& node = "n1") {
  DesiredInstance instance;
  instance.spec = webSpec(id, node);
  instance.spec.resources = {1, 1};
  model::HealthCheck check;
  check.type = "http";
  check.port = 80;
  instance.spec.health_check = check;
  return instance;
}

std::unique_ptr<AgentHub> openHub(const std::string& dir, const Clock& clock, AgentHubOptions options = {}) {
  auto hub = AgentHub::open(dir, clock, options);
  REQUIRE(hub.isOk());
  return std::move(hub).value();
}

// Runtime `id` reported in `state`.
ReportedInstance reported(const std::string& id, const std::string& state) {
  ReportedInstance instance;
  instance.id = id;
  instance.status.state = testing::parsed<model::WorkloadState>(state);
  return instance;
}

AgentReport reportOf(const AgentHub& hub, int64_t revision, std::vector<ReportedInstance> instances = {}) {
  AgentReport report;
  report.agent_version = "0.14.0";
  report.epoch = hub.epoch();
  report.applied_revision = revision;
  report.instances = std::move(instances);
  return report;
}

}  // namespace

TEST_CASE("agent hub: a reopened hub serves the same documents under the next epoch") {
  TempDir dir;
  FakeClock clock(kHubStart);
  DesiredDocument before;
  int64_t first_epoch = 0;
  {
    auto hub = openHub(dir.path(), clock);
    first_epoch = hub->epoch();
    REQUIRE(hub->setInstance(webInstance("118")).isOk());
    VolumeSpec volume{"web-a1b2-0", "n1", "SSD", 10, "/data"};
    REQUIRE(hub->setVolume(volume).isOk());
    before = hub->document("n1");
    CHECK(before.version.revision == 2);
  }
  auto reopened = openHub(dir.path(), clock);
  CHECK(reopened->epoch() == first_epoch + 1);
  DesiredDocument after = reopened->document("n1");
  CHECK(after.version.epoch == first_epoch + 1);
  CHECK(desiredToJson(after)["instances"] == desiredToJson(before)["instances"]);
  CHECK(desiredToJson(after)["volumes"] == desiredToJson(before)["volumes"]);
  CHECK(after.instances.at(0).spec.health_check.has_value());
}

TEST_CASE("agent hub: recording an unchanged instance keeps the revision") {
  TempDir dir;
  FakeClock clock(kHubStart);
  auto hub = openHub(dir.path(), clock);
  auto first = hub->setInstance(webInstance("1"));
  auto again = hub->setInstance(webInstance("1"));
  REQUIRE(first.isOk());
  REQUIRE(again.isOk());
  CHECK(again->revision == first->revision);
  DesiredInstance stopped = webInstance("1");
  stopped.want = kWantStopped;
  CHECK(hub->setInstance(stopped)->revision == first->revision + 1);
  CHECK(hub->removeInstance("n1", "1")->revision == first->revision + 2);
  CHECK(hub->removeInstance("n1", "1")->revision == first->revision + 2);
  CHECK(hub->document("n1").instances.empty());
}

TEST_CASE("agent hub: a long poll returns when the document changes") {
  TempDir dir;
  FakeClock clock(kHubStart);
  auto hub = openHub(dir.path(), clock);
  const DocumentVersion known = hub->document("n1").version;
  DesiredDocument seen;
  std::thread poller([&] { seen = hub->waitForDocument("n1", known, seconds(60)); });
  REQUIRE(hub->setInstance(webInstance("7")).isOk());
  poller.join();
  CHECK(seen.version.revision == known.revision + 1);
  REQUIRE(seen.instances.size() == 1);
  CHECK(seen.instances[0].spec.id == "7");
}

TEST_CASE("agent hub: a long poll times out with the same document, and a first poll answers at once") {
  TempDir dir;
  FakeClock clock(kHubStart);
  auto hub = openHub(dir.path(), clock);
  REQUIRE(hub->setInstance(webInstance("7")).isOk());
  const DesiredDocument now = hub->document("n1");
  const DesiredDocument same = hub->waitForDocument("n1", now.version, milliseconds(50));
  CHECK(same.version == now.version);
  CHECK(hub->waitForDocument("n1", std::nullopt, seconds(60)).version == now.version);
  // Another epoch's (epoch, revision) differs: answered at once.
  CHECK(hub->waitForDocument("n1", DocumentVersion{now.version.epoch - 1, now.version.revision}, seconds(60))
            .version == now.version);
}

TEST_CASE("agent hub: a long poll ends when its caller is cancelled") {
  TempDir dir;
  FakeClock clock(kHubStart);
  auto hub = openHub(dir.path(), clock);
  std::atomic<bool> stopping{false};
  std::atomic<bool> returned{false};
  std::thread poller([&] {
    hub->waitForDocument("n1", hub->document("n1").version, seconds(600), [&] { return stopping.load(); });
    returned = true;
  });
  stopping = true;
  CHECK(eventually([&] { return returned.load(); }));
  poller.join();
}

TEST_CASE("agent hub: a node is unreachable after the heartbeat TTL, counted from the start when never heard") {
  TempDir dir;
  FakeClock clock(kHubStart);
  auto hub = openHub(dir.path(), clock, {seconds(10)});
  CHECK(hub->nodeState("n1").reachable);
  clock.advance(seconds(11));
  auto lost = hub->unreachable("n1");
  REQUIRE(lost.has_value());
  CHECK(lost->since == kHubStart);
  CHECK_FALSE(hub->nodeState("n1").last_heartbeat.has_value());

  hub->report("n1", reportOf(*hub, 0));
  CHECK_FALSE(hub->unreachable("n1").has_value());
  AgentNodeState state = hub->nodeState("n1");
  CHECK(state.agent_version == "0.14.0");
  REQUIRE(state.last_heartbeat.has_value());
  CHECK(*state.last_heartbeat == kHubStart + seconds(11));
  clock.advance(seconds(10));
  CHECK(hub->nodeState("n1").reachable);
  clock.advance(seconds(1));
  REQUIRE(hub->unreachable("n1").has_value());
  CHECK(hub->unreachable("n1")->since == kHubStart + seconds(11));
}

TEST_CASE("agent hub: a report answers the current version and wakes a wait for it") {
  TempDir dir;
  FakeClock clock(kHubStart);
  auto hub = openHub(dir.path(), clock);
  const DocumentVersion version = *hub->setInstance(webInstance("5"));
  bool confirmed = false;
  std::thread waiter([&] {
    confirmed = hub->waitForReport("n1", version.revision, [](const AgentReport& r) { return r.instances.size() == 1; },
                                   seconds(60));
  });
  // A report of an older revision does not end the wait.
  hub->report("n1", reportOf(*hub, version.revision - 1, {reported("5", "RUNNING")}));
  CHECK(hub->report("n1", reportOf(*hub, version.revision, {reported("5", "RUNNING")})) == version);
  waiter.join();
  CHECK(confirmed);
  CHECK_FALSE(hub->waitForReport("n1", version.revision + 1, [](const AgentReport&) { return true; }, milliseconds(20)));
}

TEST_CASE("agent hub: a log request rides the next document until the agent posts it") {
  TempDir dir;
  FakeClock clock(kHubStart);
  auto hub = openHub(dir.path(), clock);
  const DocumentVersion before = hub->document("n1").version;
  Result<std::string> fetched = Status::internal("not yet");
  std::thread teller([&] { fetched = hub->fetchLog("n1", "118", 4, seconds(60)); });
  const DesiredDocument asked = hub->waitForDocument("n1", before, seconds(60));
  REQUIRE(asked.logs == std::vector<std::string>{"118"});
  hub->postLog("n1", "118", "line one\nline two\n");
  teller.join();
  REQUIRE(fetched.isOk());
  CHECK(*fetched == "two\n");
  CHECK(hub->document("n1").logs.empty());
}

TEST_CASE("agent hub: a log of an unreachable node is refused at once, naming it") {
  TempDir dir;
  FakeClock clock(kHubStart);
  auto hub = openHub(dir.path(), clock, {seconds(10)});
  clock.advance(seconds(30));
  auto fetched = hub->fetchLog("n1", "118", 100, seconds(60));
  CHECK(fetched.status().code() == Code::kUnavailable);
  CHECK(fetched.status().message().find("n1") != std::string::npos);
}

TEST_CASE("agent protocol: a report with a bad field names it and yields nothing") {
  Json bad = Json::parse(R"({"agent_version": "0.14.0", "epoch": 1, "applied_revision": 2,
                              "instances": [{"id": "1", "state": "RUNNING"}, {"id": "2", "state": "DANCING"}]})");
  auto parsed = reportFromJson(bad);
  REQUIRE(parsed.status().code() == Code::kInvalidArgument);
  REQUIRE_FALSE(parsed.status().details().empty());
  CHECK(parsed.status().details()[0].field == "instances[1].state");
  CHECK(reportFromJson(Json::parse(R"({"epoch": 1, "applied_revision": 2})")).status().details()[0].field ==
        "agent_version");

  AgentReport good;
  good.agent_version = "0.14.0";
  good.epoch = 3;
  good.applied_revision = 4;
  good.resources = model::Resources{8, 15.5};
  RuntimeStatus running{model::WorkloadState::kRunning, "pid:1:2", Json{{"tcp/80", 31080}}, 0, "", true};
  good.instances = {{"118", running}};
  good.volumes = {{"v-0", true, ""}};
  auto round_trip = reportFromJson(reportToJson(good));
  REQUIRE(round_trip.isOk());
  CHECK(reportToJson(*round_trip) == reportToJson(good));
}
