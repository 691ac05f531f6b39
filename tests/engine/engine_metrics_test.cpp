// What the control loop shows on /metrics (host/engine/engine_metrics.h, docs/api.md#metrics):
// each series moves when what it counts happens, over sim clusters (sim_test_support.h) and a
// FakeRouter; ages grow as the fixture's clock is moved, not by waiting.

#include <filesystem>
#include <fstream>

#include "tests/engine/sim_test_support.h"
#include "tests/support/fake_router.h"
#include "tests/support/ports.h"

namespace tide {
namespace {

using testing::CountingDriver;
using testing::deploySimFleet;
using testing::engineDeployment;
using testing::EngineFixture;
using testing::installCountingSim;
using testing::kSimCapabilities;
using testing::simCluster;

// The value of `series` (its name and labels as rendered) in `text`; nullopt when absent.
std::optional<double> sampleIn(const std::string& text, const std::string& series) {
  const std::string head = series + " ";
  for (size_t at = text.find(head); at != std::string::npos; at = text.find(head, at + 1)) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + head.size()));
  }
  return std::nullopt;
}

std::optional<double> loopMetric(EngineFixture& f, const std::string& series) {
  return sampleIn(f.engine->metrics().render(), series);
}

TEST_CASE("engine metrics: operations waiting for approval show how many and how long the oldest waited") {
  EngineFixture f;  // no policy: every operation waits for a person
  deploySimFleet(f, 4, 2);
  f.engine->settle();
  REQUIRE(f.operations("PENDING_APPROVAL").size() == 2);
  const std::string waiting = "tide_operations_waiting_approval{plan=\"web\"}";
  const std::string oldest = "tide_operations_waiting_approval_oldest_seconds{plan=\"web\"}";
  CHECK(loopMetric(f, waiting) == 2);
  REQUIRE(loopMetric(f, oldest));
  CHECK(*loopMetric(f, oldest) < 60);

  // The age is taken when /metrics is read: it grows with the clock, pass or no pass.
  f.clock.advance(std::chrono::minutes(90));
  CHECK(*loopMetric(f, oldest) >= 90 * 60);

  // A new script set has the waiting operations decided again; that does not restart their wait.
  const std::string since = f.operations("PENDING_APPROVAL")[0].decision.value("waiting_since", "");
  REQUIRE_FALSE(since.empty());
  std::ofstream(f.dir.path() / "policies" / "abstain.lua")
      << "return { name = 'abstain', level = 'hard', decide = function(op, ctx) return abstain() end }\n";
  REQUIRE(f.scripts->reloadAll().failed == 0);
  const uint64_t version = f.scripts->current()->version;
  f.engine->settle();
  const auto after = f.operations("PENDING_APPROVAL");
  REQUIRE(after.size() == 2);
  CHECK(after[0].decision.value("script_set_version", uint64_t{0}) == version);
  CHECK(after[0].decision.value("waiting_since", "") == since);
  CHECK(*loopMetric(f, oldest) >= 90 * 60);

  f.approveAll();
  f.engine->settle();
  CHECK(loopMetric(f, waiting) == 0);
  CHECK_FALSE(loopMetric(f, oldest));
}

TEST_CASE("engine metrics: a rollout shows in progress, then held for as long as it is paused, then failed") {
  EngineFixture f({"auto_approve_dev.lua"});
  deploySimFleet(f, 4, 2);
  f.engine->settle();
  REQUIRE(f.deployment("v1").state == model::DeploymentState::kCompleted);
  CHECK(f.engine->metrics().render().find("tide_rollouts{plan=\"web\"") == std::string::npos);

  f.apply(engineDeployment("v2", 2, "2"));
  f.engine->runPass();
  REQUIRE(f.deployment("v2").state == model::DeploymentState::kInProgress);
  CHECK(loopMetric(f, "tide_rollouts{plan=\"web\",state=\"in_progress\"}") == 1);

  REQUIRE(f.ledger->plans().controlDeployment("web", "v2", "pause", "the test holds it", "alice").isOk());
  f.engine->runPass();
  REQUIRE(f.deployment("v2").state == model::DeploymentState::kPaused);
  CHECK(loopMetric(f, "tide_rollouts{plan=\"web\",state=\"held\"}") == 1);
  CHECK_FALSE(loopMetric(f, "tide_rollouts{plan=\"web\",state=\"in_progress\"}"));
  const std::string held = "tide_rollout_held_seconds{plan=\"web\"}";
  REQUIRE(loopMetric(f, held));
  CHECK(*loopMetric(f, held) < 60);
  f.clock.advance(std::chrono::hours(2));
  CHECK(*loopMetric(f, held) >= 2 * 3600);

  REQUIRE(f.ledger->plans().controlDeployment("web", "v2", "abort", "the test gives up", "alice").isOk());
  f.engine->runPass();
  REQUIRE(f.deployment("v2").state == model::DeploymentState::kFailed);
  CHECK(loopMetric(f, "tide_rollouts{plan=\"web\",state=\"failed\"}") == 1);
  CHECK_FALSE(loopMetric(f, "tide_rollouts{plan=\"web\",state=\"held\"}"));
  CHECK_FALSE(loopMetric(f, held));
}

