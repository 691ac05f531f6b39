#include "drivers/sim/sim_driver.h"

#include <doctest/doctest.h>

#include <atomic>
#include <set>
#include <thread>

#include "drivers/fault/fault_driver.h"
#include "drivers/registry.h"
#include "tests/drivers/driver_test_support.h"

using namespace tide;
using namespace tide::drivers;
using namespace tide::testing;

namespace {

using std::chrono::milliseconds;

const TimePoint kStart = TimePoint(std::chrono::hours(24 * 365 * 56));

// A sim driver as a cluster with `config` gets it, on `clock`.
std::unique_ptr<Driver> makeSim(const Json& config, const Clock& clock, const std::string& cluster = "sim") {
  DriverContext context;
  context.clock = &clock;
  context.cluster = cluster;
  context.port_range_start = 40000;
  context.port_range_end = 40009;
  auto made = makeDriver("sim", config, context);
  REQUIRE_MESSAGE(made.isOk(), made.status().toString());
  return std::move(made).value();
}

RuntimeSpec simSpec(const std::string& id, const std::string& node = "node-1") {
  RuntimeSpec spec;
  spec.id = id;
  spec.meta_instance = "web-" + id;
  spec.node = node;
  spec.payload_name = "web";
  spec.coordinates = {{"image", "nginx:1"}};
  spec.ports = {{"TCP", 80}, {"UDP", 53}};
  return spec;
}

RuntimeStatus statusOf(Driver& driver, const std::string& id) {
  auto status = driver.status({id, "node-1", ""});
  REQUIRE_MESSAGE(status.isOk(), status.status().toString());
  return status.value();
}

std::vector<std::string> fields(const Status& status) {
  std::vector<std::string> out;
  for (const ErrorDetail& d : status.details()) out.push_back(d.field);
  return out;
}

}  // namespace

TEST_CASE("driver: sim ensure is idempotent by runtime id and gives fake host ports") {
  FakeClock clock(kStart);
  auto driver = makeSim(nullptr, clock);

  auto first = driver->ensure(simSpec("1"));
  REQUIRE_MESSAGE(first.isOk(), first.status().toString());
  CHECK(first->state == model::WorkloadState::kRunning);
  CHECK(first->healthy == std::optional<bool>(true));
  CHECK(first->ports == Json{{"tcp/80", 40000}, {"udp/53", 40001}});
  auto again = driver->ensure(simSpec("1"));
  REQUIRE(again.isOk());
  CHECK(again->handle == first->handle);
  CHECK(again->ports == first->ports);

  auto other = driver->ensure(simSpec("2"));
  REQUIRE(other.isOk());
  CHECK(other->ports == Json{{"tcp/80", 40002}, {"udp/53", 40003}});  // unique on the node
  auto elsewhere = driver->ensure(simSpec("3", "node-2"));
  REQUIRE(elsewhere.isOk());
  CHECK(elsewhere->ports["tcp/80"] == 40000);  // counted per node
  CHECK(driver->list()->size() == 3);

  CHECK(driver->stop({"1", "node-1", ""}).isOk());
  CHECK(driver->stop({"1", "node-1", ""}).isOk());
  CHECK(driver->stop({"nope", "node-1", ""}).isOk());
  CHECK(driver->remove({"1", "node-1", ""}).isOk());
  CHECK(driver->remove({"1", "node-1", ""}).isOk());
  CHECK(driver->status({"1", "node-1", ""}).status().code() == Code::kNotFound);
  CHECK(driver->list()->size() == 2);

  RuntimeSpec bad = simSpec("4");
  bad.ports = {{"SCTP", 80}};
  CHECK(driver->ensure(bad).status().code() == Code::kInvalidArgument);
  CHECK(driver->ensure(simSpec("")).status().code() == Code::kInvalidArgument);
  CHECK(driver->list()->size() == 2);  // refused specs leave nothing behind
}

