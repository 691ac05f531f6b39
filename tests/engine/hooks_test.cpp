// Runtime hooks in the running control loop (docs/architecture.md#runtime-hooks): operation.before holds or lets
// operations run, the other events reach hooks from the ledger's events, a failing
// operation.before holds its operation unless the hook fails open, and every other broken
// hook is recorded without stopping anything.

#include "tests/engine/sim_test_support.h"

namespace tide {
namespace {

using namespace std::chrono_literals;
using testing::engineDeployment;
using testing::EngineFixture;
using testing::enginePlan;
using testing::events;
using testing::eventually;
using testing::kEngineNodes;
using tide::model::Json;

engine::EngineOptions quickRecheck() {
  engine::EngineOptions options = EngineFixture::fastOptions();
  options.executor.hook_veto_recheck = 300ms;
  return options;
}

// Nodes, the web-dev plan and its deployment d1 of `instances` instances, then one settle.
void deployWeb(EngineFixture& f, int instances = 1) {
  f.apply(kEngineNodes);
  f.apply(enginePlan("web-dev"));
  f.apply(engineDeployment("d1", instances, "1.0"));
  f.engine->settle();
}

std::string vetoHook(const std::string& reason) {
  return "return { name = 'freeze', on = { ['operation.before'] = function(op, ctx)\n"
         "  if op.type == 'CREATE' and op.plan == 'web' then return { veto = '" +
         reason +
         "' } end\n"
         "end } }\n";
}

// A canary of plan web on four sim nodes: steps of 50% then 100%, a minute's pause after the
// first, each new instance ready at once; deployment v1 of two instances COMPLETED under it.
void canaryOnSim(EngineFixture& f) {
  f.apply(std::string(testing::kSimCapabilities) + testing::simCluster("sim", 4));
  testing::installCountingSim(f, "sim");
  std::string plan = testing::kSimPlan;
  const std::string applications = "    applications:";
  plan.replace(plan.find(applications), applications.size(),
               "    strategy: {script: canary, params: {steps: [50], pause_seconds: 60, min_ready_seconds: 0}}\n" +
                   applications);
  f.apply(plan);
  f.apply(engineDeployment("v1", 2, "1"));
  f.engine->settle();
  REQUIRE(f.deployment("v1").state == model::DeploymentState::kCompleted);
}

// Seconds the rollout of `d` has been in progress, paused time left out (as its strategy sees
// r.deployment.progress_seconds).
double progressSeconds(EngineFixture& f, const model::Deployment& d) {
  const TimePoint started = parseTimestamp(d.started_at).value();
  const TimePoint now = f.clock.now();
  double paused = d.paused_seconds;
  if (!d.paused_since.empty())
    paused += std::chrono::duration<double>(now - parseTimestamp(d.paused_since).value()).count();
  return std::chrono::duration<double>(now - started).count() - paused;
}

}  // namespace

TEST_CASE("engine hooks: a veto holds a canary step, its time counting toward nothing, and never rolls it back") {
  EngineFixture f({"auto_approve_dev.lua"});
  canaryOnSim(f);
  const std::string freeze =
      "return { name = 'freeze', on = { ['operation.before'] = function(op, ctx)\n"
      "  if op.intent == 'v2' then return { veto = 'change freeze' } end\n"
      "end } }\n";
  f.writeScript("hooks/freeze.lua", freeze);
  f.apply(engineDeployment("v2", 2, "2"));
  f.engine->settle();

  // Held for 15 minutes: past the step's health_timeout_seconds (120) and the progress
  // deadline (600) many times over, asked again every 10 s.
  for (int minute = 0; minute < 15; ++minute) {
    f.clock.advance(60s);
    f.engine->settle();
  }
  model::Deployment held = f.deployment("v2");
  CHECK(held.state == model::DeploymentState::kPaused);
  CHECK(held.message == "held by hook freeze: change freeze");
  REQUIRE(held.signals.contains(model::kHookHoldSignal));
  CHECK(held.signals[model::kHookHoldSignal]["kind"] == "veto");
  CHECK(progressSeconds(f, held) < 60);
  CHECK(f.deployment("v1").state == model::DeploymentState::kCompleted);
  auto vetoed = f.operations("APPROVED");
  REQUIRE(vetoed.size() == 1);
  CHECK(vetoed[0].type == model::OperationType::kCreate);
  CHECK(vetoed[0].attempts == 0);
  CHECK(held.signals[model::kHookHoldSignal]["operation"] == vetoed[0].meta.id);
  auto held_events = events(f, "deployment.held");
  REQUIRE(held_events.size() == 1);  // asked again and again, for the same reason
  CHECK(held_events[0].subject == "deployment/web/v2");
  CHECK(held_events[0].data["message"] == "held by hook freeze: change freeze");
  CHECK(held_events[0].data["operation"] == vetoed[0].meta.id);
  CHECK(events(f, "deployment.released").empty());

  SUBCASE("when the hook lets the operation go, the canary goes on where it was held") {
    f.writeScript("hooks/freeze.lua", std::nullopt);
    f.clock.advance(11s);  // past the veto's recheck
    f.engine->settle();
    auto released = events(f, "deployment.released");
    REQUIRE(released.size() == 1);
    CHECK(released[0].data["held_seconds"].get<double>() >= 15 * 60);
    const model::Deployment paused = f.deployment("v2");
    CHECK(paused.state == model::DeploymentState::kPaused);
    CHECK(paused.message.find("step 1 of 2 (50% new): paused until ") == 0);
    CHECK_FALSE(paused.signals.contains(model::kHookHoldSignal));

    f.clock.advance(61s);  // the step's own pause
    f.engine->settle();
    CHECK(f.deployment("v2").state == model::DeploymentState::kCompleted);
    CHECK(f.deployment("v2").message == "promoted");
    auto serving = f.activeRunning();
    REQUIRE(serving.size() == 2);
    for (const auto& r : serving) CHECK(r.coordinates.dump().find("nginx:2") != std::string::npos);
    CHECK(events(f, "deployment.held").size() == 1);
  }

  SUBCASE("a person still rolls it back by hand") {
    auto rolled = f.ledger->plans().controlDeployment("web", "v2", "rollback", "not today", "alice");
    REQUIRE_MESSAGE(rolled.isOk(), rolled.status().toString());
    f.engine->settle();
    CHECK(f.deployment("v2").state == model::DeploymentState::kRolledBack);
    CHECK_FALSE(f.deployment("v2").signals.contains(model::kHookHoldSignal));
    CHECK(f.deployment("v1").state == model::DeploymentState::kCompleted);
    CHECK(f.operations("APPROVED").empty());  // the held CREATE was cancelled with it
    for (const auto& r : f.activeRunning()) CHECK(r.coordinates.dump().find("nginx:1") != std::string::npos);
  }
}

TEST_CASE("engine hooks: a veto holds the operation with the hook's reason until the hook changes its mind") {
  EngineFixture f({"auto_approve_dev.lua"}, quickRecheck());
  f.writeScript("hooks/freeze.lua", vetoHook("change freeze"));
  deployWeb(f);
  f.clock.advance(400ms);  // past the recheck: the hook is asked again
  f.engine->settle();
  auto held = f.operations("APPROVED");
  REQUIRE(held.size() == 1);
  CHECK(held[0].message == "held by hook freeze: change freeze");
  CHECK(held[0].attempts == 0);
  CHECK(f.driverInventory() == 0);
  CHECK(f.running().empty());
  auto held_events = events(f, "operation.held");
  REQUIRE(held_events.size() == 1);  // asked twice, the same reason: one event
  CHECK(held_events[0].data["hook"] == "freeze");
  CHECK(held_events[0].data["reason"] == "change freeze");

  f.writeScript("hooks/freeze.lua", vetoHook("maintenance"));
  f.clock.advance(400ms);
  f.engine->settle();
  CHECK(f.operations("APPROVED").at(0).message == "held by hook freeze: maintenance");
  CHECK(events(f, "operation.held").size() == 2);

  f.writeScript("hooks/freeze.lua", std::nullopt);
  f.clock.advance(400ms);
  f.engine->settle();
  CHECK(f.deployment("d1").state == model::DeploymentState::kCompleted);
  CHECK(f.running().size() == 1);
  auto done = f.operations("SUCCEEDED");
  REQUIRE(done.size() == 1);
  CHECK(done[0].attempts == 1);
}

TEST_CASE("engine hooks: a delay puts the attempt off once, then it runs") {
  EngineFixture f({"auto_approve_dev.lua"});
  f.writeScript("hooks/later.lua",
                "return { name = 'later', on = { ['operation.before'] = function(op, ctx)\n"
                "  return { delay = 1, reason = 'let the caches warm' } end } }\n");
  deployWeb(f);
  auto delayed = f.operations("APPROVED");
  REQUIRE(delayed.size() == 1);
  CHECK(delayed[0].message == "delayed by hook later: let the caches warm");
  CHECK(delayed[0].target["hook_delay_done"] == 1);
  CHECK(f.running().empty());

  f.clock.advance(1100ms);
  f.engine->settle();  // the hook still says "delay", but this attempt was delayed already
  CHECK(f.deployment("d1").state == model::DeploymentState::kCompleted);
  CHECK(events(f, "operation.held").size() == 1);
}

TEST_CASE("engine hooks: operation.after, instance.state and deployment.state hooks hear the rollout") {
  EngineFixture f({"auto_approve_dev.lua"});
  f.writeScript("hooks/record.lua", R"(
return {
  name = "record",
  on = {
    ["operation.after"] = function(op, ctx)
      ctx.emit_file("op-" .. op.id, table.concat({ op.type, op.state, op.meta_instance, op.plan, op.intent }, " "))
    end,
    ["instance.state"] = function(inst, ctx)
      ctx.emit_file("instance-" .. inst.id .. "-" .. inst.state, inst.meta_instance .. " " .. inst.node .. " " .. inst.from)
    end,
    ["deployment.state"] = function(dep, ctx)
      ctx.emit_file("deployment-" .. dep.plan .. "-" .. dep.deployment .. "-" .. dep.state, dep.from .. " " .. dep.message)
    end,
  },
}
)");
  deployWeb(f);
  REQUIRE(f.deployment("d1").state == model::DeploymentState::kCompleted);
  auto done = f.operations("SUCCEEDED");
  REQUIRE(done.size() == 1);
  auto running = f.running();
  REQUIRE(running.size() == 1);

  const std::string op_file = "op-" + std::to_string(done[0].meta.id);
  CHECK(eventually([&] { return !f.hookOutput(op_file).empty(); }));
  CHECK(f.hookOutput(op_file) == "CREATE SUCCEEDED " + done[0].meta_instance + " web d1");
  CHECK(eventually([&] { return !f.hookOutput("deployment-web-d1-COMPLETED").empty(); }));
  CHECK(f.hookOutput("deployment-web-d1-IN_PROGRESS").rfind("PENDING", 0) == 0);
  CHECK(f.hookOutput("deployment-web-d1-COMPLETED").rfind("IN_PROGRESS ", 0) == 0);
  const std::string instance_file = "instance-" + std::to_string(running[0].meta.id) + "-RUNNING";
  CHECK(eventually([&] { return !f.hookOutput(instance_file).empty(); }));
  CHECK(f.hookOutput(instance_file) == running[0].meta_instance + " " + running[0].node + " STARTING");
  CHECK(events(f, "hook.failed").empty());
}

TEST_CASE("engine hooks: a route action reaches route_file.lua, which writes route-<plan>.json") {
  EngineFixture f({"auto_approve_dev.lua"});
  f.writeScript("rollout/switch.lua", R"(
return {
  name = "switch",
  reconcile = function(r)
    if #r.new < r.count then return { create(r.count - #r.new) } end
    if r.counts.new_ready < r.count then return {} end
    return { route({ new = 100, old = 0 }), complete("switched") }
  end,
}
)");
  std::string plan = enginePlan("web-dev");
  plan += "    strategy: {script: switch}\n";
  f.apply(kEngineNodes);
  f.apply(plan);
  f.apply(engineDeployment("d1", 1, "1.0"));
  f.engine->settle();
  REQUIRE(f.deployment("d1").state == model::DeploymentState::kCompleted);
  CHECK(eventually([&] { return !f.hookOutput("route-web.json").empty(); }));
  const Json route = Json::parse(f.hookOutput("route-web.json"));
  CHECK(route == Json{{"deployment", "d1"}, {"previous", nullptr}, {"new", 100}, {"old", 0}});
}

TEST_CASE("engine hooks: an operation.before that errors holds the operation: not started, and fail_open lets it run") {
  EngineFixture f({"auto_approve_dev.lua"}, quickRecheck());
  const std::string broken =
      "return { name = 'broken', %s on = { ['operation.before'] = function(op) error('before broke') end } }\n";
  auto hook = [&broken](const std::string& extra) {
    std::string text = broken;
    return text.replace(text.find("%s"), 2, extra);
  };
  f.writeScript("hooks/broken.lua", hook(""));
  deployWeb(f);
  f.clock.advance(400ms);  // past the recheck: the hook fails again
  f.engine->settle();
  auto held = f.operations("APPROVED");
  REQUIRE(held.size() == 1);
  CHECK(held[0].message.rfind("held by hook broken: operation.before failed: ", 0) == 0);
  CHECK(held[0].message.find("before broke") != std::string::npos);
  CHECK(held[0].attempts == 0);
  CHECK(f.driverInventory() == 0);
  CHECK(f.running().empty());
  CHECK(f.deployment("d1").state != model::DeploymentState::kCompleted);
  auto held_events = events(f, "operation.held");
  REQUIRE(held_events.size() == 1);
  CHECK(held_events[0].data["hook"] == "broken");
  CHECK(held_events[0].data["kind"] == "veto");
  CHECK(held_events[0].data["reason"].get<std::string>().find("before broke") != std::string::npos);
  auto failed = events(f, "hook.failed");
  REQUIRE(failed.size() == 1);  // asked twice, the same error: one event
  CHECK(failed[0].subject == "hook/broken");
  CHECK(failed[0].data["event"] == "operation.before");
  CHECK(failed[0].data["error"].get<std::string>().find("before broke") != std::string::npos);
  CHECK(failed[0].data["failed_open"] == false);

  // Declaring that it fails open lets the operation through, recording that it did.
  f.writeScript("hooks/broken.lua", hook("fail_open = true,"));
  f.clock.advance(400ms);
  f.engine->settle();
  CHECK(f.deployment("d1").state == model::DeploymentState::kCompleted);
  CHECK(f.running().size() == 1);
  failed = events(f, "hook.failed");
  REQUIRE(failed.size() == 2);
  CHECK(failed[1].data["event"] == "operation.before");
  CHECK(failed[1].data["failed_open"] == true);
}

TEST_CASE("engine hooks: a hook file broken from the start holds operations until it is fixed") {
  EngineFixture f({"auto_approve_dev.lua"}, quickRecheck());
  std::filesystem::create_directories(f.scriptsDir() / "hooks");
  std::ofstream(f.scriptsDir() / "hooks" / "gate.lua") << "return { name = 'gate', on = {\n";
  REQUIRE(f.scripts->reloadAll().failed == 1);
  deployWeb(f);
  auto held = f.operations("APPROVED");
  REQUIRE(held.size() == 1);
  CHECK(held[0].message.rfind("held by hook ", 0) == 0);
  CHECK(held[0].message.find("gate.lua: operation.before failed: ") != std::string::npos);
  CHECK(held[0].message.find("failed validation") != std::string::npos);
  CHECK(f.running().empty());

  f.writeScript("hooks/gate.lua", "return { name = 'gate', on = { ['operation.before'] = function(op) end } }\n");
  f.clock.advance(400ms);
  f.engine->settle();
  CHECK(f.deployment("d1").state == model::DeploymentState::kCompleted);
}

TEST_CASE("engine hooks: a failing hook writes hook.failed, once per error, and the rollout still completes") {
  EngineFixture f({"auto_approve_dev.lua"});
  f.writeScript("hooks/broken.lua", R"(
return {
  name = "broken",
  fail_open = true,
  on = {
    ["operation.before"] = function(op) error("before broke") end,
    ["operation.after"] = function(op) error("after broke") end,
    ["deployment.state"] = function(dep) while true do end end,
  },
}
)");
  deployWeb(f, 2);
  CHECK(f.deployment("d1").state == model::DeploymentState::kCompleted);
  CHECK(f.running().size() == 2);

  auto failedFor = [&](const std::string& event) {
    std::vector<model::Event> out;
    for (auto& e : events(f, "hook.failed")) {
      if (e.data["event"] == event) out.push_back(e);
    }
    return out;
  };
  CHECK(eventually([&] { return failedFor("operation.after").size() == 1; }));
  CHECK(eventually([&] { return !failedFor("deployment.state").empty(); }));
  // Two operations failed the same way before running; the second was not written again.
  auto before = failedFor("operation.before");
  REQUIRE(before.size() == 1);
  CHECK(before[0].subject == "hook/broken");
  CHECK(before[0].data["error"].get<std::string>().find("before broke") != std::string::npos);
  CHECK(failedFor("deployment.state")[0].data["error_class"] == "timeout");
}

}  // namespace tide