TEST_CASE("engine metrics: a plan's running instances fall short of its desired ones until a node is added") {
  EngineFixture f({"auto_approve_dev.lua"});
  deploySimFleet(f, 2, 3);  // each node fits one instance
  f.engine->settle();
  CHECK(loopMetric(f, "tide_plan_desired_instances{plan=\"web\"}") == 3);
  CHECK(loopMetric(f, "tide_plan_running_instances{plan=\"web\"}") == 2);

  f.apply(
      "nodes:\n  - {name: sim-3, cluster: sim, update_domain: ud-1, total: {cores: 2, memory_gib: 4}, "
      "capabilities: [intel-xeon]}\n");
  f.engine->settle();
  REQUIRE(f.deployment("v1").state == model::DeploymentState::kCompleted);
  CHECK(loopMetric(f, "tide_plan_running_instances{plan=\"web\"}") == 3);
  CHECK(loopMetric(f, "tide_plan_desired_instances{plan=\"web\"}") == 3);
}

TEST_CASE("engine metrics: every failure of a hook counts, those its hook.failed events leave out too") {
  EngineFixture f({"auto_approve_dev.lua"});
  f.writeScript("hooks/broken.lua", R"(
return {
  name = "broken",
  fail_open = true,
  on = { ["operation.before"] = function(op) error("before broke") end },
}
)");
  deploySimFleet(f, 4, 3);
  f.engine->settle();
  REQUIRE(f.deployment("v1").state == model::DeploymentState::kCompleted);
  // One event for the three failures alike (hook_runner.h), and all three counted.
  CHECK(testing::events(f, "hook.failed").size() == 1);
  const auto failures = loopMetric(f, "tide_hook_failures_total{hook=\"broken\",event=\"operation.before\"}");
  REQUIRE(failures);
  CHECK(*failures >= 3);
}

TEST_CASE("engine metrics: a driver call that fails counts by call, an orphan's removal too") {
  EngineFixture f({"auto_approve_dev.lua"});
  f.apply(std::string(kSimCapabilities) + simCluster("sim", 2));
  CountingDriver& driver = installCountingSim(f, "sim");
  drivers::RuntimeSpec stray;  // an object the ledger does not know: an orphan
  stray.id = "987654";
  stray.meta_instance = "stray";
  stray.node = "sim-1";
  stray.coordinates = model::Json{{"image", "nginx:1"}};
  stray.resources = {1, 1};
  REQUIRE(driver.ensure(stray).isOk());
  driver.before_call = [](const std::string& call, const std::string&) {
    return call == "remove" ? Status::unavailable("the test's runtime refuses") : Status::ok();
  };
  CHECK_FALSE(loopMetric(f, "tide_driver_call_errors_total{call=\"remove\"}"));
  f.engine->runPass();  // the orphan is seen
  f.engine->runPass();  // its grace (0 s) is over: removing it fails
  CHECK(loopMetric(f, "tide_driver_call_errors_total{call=\"remove\"}") == 1);
  CHECK(loopMetric(f, "tide_driver_call_duration_seconds_count{call=\"remove\"}") == 1);
  f.engine->runPass();
  CHECK(loopMetric(f, "tide_driver_call_errors_total{call=\"remove\"}") == 2);
}

TEST_CASE("engine metrics: router errors count by call while the router is down, and stop when it is back") {
  testing::FakeRouter router;
  router.up = false;
  engine::EngineOptions options = EngineFixture::fastOptions();
  options.router = &router;
  EngineFixture f({"auto_approve_dev.lua"}, options);
  f.apply(std::string(kSimCapabilities) + simCluster("sim", 2));
  f.apply(R"(
plans:
  - name: web
    namespace: dev-fleet
    service_name: web
    matching_capabilities: [{type: CPU, comparator: EQ, names: [intel-xeon]}]
    traffic: {listen: "127.0.0.1:)" +
          std::to_string(testing::freePort()) + R"("}
    applications:
      - payload_name: web
        resources: {cores: 1, memory_gib: 1}
        ports: [{protocol: TCP, port: 80}]
)");
  f.engine->runPass();
  CHECK(loopMetric(f, "tide_router_errors_total{call=\"apply\"}") == 1);
  CHECK(loopMetric(f, "tide_router_errors_total{call=\"read\"}") == 1);
  f.engine->runPass();
  CHECK(loopMetric(f, "tide_router_errors_total{call=\"apply\"}") == 2);
  CHECK(loopMetric(f, "tide_router_errors_total{call=\"read\"}") == 2);

  router.set([](testing::FakeRouter& r) { r.up = true; });
  f.engine->runPass();
  f.engine->runPass();
  CHECK(loopMetric(f, "tide_router_errors_total{call=\"apply\"}") == 2);
  CHECK(loopMetric(f, "tide_router_errors_total{call=\"read\"}") == 2);
}

}  // namespace
}  // namespace tide