TEST_CASE("driver: sim start and stop latencies run on the injected clock") {
  FakeClock clock(kStart);
  auto driver = makeSim({{"start_latency_ms", 500}, {"stop_latency_ms", 200}}, clock);

  auto started = driver->ensure(simSpec("1"));
  REQUIRE(started.isOk());
  CHECK(started->state == model::WorkloadState::kStarting);
  CHECK_FALSE(started->healthy.has_value());
  clock.advance(milliseconds(499));
  CHECK(statusOf(*driver, "1").state == model::WorkloadState::kStarting);
  clock.advance(milliseconds(1));
  CHECK(statusOf(*driver, "1").state == model::WorkloadState::kRunning);

  REQUIRE(driver->stop({"1", "node-1", ""}).isOk());
  clock.advance(milliseconds(199));
  CHECK(statusOf(*driver, "1").state == model::WorkloadState::kRunning);  // as a process runs out its grace period
  clock.advance(milliseconds(1));
  CHECK(statusOf(*driver, "1").state == model::WorkloadState::kStopped);

  // Ensure of a stopped instance starts it again, on the same ports.
  auto restarted = driver->ensure(simSpec("1"));
  REQUIRE(restarted.isOk());
  CHECK(restarted->state == model::WorkloadState::kStarting);
  CHECK(restarted->handle != started->handle);
  CHECK(restarted->ports == started->ports);

  // Ensure while stopping calls the stop off.
  clock.advance(milliseconds(500));
  REQUIRE(driver->stop({"1", "node-1", ""}).isOk());
  REQUIRE(driver->ensure(simSpec("1"))->state == model::WorkloadState::kRunning);
  clock.advance(milliseconds(1000));
  CHECK(statusOf(*driver, "1").state == model::WorkloadState::kRunning);
}

TEST_CASE("driver: sim outcomes follow from the seed and the runtime id") {
  FakeClock clock(kStart);
  const Json config = {{"seed", 42}, {"start_failure_rate", 0.25}, {"unhealthy_rate", 0.2}};
  SimOptions options = parseSimOptions(config).value();
  auto driver = makeSim(config, clock);
  auto twin = makeSim(config, clock);

  int failed = 0, unhealthy = 0;
  std::set<std::string> failed_ids;
  for (int i = 1; i <= 400; ++i) {
    const std::string id = std::to_string(i);
    const SimFate fate = simFate(options, id, 1);
    auto status = driver->ensure(simSpec(id));
    REQUIRE(status.isOk());
    CHECK(status->handle == twin->ensure(simSpec(id))->handle);
    if (fate.start_fails) {
      ++failed;
      failed_ids.insert(id);
      CHECK(status->state == model::WorkloadState::kExited);
      CHECK(status->exit_code == kStartFailureExitCode);
      CHECK(statusOf(*twin, id).state == model::WorkloadState::kExited);
    } else {
      CHECK(status->state == model::WorkloadState::kRunning);
      CHECK(status->healthy == std::optional<bool>(!fate.unhealthy));
      CHECK(statusOf(*twin, id).healthy == status->healthy);
      unhealthy += fate.unhealthy ? 1 : 0;
    }
  }
  // The shares are what was asked for, roughly: fates are hashes, not a sample of a test.
  CHECK(failed > 60);
  CHECK(failed < 140);
  CHECK(unhealthy > 30);
  CHECK(unhealthy < 100);

  // Another seed fails other instances; a restart draws the next start's fate.
  SimOptions reseeded = options;
  reseeded.seed = 43;
  std::set<std::string> failed_reseeded;
  for (int i = 1; i <= 400; ++i) {
    if (simFate(reseeded, std::to_string(i), 1).start_fails) failed_reseeded.insert(std::to_string(i));
  }
  CHECK(failed_reseeded != failed_ids);
  const std::string id = *failed_ids.begin();
  auto retried = driver->ensure(simSpec(id));
  REQUIRE(retried.isOk());
  CHECK(retried->state ==
        (simFate(options, id, 2).start_fails ? model::WorkloadState::kExited : model::WorkloadState::kRunning));
}

