// Canary and blue-green rollouts, end to end (issue 5): the control loop runs on its own
// thread over a real SQLite ledger and the process driver, the shipped strategies decide,
// auto_approve_dev.lua approves, and versions are told apart by the workloads' /version.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <thread>

#include "tests/engine/engine_test_support.h"

using namespace tide;
using namespace tide::testing;
using tide::model::Json;

namespace {

// A version whose /healthz fails from the start.
std::string unhealthyDeployment(const std::string& id, int count, const std::string& version) {
  return "deployments:\n  - plan: web\n    deployment_id: " + id + "\n    instance_count: " + std::to_string(count) +
         "\n    payload_coordinates: [{payload_name: web, coordinates: {command: [\"{{tide}}\", workload, --listen, "
         "\"127.0.0.1:{{port.tcp.80}}\", --version, " +
         version + ", --fail-health-after, \"0\"]}}]\n";
}

struct RolloutFixture : EngineFixture {
  explicit RolloutFixture(const std::string& plan) : EngineFixture({"auto_approve_dev.lua"}) {
    apply(kEngineNodes);
    apply(plan);
    engine->start();
  }

  // Polls `done` for up to `seconds` (a liveness bound, not a timing check).
  bool waitFor(const std::function<bool()>& done, int seconds = 90) {
    return eventually(done, std::chrono::seconds(seconds));
  }

  // Lets `by` pass at once: moves the clock and waits until the control loop has run two
  // passes after the move (so at least one whole pass saw the new time).
  void skip(std::chrono::milliseconds by) {
    clock.advance(by);
    const uint64_t before = passes();
    REQUIRE(waitFor([&] { return passes() >= before + 2; }));
  }

  // The control loop's passes so far, from its metrics.
  uint64_t passes() {
    const std::string text = engine->metrics().render();
    const std::string key = "tide_reconcile_pass_duration_seconds_count ";
    const size_t at = text.find(key);
    return at == std::string::npos ? 0 : std::stoull(text.substr(at + key.size()));
  }

  bool waitState(const std::string& id, model::DeploymentState state, int seconds = 90) {
    return waitFor([&] { return deployment(id).state == state; }, seconds);
  }

  // What the RUNNING instances answer on /version, counted by version.
  std::map<std::string, int> versions() {
    std::map<std::string, int> out;
    for (const auto& r : running()) {
      std::string v = httpGet(hostPort(r), "/version");
      while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
      ++out[v.empty() ? "(none)" : v];
    }
    return out;
  }

  void control(const std::string& id, const std::string& what, const std::string& reason = "") {
    auto done = ledger->plans().controlDeployment("web", id, what, reason, "alice");
    REQUIRE_MESSAGE(done.isOk(), done.status().toString());
  }

  // Adds deployment `id` running nginx:<tag> and promotes it fully until it completes.
  void rollOut(const std::string& id, int count, const std::string& tag) {
    apply(engineDeployment(id, count, tag));
    REQUIRE(waitFor([&] {
      auto d = deployment(id);
      if (d.state == model::DeploymentState::kPaused && !d.signals.contains("promote_full"))
        control(id, "promote_full");
      return d.state == model::DeploymentState::kCompleted;
    }));
    REQUIRE(waitFor([&] { return versions() == std::map<std::string, int>{{tag, count}}; }));
  }

  // The weights the route_file hook wrote last for plan web; {} before it wrote any (the
  // hook runs on its own thread, after the route event).
  Json route() {
    const Json route = Json::parse(hookOutput("route-web.json"), nullptr, false);
    return route.is_object() ? route : Json::object();
  }

