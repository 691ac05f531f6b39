// The observer over sim clusters (sim_test_support.h): how often it asks the drivers, and
// whose word on health it records; and what it leaves in a process or node agents' cluster
// of a workload that exited.

#include "host/engine/observer.h"

#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "drivers/registry.h"
#include "tests/engine/agent_cluster_support.h"
#include "tests/engine/sim_test_support.h"

namespace tide {
namespace {

using testing::CountingDriver;
using testing::eventually;
using testing::engineDeployment;
using testing::EngineFixture;
using testing::installCountingSim;
using testing::kSimCapabilities;
using testing::kSimPlan;
using testing::simCluster;

// One sim cluster of `n` nodes under a counting driver, and `n` instances of the sim plan
// rolled out on it.
CountingDriver& rollOutOnOneCluster(EngineFixture& f, int n) {
  f.apply(std::string(kSimCapabilities) + simCluster("sim", n));
  CountingDriver& driver = installCountingSim(f, "sim");
  f.apply(kSimPlan);
  f.apply(engineDeployment("v1", n, "1"));
  f.engine->settle();
  return driver;
}

TEST_CASE("observer: asks each driver once a pass, one list and one batched status") {
  EngineFixture f({"auto_approve_dev.lua"});
  f.apply(std::string(kSimCapabilities) + simCluster("sim-a", 10));
  f.apply(simCluster("sim-b", 10));
  CountingDriver& a = installCountingSim(f, "sim-a");
  CountingDriver& b = installCountingSim(f, "sim-b");
  f.apply(kSimPlan);
  f.apply(engineDeployment("v1", 20, "1"));
  f.engine->settle();
  REQUIRE(f.activeRunning().size() == 20);

  a.resetCounts();
  b.resetCounts();
  for (int pass = 0; pass < 5; ++pass) f.engine->runPass();
  for (CountingDriver* driver : {&a, &b}) {
    CHECK(driver->lists == 5);
    CHECK(driver->batches == 5);
    CHECK(driver->batched_refs == 50);  // its 10 instances, every pass
    CHECK(driver->statuses == 0);
  }
  const std::string metrics = f.engine->metrics().render();
  CHECK(metrics.find("tide_driver_call_duration_seconds_count{call=\"status_all\"}") != std::string::npos);
}

TEST_CASE("observer: a pass judges a slice of the fleet, every instance once a round, and lists once a round") {
  auto options = EngineFixture::fastOptions();
  options.observer.slice = 4;
  EngineFixture f({"auto_approve_dev.lua"}, options);
  CountingDriver& driver = rollOutOnOneCluster(f, 10);
  auto running = f.activeRunning();
  REQUIRE(running.size() == 10);

  // Passes settle() ran left the observer somewhere in a round: find the start of the next
  // one (its pass lists), and finish that round.
  for (int pass = 0; pass < 3; ++pass) {
    driver.resetCounts();
    f.engine->runPass();
    if (driver.lists > 0) break;
  }
  REQUIRE(driver.lists == 1);
  CHECK(driver.batched_refs.load() == 4);
  f.engine->runPass();
  f.engine->runPass();
  driver.resetCounts();
  // 10 instances, 4 a pass: a round is 3 passes (4 + 4 + 2), one list() at its start.
  for (int pass = 0; pass < 6; ++pass) f.engine->runPass();
  CHECK(driver.batched_refs.load() == 20);  // each instance twice in two rounds
  CHECK(driver.batches == 6);
  CHECK(driver.lists == 2);

  // Stopped behind tide's back: found within one round, wherever the round stands.
  REQUIRE(driver.stop({std::to_string(running[9].meta.id), running[9].node, ""}).isOk());
  for (int pass = 0; pass < 3; ++pass) f.engine->runPass();
  auto failed = f.ledger->instances().getRuntimeInstance(running[9].meta.id);
  REQUIRE(failed.isOk());
  CHECK(failed->state == model::RuntimeState::kFailed);
  f.engine->settle();
  CHECK(f.activeRunning().size() == 10);
}

TEST_CASE("observer: records the health a driver reports instead of running the plan's check") {
  EngineFixture f({"auto_approve_dev.lua"});
  CountingDriver& driver = rollOutOnOneCluster(f, 3);
  // Healthy by the driver's word: the http check on port 80 would fail, nothing listens.
  auto running = f.activeRunning();
  REQUIRE(running.size() == 3);
  for (const auto& r : running) {
    CHECK(r.healthy);
    CHECK_FALSE(r.ready_since.empty());
  }
  CHECK(f.deployment("v1").state == model::DeploymentState::kCompleted);

  driver.reported_health = 0;
  CHECK(f.engine->runPass().observer_changes == 3);
  for (const auto& r : f.activeRunning()) {
    CHECK_FALSE(r.healthy);
    CHECK(r.message == "the test says so");
    CHECK(r.ready_since.empty());
  }
  driver.reported_health = 1;
  CHECK(f.engine->runPass().observer_changes == 3);
  for (const auto& r : f.activeRunning()) CHECK(r.healthy);

  // A driver that does not know leaves it to the plan's check, which fails three times in a
  // row (unhealthy_threshold), one probe per interval; a pass records the probes that
  // finished since the last one.
  driver.reported_health = -1;
  for (int pass = 0; pass < 4; ++pass) {
    f.engine->waitForProbes();
    f.clock.advance(std::chrono::seconds(1));
    f.engine->runPass();
  }
  for (const auto& r : f.activeRunning()) {
    CHECK_FALSE(r.healthy);
    CHECK(r.message.find("GET http://127.0.0.1:") != std::string::npos);
  }
}

TEST_CASE("observer: an instance its driver reports exited becomes FAILED and is restarted") {
  EngineFixture f({"auto_approve_dev.lua"});
  CountingDriver& driver = rollOutOnOneCluster(f, 2);
  auto running = f.activeRunning();
  REQUIRE(running.size() == 2);

  // Stopped behind tide's back: the batch answers STOPPED for it.
  REQUIRE(driver.stop({std::to_string(running[0].meta.id), running[0].node, ""}).isOk());
  f.engine->runPass();
  auto failed = f.ledger->instances().getRuntimeInstance(running[0].meta.id);
  REQUIRE(failed.isOk());
  CHECK(failed->state == model::RuntimeState::kFailed);
  f.engine->settle();
  CHECK(f.activeRunning().size() == 2);
}

// Deployment `id` of plan web, one instance of a workload that says it is up, waits for the
// file `cue`, takes it (so the next one waits for a cue of its own), says its last words and
// exits 3.
std::string crashOnCue(const std::string& id, const std::filesystem::path& cue) {
  const nlohmann::json command = {"/bin/sh", "-c",
                                  "echo up; while [ ! -e " + cue.string() + " ]; do sleep 0.02; done; rm -f " +
                                      cue.string() + "; echo last words; exit 3"};
  return "deployments:\n  - plan: web\n    deployment_id: " + id +
         "\n    instance_count: 1\n    payload_coordinates: [{payload_name: web, coordinates: {command: " +
         command.dump() + "}}]\n";
}

TEST_CASE("observer: a workload that exited leaves its driver once FAILED, its log kept, a crash loop leaves one") {
  auto options = EngineFixture::fastOptions();
  // Nothing here waits for the orphan sweep: what leaves the driver, the observer's judgement removed.
  options.observer.orphan_grace = std::chrono::hours(1);
  EngineFixture f({"auto_approve_dev.lua"}, options);
  const std::filesystem::path cue = f.dir.path() / "crash";
  f.apply(testing::kEngineNodes);
  f.apply(testing::simPlanWith(""));
  f.apply(crashOnCue("v1", cue));
  std::vector<int64_t> crashed;
  for (int round = 0; round < 3; ++round) {
    REQUIRE(eventually([&] {
      f.engine->settle();
      return f.activeRunning().size() == 1;
    }));
    const model::RuntimeInstance serving = f.activeRunning().at(0);
    std::ofstream(cue).close();
    REQUIRE(eventually([&] {
      f.engine->runPass();
      return f.ledger->instances().getRuntimeInstance(serving.meta.id)->state == model::RuntimeState::kFailed;
    }));
    crashed.push_back(serving.meta.id);
  }
  REQUIRE(eventually([&] {
    f.engine->settle();
    return f.activeRunning().size() == 1;
  }));
  CHECK(f.driverInventory() == 1);  // the one serving, none of the three that crashed
  CHECK(testing::events(f, "driver.orphan").empty());
  // `tide logs` of a crashed one still has its last words: the driver keeps a removed
  // instance's log for log_retention.
  auto driver = f.drivers->forCluster("local");
  REQUIRE(driver.isOk());
  for (int64_t id : crashed) {
    auto log = drivers::readInstanceLog(*driver.value(), std::to_string(id), 4096);
    REQUIRE_MESSAGE(log.isOk(), log.status().toString());
    CHECK(*log == "up\nlast words\n");
  }
}

TEST_CASE("observer: a workload that exited on a node agent leaves the node's document once FAILED, a crash loop leaves one") {
  testing::AgentClusterFixture c;
  EngineFixture& f = c.f;
  c.rollOut(1);
  std::string crashed;
  for (int round = 0; round < 3; ++round) {
    REQUIRE(eventually([&] {
      f.engine->settle();
      return f.activeRunning().size() == 1;
    }));
    const model::RuntimeInstance serving = f.activeRunning().at(0);
    const std::string id = std::to_string(serving.meta.id);
    REQUIRE(c.documentIds() == std::vector<std::string>{id});
    c.agent->exit(id);
    REQUIRE(eventually([&] {
      f.engine->runPass();
      return f.ledger->instances().getRuntimeInstance(serving.meta.id)->state == model::RuntimeState::kFailed;
    }));
    // No longer wanted running: an agent that starts what its document lists would start it
    // again beside the instance the RESTART places.
    const std::vector<std::string> listed = c.documentIds();
    CHECK(std::find(listed.begin(), listed.end(), id) == listed.end());
    crashed = id;
  }
  REQUIRE(eventually([&] {
    f.engine->settle();
    return f.activeRunning().size() == 1;
  }));
  CHECK(c.documentIds() == std::vector<std::string>{std::to_string(f.activeRunning().at(0).meta.id)});
  CHECK(testing::events(f, "driver.orphan").empty());

  // `tide logs` of a crashed one: no document or report lists it, so the host's agent driver
  // asks the node the ledger placed it on, whose agent keeps the log.
  drivers::DriverContext context;
  context.agent_hub = c.hub.get();
  engine::DriverSet host_drivers(*f.ledger, context);
  auto driver = host_drivers.forCluster("edge");
  REQUIRE(driver.isOk());
  Result<std::string> log = Status::internal("not yet");
  std::thread reader([&] { log = drivers::readInstanceLog(*driver.value(), crashed, 4096); });
  CHECK(eventually([&] { return c.hub->document(testing::kAgentNode).logs == std::vector<std::string>{crashed}; }));
  c.hub->postLog(testing::kAgentNode, crashed, "last words\n");
  reader.join();
  REQUIRE_MESSAGE(log.isOk(), log.status().toString());
  CHECK(*log == "last words\n");
}

TEST_CASE("observer: a judgement made on a record that moved since is not written") {
  EngineFixture f({"auto_approve_dev.lua"});
  CountingDriver& driver = rollOutOnOneCluster(f, 1);
  const model::RuntimeInstance serving = f.activeRunning().at(0);
  // While the observer asks the driver, an operation takes the instance over: it writes
  // STOPPING and the process stops. What the pass read is stale when its answer comes.
  bool taken_over = false;
  driver.before_call = [&](const std::string& call, const std::string&) {
    if (call != "status_all" || taken_over) return Status::ok();
    taken_over = true;
    REQUIRE(f.ledger->instances().setRuntimeInstanceState(serving.meta.id, model::RuntimeState::kStopping, std::nullopt, "executor")
                .isOk());
    return driver.stop({std::to_string(serving.meta.id), serving.node, ""});
  };
  f.engine->runPass();
  REQUIRE(taken_over);
  CHECK(f.ledger->instances().getRuntimeInstance(serving.meta.id)->state == model::RuntimeState::kStopping);
}

TEST_CASE("observer: an instance judged left STARTING is not removed from its driver when an executor started it since") {
  EngineFixture f({"auto_approve_dev.lua"});
  CountingDriver& driver = rollOutOnOneCluster(f, 1);
  const model::RuntimeInstance serving = f.activeRunning().at(0);
  // What the pass reads: STARTING with no operation under way (one that ended and left it so).
  for (model::RuntimeState state :
       {model::RuntimeState::kStopping, model::RuntimeState::kStopped, model::RuntimeState::kStarting}) {
    REQUIRE(f.ledger->instances().setRuntimeInstanceState(serving.meta.id, state, std::nullopt, "executor").isOk());
  }
  // While the pass lists the driver, an executor finishes starting it: the judgement is stale.
  bool started = false;
  driver.before_call = [&](const std::string& call, const std::string&) {
    if (call != "list" || started) return Status::ok();
    started = true;
    REQUIRE(f.ledger->instances().setRuntimeInstanceState(serving.meta.id, model::RuntimeState::kRunning, std::nullopt, "executor")
                .isOk());
    return Status::ok();
  };
  f.engine->runPass();
  REQUIRE(started);
  driver.before_call = nullptr;
  CHECK(f.ledger->instances().getRuntimeInstance(serving.meta.id)->state == model::RuntimeState::kRunning);
  // Still in its driver: the ledger's RUNNING is true.
  CHECK(driver.status({std::to_string(serving.meta.id), serving.node, serving.driver_handle}).isOk());
}

// The sim plan with an exec health check running `script` under /bin/sh, with a day's
// timeout: what a probe that hangs looks like.
std::string execCheckPlan(const std::string& script) {
  const nlohmann::json command = {"/bin/sh", "-c", script};
  return testing::simPlanWith("        health_check: {type: exec, command: " + command.dump() +
                              ", interval_seconds: 0.2, timeout_seconds: 86400}\n");
}

// One instance of execCheckPlan(`script`) running on a sim cluster, healthy by the driver's
// word; from now on the driver reports no health, so the observer probes.
CountingDriver& rollOutWithExecCheck(EngineFixture& f, const std::string& script) {
  f.apply(std::string(kSimCapabilities) + simCluster("sim", 1));
  CountingDriver& driver = installCountingSim(f, "sim");
  f.apply(execCheckPlan(script));
  f.apply(engineDeployment("v1", 1, "1"));
  f.engine->settle();
  REQUIRE(f.activeRunning().size() == 1);
  driver.reported_health = -1;
  return driver;
}

TEST_CASE("observer: passes go on while a health probe hangs, and its result is recorded when it comes") {
  EngineFixture f({"auto_approve_dev.lua"});
  const std::string started = f.dir.file("probe-started");
  const std::string release = f.dir.file("release");
  rollOutWithExecCheck(f, "touch " + started + "; while [ ! -e " + release + " ]; do sleep 0.01; done; exit 1");
  std::atomic<int> passes{0};
  std::thread loop([&] {
    for (int pass = 0; pass < 5; ++pass) {
      f.engine->runPass();
      ++passes;
    }
  });
  const bool passed = testing::eventually([&] { return passes.load() == 5; });
  const bool probing = testing::eventually([&] { return std::filesystem::exists(started); });
  std::ofstream(release) << "go\n";
  loop.join();
  CHECK(passed);
  CHECK(probing);

  // The probe failed: after unhealthy_threshold (3) failures in a row the instance is unhealthy.
  for (int probe = 0; probe < 4; ++probe) {
    f.engine->waitForProbes();
    f.clock.advance(std::chrono::seconds(1));
    f.engine->runPass();
  }
  auto running = f.activeRunning();
  REQUIRE(running.size() == 1);
  CHECK_FALSE(running[0].healthy);
  CHECK(running[0].message.find("exited 1") != std::string::npos);
}

TEST_CASE("observer: the engine stops at once while a health probe hangs, and the probe's processes end") {
  EngineFixture f({"auto_approve_dev.lua"});
  const std::string pid_file = f.dir.file("sleeper");
  rollOutWithExecCheck(f, "sleep 86400 & echo $! > " + pid_file + "; wait");
  f.engine->start();
  std::string pid_text;
  REQUIRE(testing::eventually([&] {
    pid_text = testing::readText(pid_file);
    return !pid_text.empty() && pid_text.back() == '\n';
  }));
  const pid_t sleeper = std::stoi(pid_text);
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    f.engine->stop();
    stopped = true;
  });
  const bool returned = testing::eventually([&] { return stopped.load(); });
  if (!returned) ::kill(sleeper, SIGKILL);  // so that the test ends when stop() does not
  stopper.join();
  CHECK(returned);
  const std::string stat = testing::readText("/proc/" + std::to_string(sleeper) + "/stat");
  CHECK((stat.empty() || stat.find(") Z") != std::string::npos));  // gone, or a zombie nobody reaped yet
}

}  // namespace
}  // namespace tide