TEST_CASE("driver: sim running instances crash when their fate says, at the clock's time") {
  FakeClock clock(kStart);
  const Json config = {{"seed", 7}, {"crash_rate_per_hour", 2}, {"start_latency_ms", 100}};
  SimOptions options = parseSimOptions(config).value();
  auto driver = makeSim(config, clock);
  const SimFate fate = simFate(options, "1", 1);
  REQUIRE(fate.crash_after.has_value());

  REQUIRE(driver->ensure(simSpec("1")).isOk());
  clock.advance(milliseconds(100) + *fate.crash_after - milliseconds(1));
  CHECK(statusOf(*driver, "1").state == model::WorkloadState::kRunning);
  clock.advance(milliseconds(1));
  RuntimeStatus crashed = statusOf(*driver, "1");
  CHECK(crashed.state == model::WorkloadState::kExited);
  CHECK(crashed.exit_code == kCrashExitCode);
  CHECK(crashed.message.find("crash_rate_per_hour") != std::string::npos);

  CHECK(driver->ensure(simSpec("1"))->state == model::WorkloadState::kStarting);  // restarted, with its second fate
  SimOptions calm = options;
  calm.crash_rate_per_hour = 0;
  CHECK_FALSE(simFate(calm, "1", 1).crash_after.has_value());
}

TEST_CASE("driver: sim driver_config errors name the field") {
  FakeClock clock(kStart);
  DriverContext context;
  context.clock = &clock;
  CHECK(makeDriver("sim", nullptr, context).isOk());
  CHECK(makeDriver("sim", Json::object(), context).isOk());
  auto bad = makeDriver("sim",
                        {{"seed", -1},
                         {"start_latency_ms", "soon"},
                         {"stop_latency_ms", 4000000},
                         {"start_failure_rate", 1.5},
                         {"crash_rate_per_hour", -1},
                         {"unhealthy_rate", "some"},
                         {"colour", "red"}},
                        context);
  REQUIRE(bad.status().code() == Code::kInvalidArgument);
  const std::vector<std::string> named = fields(bad.status());
  const std::set<std::string> expected = {"driver_config.colour",
                                          "driver_config.seed",
                                          "driver_config.start_latency_ms",
                                          "driver_config.stop_latency_ms",
                                          "driver_config.start_failure_rate",
                                          "driver_config.crash_rate_per_hour",
                                          "driver_config.unhealthy_rate"};
  CHECK(std::set<std::string>(named.begin(), named.end()) == expected);
  CHECK(named.size() == expected.size());
  CHECK(fields(makeDriver("sim", Json::array(), context).status()) == std::vector<std::string>{"driver_config"});
}

TEST_CASE("driver: sim list holds its own cluster's instances only") {
  FakeClock clock(kStart);
  auto blue = makeSim(nullptr, clock, "blue");
  auto green = makeSim(nullptr, clock, "green");
  REQUIRE(blue->ensure(simSpec("1")).isOk());
  REQUIRE(green->ensure(simSpec("2")).isOk());
  REQUIRE(green->ensure(simSpec("3")).isOk());
  auto blue_refs = blue->list();
  REQUIRE(blue_refs->size() == 1);
  CHECK(blue_refs->front().id == "1");
  CHECK(blue_refs->front().node == "node-1");
  CHECK(green->list()->size() == 2);
  CHECK(blue->status({"2", "node-1", ""}).status().code() == Code::kNotFound);
}

TEST_CASE("driver: sim statusAll answers every ref in order, kNotFound for unknown ones") {
  FakeClock clock(kStart);
  auto driver = makeSim({{"start_latency_ms", 10}}, clock);
  REQUIRE(driver->ensure(simSpec("1")).isOk());
  clock.advance(milliseconds(10));
  REQUIRE(driver->ensure(simSpec("2")).isOk());
  auto answers = driver->statusAll({{"1", "node-1", ""}, {"nope", "node-1", ""}, {"2", "node-1", ""}});
  REQUIRE(answers.isOk());
  REQUIRE(answers->size() == 3);
  CHECK(answers->at(0)->state == model::WorkloadState::kRunning);
  CHECK(answers->at(1).status().code() == Code::kNotFound);
  CHECK(answers->at(2)->state == model::WorkloadState::kStarting);
  CHECK(driver->statusAll({})->empty());
}