  int controlEvents(const std::string& id, const std::string& control) {
    ledger::ListOptions o;
    o.limit = ledger::kMaxPageSize;
    o.filters["kind"] = "deployment.control";
    o.filters["subject"] = "deployment/web/" + id;
    auto page = ledger->audit().listEvents(o);
    REQUIRE(page.isOk());
    int n = 0;
    for (const auto& e : page->items) {
      if (e.data.value("control", "") == control && e.actor == "alice" && e.data.value("by", "") == "alice") ++n;
    }
    return n;
  }
};

// Counts moments (polled every 50 ms) when no instance of `version` answered.
class ServingWatch {
 public:
  ServingWatch(RolloutFixture& f, std::string version) : f_(f), version_(std::move(version)) {
    thread_ = std::thread([this] {
      while (!stop_) {
        if (f_.versions()[version_] == 0) ++gaps_;
        ++samples_;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  ~ServingWatch() { finish(); }
  void finish() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int gaps() const { return gaps_; }
  int samples() const { return samples_; }

 private:
  RolloutFixture& f_;
  std::string version_;
  std::atomic<bool> stop_{false};
  std::atomic<int> gaps_{0}, samples_{0};
  std::thread thread_;
};

// "PAUSED: step 1 of 3 ...", for failure messages: no assertion inside, since doctest
// cannot evaluate one while it reports another.
std::string stateOf(RolloutFixture& f, const std::string& id) {
  auto d = f.ledger->plans().getDeployment("web", id);
  return d.isOk() ? model::toString(d->state) + ": " + d->message : d.status().toString();
}

const char* kCanaryParams = "{steps: [50, 100], min_ready_seconds: 0, health_timeout_seconds: 4}";

}  // namespace

TEST_CASE("rollout: canary v1→v2 pauses at the first step, promote completes it") {
  RolloutFixture f(rolloutPlan("canary", kCanaryParams));
  f.apply(engineDeployment("d1", 2, "v1"));
  REQUIRE(f.waitState("d1", model::DeploymentState::kCompleted));  // the first deployment has nothing to compare with
  CHECK(f.versions() == std::map<std::string, int>{{"v1", 2}});

  f.apply(engineDeployment("d2", 2, "v2"));
  REQUIRE(f.waitState("d2", model::DeploymentState::kPaused));
  // Step 1 of 2 (50 %): one instance of each version, and it stays that way while paused.
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v1", 1}, {"v2", 1}}; }));
  model::Deployment paused = f.deployment("d2");
  CHECK(paused.rollout_state.value("step", 0) == 1);
  CHECK(paused.rollout_state.value("steps", 0) == 2);
  f.skip(std::chrono::seconds(1));
  CHECK(f.deployment("d2").state == model::DeploymentState::kPaused);
  CHECK(f.versions() == std::map<std::string, int>{{"v1", 1}, {"v2", 1}});

  f.control("d2", "promote");
  REQUIRE(f.waitState("d2", model::DeploymentState::kCompleted));
  CHECK(f.deployment("d2").message == "promoted");
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v2", 2}}; }));
  REQUIRE(f.waitFor([&] { return f.driverInventory() == 2; }));
  CHECK(f.controlEvents("d2", "promote") == 1);
  CHECK(f.deployment("d2").signals.empty());  // the strategy consumed the promotion
}

TEST_CASE("rollout: a canary whose new version fails its health check rolls back, the old one serving throughout") {
  RolloutFixture f(rolloutPlan("canary", kCanaryParams));
  f.rollOut("d1", 2, "v1");
  f.rollOut("d2", 2, "v2");

  ServingWatch watch(f, "v2");
  f.apply(unhealthyDeployment("d3", 2, "v3"));
  REQUIRE(f.waitState("d3", model::DeploymentState::kRolledBack));
  CHECK(f.deployment("d3").message.rfind("rolled back: ", 0) == 0);
  // d2 is the rollback target: re-opened, its own strategy brings the instances back.
  REQUIRE(f.waitState("d2", model::DeploymentState::kCompleted));
  CHECK(f.deployment("d2").message == "restored after the rollback of d3");
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v2", 2}}; }));
  REQUIRE(f.waitFor([&] { return f.driverInventory() == 2; }));  // no v3 process left
  watch.finish();
  CHECK(watch.samples() > 10);
  CHECK(watch.gaps() == 0);
  for (const auto& op : f.operations()) {
    if (op.intent == "d3")
      CHECK_MESSAGE(op.state != model::OperationState::kRunning, "operation " << op.meta.id << " still running");
  }
  CHECK(f.ledger->checkInvariants()->empty());
}

TEST_CASE("rollout: rollback --to an earlier deployment brings its version back and rolls back the ones between") {
  RolloutFixture f(rolloutPlan("canary", kCanaryParams));
  f.rollOut("d1", 2, "v1");
  f.rollOut("d2", 2, "v2");
  f.rollOut("d3", 2, "v3");
  auto rollback = [&](const std::string& id, const std::string& to) {
    return f.ledger->plans().controlDeployment("web", id, "rollback", "bad release", "alice", to);
  };
  CHECK(rollback("d3", "nope").status().code() == Code::kNotFound);
  CHECK(rollback("d3", "d3").status().message() ==
        "cannot roll deployment 'd3' back to 'd3': it is not an earlier deployment of the plan");
  CHECK(f.deployment("d3").state == model::DeploymentState::kCompleted);  // nothing written by a refusal
  CHECK(f.deployment("d2").state == model::DeploymentState::kCompleted);

  REQUIRE(rollback("d3", "d1").isOk());
  CHECK(f.deployment("d3").state == model::DeploymentState::kRolledBack);
  // d2 is rolled back with it, so no later rollback brings v2 back.
  CHECK(f.deployment("d2").state == model::DeploymentState::kRolledBack);
  CHECK(f.deployment("d2").message == "rolled back past by alice to d1: bad release");
  REQUIRE(f.waitState("d1", model::DeploymentState::kCompleted));
  CHECK(f.deployment("d1").message == "restored after the rollback of d3");
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v1", 2}}; }));

  CHECK(rollback("d1", "").status().code() == Code::kUnprocessable);  // nothing completed before d1
  f.rollOut("d4", 2, "v4");
  CHECK(rollback("d4", "d2").status().message() ==
        "cannot roll deployment 'd4' back to 'd2': it was rolled back itself (rolled back past by alice to d1: bad "
        "release)");
  CHECK(f.ledger->checkInvariants()->empty());
}

TEST_CASE("rollout: promote --full skips the remaining steps") {
  RolloutFixture f(rolloutPlan("canary", "{steps: [10, 50, 100], min_ready_seconds: 0}"));
  f.rollOut("d1", 2, "v1");
  f.apply(engineDeployment("d2", 2, "v2"));
  REQUIRE(f.waitState("d2", model::DeploymentState::kPaused));
  CHECK(f.deployment("d2").rollout_state.value("step", 0) == 1);
  f.control("d2", "promote_full");
  REQUIRE(f.waitState("d2", model::DeploymentState::kCompleted));
  CHECK(f.deployment("d2").message == "fast-promoted");
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v2", 2}}; }));
  CHECK(f.controlEvents("d2", "promote_full") == 1);
}

TEST_CASE(
    "rollout: a new deployment in the middle of a canary supersedes it, the rollback target stays the last completed "
    "one") {
  RolloutFixture f(rolloutPlan("canary", kCanaryParams));
  f.rollOut("d1", 2, "v1");
  f.apply(engineDeployment("d2", 2, "v2"));
  REQUIRE(f.waitState("d2", model::DeploymentState::kPaused));

  f.apply(engineDeployment("d3", 2, "v3"));
  REQUIRE(f.waitState("d2", model::DeploymentState::kCancelled));
  CHECK(f.deployment("d2").message == "superseded by d3");
  REQUIRE(f.waitState("d3", model::DeploymentState::kPaused));
  REQUIRE(f.waitFor([&] { return f.versions()["v3"] == 1 && f.versions()["v2"] == 0; }));

  // d2 never completed, so rolling d3 back goes to d1.
  f.control("d3", "rollback", "wrong build");
  CHECK(f.deployment("d3").state == model::DeploymentState::kRolledBack);
  CHECK(f.deployment("d3").message == "rolled back by alice: wrong build");
  REQUIRE(f.waitState("d1", model::DeploymentState::kCompleted));
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v1", 2}}; }));
  CHECK(f.controlEvents("d3", "rollback") == 1);
}

TEST_CASE("rollout: pause and resume do not consume the progress deadline") {
  // The deadline is far above the real time the rollout itself takes (seconds, more under a
  // sanitizer on a loaded machine) and far below the paused time the test skips (80 s).
  RolloutFixture f(rolloutPlan("canary", "{steps: [50, 100], min_ready_seconds: 0, progress_deadline_seconds: 60}"));
  f.rollOut("d1", 2, "v1");
  f.apply(engineDeployment("d2", 2, "v2"));
  REQUIRE(f.waitState("d2", model::DeploymentState::kPaused));  // the strategy's own pause: waiting for promotion
  f.skip(std::chrono::seconds(40));
  // A person pauses too; the strategy is not even asked while the hold lasts.
  f.control("d2", "pause", "checking dashboards");
  CHECK(f.deployment("d2").message == "paused by alice: checking dashboards");
  f.skip(std::chrono::seconds(40));
  CHECK(f.deployment("d2").state == model::DeploymentState::kPaused);
  f.control("d2", "resume");
  REQUIRE(f.waitState("d2", model::DeploymentState::kPaused));  // back in the strategy's pause
  const model::Deployment d = f.deployment("d2");
  CHECK(d.paused_seconds >= 79.5);  // both pauses were counted as paused time
  f.control("d2", "promote");
  // 80 s paused, more than the 60 s deadline: no rollback.
  REQUIRE_MESSAGE(f.waitState("d2", model::DeploymentState::kCompleted), stateOf(f, "d2"));
  CHECK(f.deployment("d2").message == "promoted");
  CHECK(f.controlEvents("d2", "pause") == 1);
  CHECK(f.controlEvents("d2", "resume") == 1);
}

TEST_CASE("rollout: editing canary.lua while a rollout is paused takes effect at the next reconcile") {
  RolloutFixture f(rolloutPlan("canary", "{steps: [50, 100], min_ready_seconds: 0}"));
  f.rollOut("d1", 2, "v1");
  f.apply(engineDeployment("d2", 2, "v2"));
  REQUIRE(f.waitState("d2", model::DeploymentState::kPaused));
  // The operator replaces the strategy: no more pauses, straight to the end.
  f.writeScript("rollout/canary.lua", R"(
return {
  name = "canary",
  params = { steps = { 10, 50, 100 }, min_ready_seconds = 5 },
  reconcile = function(r)
    if #r.new < r.count then return { create(r.count - #r.new) } end
    local ready = 0
    for _, inst in ipairs(r.new) do if inst.ready then ready = ready + 1 end end
    if ready < r.count then return {} end
    if #r.old > 0 then return { delete(r.old) } end
    return { complete("edited strategy") }
  end,
}
)");
  REQUIRE(f.waitState("d2", model::DeploymentState::kCompleted));
  CHECK(f.deployment("d2").message == "edited strategy");
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v2", 2}}; }));
}

TEST_CASE("rollout: blue-green switches the route only after promote and keeps blue warm for the delay") {
  RolloutFixture f(
      rolloutPlan("blue_green", "{auto_promotion: never, min_ready_seconds: 0, scale_down_delay_seconds: 3}"));
  f.rollOut("d1", 2, "v1");
  REQUIRE(f.waitFor([&] { return f.route().value("deployment", "") == "d1"; }));
  CHECK(f.route().value("new", -1) == 100);

  f.apply(engineDeployment("d2", 2, "v2"));
  REQUIRE(f.waitState("d2", model::DeploymentState::kPaused));
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v1", 2}, {"v2", 2}}; }));
  f.skip(std::chrono::seconds(1));
  // The preview is up and healthy, but nothing routes to it before promotion.
  const Json before = f.route();
  CHECK((before.value("deployment", "") == "d1" || before.value("new", -1) == 0));

  f.control("d2", "promote");
  REQUIRE(f.waitFor([&] { return f.route().value("deployment", "") == "d2" && f.route().value("new", -1) == 100; }));
  // Switched; blue stays up for the scale-down delay, so switching back would be instant.
  CHECK(f.versions()["v1"] == 2);
  REQUIRE(f.waitState("d2", model::DeploymentState::kCompleted));
  CHECK(f.deployment("d2").message == "promoted");
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v2", 2}}; }));
}

TEST_CASE("rollout: abort during blue-green leaves blue serving and removes green") {
  RolloutFixture f(
      rolloutPlan("blue_green", "{auto_promotion: never, min_ready_seconds: 0, abort_scale_down_delay_seconds: 1}"));
  f.rollOut("d1", 2, "v1");
  f.apply(engineDeployment("d2", 2, "v2"));
  REQUIRE(f.waitState("d2", model::DeploymentState::kPaused));
  REQUIRE(f.waitFor([&] { return f.versions()["v2"] == 2; }));

  ServingWatch watch(f, "v1");
  f.control("d2", "abort", "latency");
  CHECK(f.deployment("d2").state == model::DeploymentState::kFailed);
  CHECK(f.deployment("d2").message == "aborted by alice: latency");
  REQUIRE(f.waitState("d1", model::DeploymentState::kCompleted));
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v1", 2}}; }));
  REQUIRE(f.waitFor([&] { return f.driverInventory() == 2; }));
  CHECK(f.route().value("deployment", "") == "d1");
  CHECK(f.route().value("new", -1) == 100);
  watch.finish();
  CHECK(watch.gaps() == 0);
  CHECK(f.controlEvents("d2", "abort") == 1);

  // Retry starts the aborted rollout again from the beginning.
  f.control("d2", "retry");
  REQUIRE(f.waitState("d2", model::DeploymentState::kPaused));
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v1", 2}, {"v2", 2}}; }));
  CHECK(f.deployment("d1").state == model::DeploymentState::kCompleted);
}

TEST_CASE("rollout: a canary with no node left for its surge replaces an old instance instead") {
  // Four nodes, one instance of the plan per node: 3 old + 2 new do not fit.
  RolloutFixture f(rolloutPlan("canary", "{steps: [50, 100], min_ready_seconds: 0}"));
  f.rollOut("d1", 3, "v1");
  f.apply(engineDeployment("d2", 3, "v2"));
  REQUIRE(f.waitState("d2", model::DeploymentState::kPaused));
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v1", 1}, {"v2", 2}}; }));
  f.control("d2", "promote");
  REQUIRE(f.waitState("d2", model::DeploymentState::kCompleted));
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v2", 3}}; }));
}

namespace {

// A deployment of the running version with instance_count 0: the host adopts the instances
// (nothing is old), and the strategy must remove them all and complete, not wait for
// promotions of "2 of 0 new instances".
void checkScalesToZero(const std::string& script, const std::string& params) {
  RolloutFixture f(rolloutPlan(script, params));
  f.rollOut("d1", 2, "v1");
  f.apply(engineDeployment("d2", 0, "v1"));
  REQUIRE_MESSAGE(f.waitState("d2", model::DeploymentState::kCompleted), script, ": ", stateOf(f, "d2"));
  REQUIRE(f.waitFor([&] { return f.versions().empty() && f.driverInventory() == 0; }));
  CHECK(f.ledger->checkInvariants()->empty());

  // And back up from 0: no old instance to shift traffic from, so no steps either.
  f.apply(engineDeployment("d3", 2, "v1"));
  REQUIRE_MESSAGE(f.waitState("d3", model::DeploymentState::kCompleted), script, ": ", stateOf(f, "d3"));
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v1", 2}}; }));
}

}  // namespace

TEST_CASE("rollout: canary, rolling and blue-green scale to 0 instances and complete") {
  SUBCASE("canary") { checkScalesToZero("canary", "{steps: [10, 50, 100], min_ready_seconds: 0}"); }
  SUBCASE("rolling") { checkScalesToZero("rolling", "{}"); }
  SUBCASE("blue_green") { checkScalesToZero("blue_green", "{auto_promotion: never, min_ready_seconds: 0}"); }
}

TEST_CASE("rollout: a canary of the running version with a smaller count removes the surplus without steps") {
  RolloutFixture f(rolloutPlan("canary", "{steps: [10, 50, 100], min_ready_seconds: 0}"));
  f.rollOut("d1", 3, "v1");
  f.apply(engineDeployment("d2", 1, "v1"));
  REQUIRE_MESSAGE(f.waitState("d2", model::DeploymentState::kCompleted), stateOf(f, "d2"));
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v1", 1}}; }));
}