TEST_CASE("driver: sim volumes are accounted against the node's declared capacity") {
  FakeClock clock(kStart);
  SimOptions options;
  options.node_volumes = [](const std::string& node) {
    return node == "node-1" ? std::vector<model::LocalVolume>{{"/mnt/ssd", "SSD", 100}}
                            : std::vector<model::LocalVolume>{};
  };
  SimDriver driver(options, clock);
  CHECK(driver.ensureVolume({"v1", "node-1", "SSD", 60, "/data"}).isOk());
  CHECK(driver.ensureVolume({"v1", "node-1", "SSD", 60, "/data"}).isOk());  // idempotent
  CHECK(driver.ensureVolume({"v1", "node-1", "SSD", 70, "/data"}).code() == Code::kConflict);
  CHECK(driver.ensureVolume({"v2", "node-1", "SSD", 60, "/data"}).code() == Code::kUnprocessable);
  CHECK(driver.ensureVolume({"v3", "node-2", "SSD", 1, "/data"}).code() == Code::kUnprocessable);

  RuntimeSpec spec = simSpec("1");
  spec.volumes = {{"v2", "", "SSD", 60, "/data"}};
  CHECK(driver.ensure(spec).status().code() == Code::kUnprocessable);
  CHECK(driver.instanceCount() == 0);
  CHECK(driver.removeVolume({"v1", "node-1"}).isOk());
  CHECK(driver.removeVolume({"v1", "node-1"}).isOk());
  CHECK(driver.ensure(spec).isOk());
  CHECK(driver.ensureVolume({"v4", "node-1", "SSD", 41, "/data"}).code() == Code::kUnprocessable);
}

TEST_CASE("driver: sim is safe to call from many threads at once") {
  FakeClock clock(kStart);
  auto driver = makeSim({{"seed", 1}, {"start_failure_rate", 0.1}}, clock);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        const std::string id = std::to_string(i % 250);  // every id from two threads
        if (!driver->ensure(simSpec(id, "node-" + std::to_string(t % 2))).isOk()) ++errors;
        if (!driver->status({id, "", ""}).isOk()) ++errors;
        if (!driver->statusAll({{id, "", ""}, {std::to_string(i), "", ""}}).isOk()) ++errors;
        if (i % 50 == 0 && !driver->list().isOk()) ++errors;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(errors == 0);
  CHECK(driver->list()->size() == 250);
}

TEST_CASE("driver: tide logs of a sim instance says the sim driver keeps no logs") {
  FakeClock clock(kStart);
  auto driver = makeSim(nullptr, clock);
  REQUIRE(driver->ensure(simSpec("1")).isOk());
  auto log = readInstanceLog(*driver, "1", 1024);
  CHECK(log.status().code() == Code::kUnprocessable);
  CHECK(log.status().message().find("sim driver keeps no logs") != std::string::npos);

  FaultDriver wrapped(makeSim(nullptr, clock), parseFaultOptions({{"inner", "sim"}}).value());
  CHECK(readInstanceLog(wrapped, "1", 1024).status().message().find("sim driver") != std::string::npos);
}

TEST_CASE("driver: sim with adopt answers for instances it never started, as runtimes that outlived their host") {
  FakeClock clock(kStart);
  auto plain = makeSim({{"start_latency_ms", 10}}, clock);
  CHECK(plain->status({"7", "node-1", "sim:7:1"}).status().code() == Code::kNotFound);

  auto adopting = makeSim({{"start_latency_ms", 10}, {"adopt", true}}, clock);
  auto answers = adopting->statusAll({{"7", "node-1", "sim:7:1"}, {"8", "node-2", ""}});
  REQUIRE(answers.isOk());
  REQUIRE(answers->at(0).isOk());
  CHECK(answers->at(0)->state == model::WorkloadState::kRunning);
  CHECK(answers->at(0)->handle == "sim:7:1");
  CHECK(answers->at(0)->healthy == std::optional<bool>(true));
  CHECK(answers->at(1)->state == model::WorkloadState::kRunning);
  // Adopted instances belong to the inventory from then on, and stop like any other.
  auto listed = adopting->list();
  REQUIRE(listed.isOk());
  CHECK(listed->size() == 2);
  REQUIRE(adopting->stop({"7", "node-1", ""}).isOk());
  CHECK(statusOf(*adopting, "7").state == model::WorkloadState::kStopped);
  auto bad = makeDriver("sim", {{"adopt", "yes"}}, DriverContext{});
  CHECK(fields(bad.status()) == std::vector<std::string>{"driver_config.adopt"});
}
