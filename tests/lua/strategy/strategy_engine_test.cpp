#include "host/lua/strategy/strategy_engine.h"
#include <doctest/doctest.h>

#include <sstream>

#include "host/core/sha256.h"
#include "host/lua/registry/policy_tool.h"
#include "host/lua/runtime/script_loader.h"
#include "host/lua/strategy/strategy_tests.h"
#include "tests/lua/lua_test_util.h"

using namespace tide;
using namespace tide::lua;
using namespace tide::lua::testing;
using namespace std::chrono_literals;

namespace {


// A ScriptSetProvider whose set the test replaces.
class FixedScripts final : public ScriptSetProvider {
 public:
  std::shared_ptr<const ScriptSet> current() const override { return set_; }
  // Publishes a set of the strategies given as {name, text}, at path
  // scripts/rollout/<name>.lua, with the next version number.
  void publish(std::vector<std::pair<std::string, std::string>> strategies) {
    auto set = std::make_shared<ScriptSet>();
    set->version = set_ ? set_->version + 1 : 1;
    for (auto& [name, text] : strategies) {
      ScriptFile file;
      file.path = "scripts/rollout/" + name + ".lua";
      file.kind = ScriptKind::kStrategy;
      file.name = name;
      file.text = text;
      file.sha256 = sha256Hex(text);
      set->files[file.path] = file;
    }
    set_ = std::move(set);
  }

 private:
  std::shared_ptr<const ScriptSet> set_ = std::make_shared<ScriptSet>();
};

// A strategy named `name` whose reconcile body is `body` (r is its argument).
std::string strategy(const std::string& name, const std::string& body, const std::string& params = "{}") {
  return "return {\n  name = \"" + name + "\",\n  params = " + params + ",\n  reconcile = function(r)\n" + body +
         "\n  end,\n}\n";
}


Json readyInstance(const std::string& name, const std::string& version) {
  return {{"name", name}, {"version", version}, {"state", "RUNNING"}, {"healthy", true}, {"update_domain", "ud-1"}};
}

}  // namespace

TEST_CASE("lua: a strategy's params merge defaults, plan and deployment params") {
  FixedScripts scripts;
  scripts.publish({{"echo", strategy("echo", "r.state.seen = r.params\n return {}",
                                     "{ surge = { type = 'count', default = 0 }, steps = { 10, 50 }, "
                                     "label = 'x' }")}});
  const FakeClock clock = testClock();
  StrategyEngine engine(scripts, clock);

  auto params = engine.resolveParams("echo", Json{{"surge", 2}, {"label", "plan"}}, Json{{"label", "deployment"}});
  REQUIRE(params.isOk());
  CHECK(*params == Json{{"surge", 2}, {"steps", {10, 50}}, {"label", "deployment"}});

  auto result =
      engine.reconcile("echo", Json{{"plan_params", {{"surge", "50%"}}}, {"deployment_params", {{"label", "y"}}}});
  REQUIRE(result.isOk());
  const Json expected = {{"surge", "50%"}, {"steps", {10, 50}}, {"label", "y"}};
  CHECK(result->params == expected);
  CHECK(result->state["seen"] == expected);

  auto unknown = engine.reconcile("echo", Json{{"deployment_params", {{"sugre", 1}}}});
  REQUIRE(!unknown.isOk());
  CHECK(unknown.status().code() == Code::kInvalidArgument);
  CHECK(unknown.status().message().find("unknown deployment param 'sugre'") != std::string::npos);
  CHECK(unknown.status().details().at(0).field == "params.sugre");

  auto wrong = engine.resolveParams("echo", Json{{"steps", "10,50"}}, nullptr);
  REQUIRE(!wrong.isOk());
  CHECK(wrong.status().code() == Code::kInvalidArgument);
  CHECK(wrong.status().message().find("plan param 'steps' must be a list") != std::string::npos);

  CHECK(engine.reconcile("nope", Json::object()).status().code() == Code::kNotFound);
  CHECK(engine.resolveParams("nope", nullptr, nullptr).status().code() == Code::kNotFound);
}

// A fleet-sized snapshot: `n` instances as the controller describes them, every other one
// ready.
Json fleetSnapshot(int n) {
  Json instances = Json::array();
  for (int i = 0; i < n; ++i) {
    const bool ready = i % 2 == 0;
    instances.push_back({{"name", "web-" + std::to_string(i)},
                         {"deployment_id", "d1"},
                         {"state", ready ? "RUNNING" : "STARTING"},
                         {"healthy", ready},
                         {"node", "node-" + std::to_string(i)},
                         {"update_domain", "ud-" + std::to_string(i % 20)},
                         {"ready_since", ready ? "2026-03-03T09:00:00Z" : ""},
                         {"coordinates", {{"web", {{"image", "nginx:1"}}}}},
                         {"operation", ready ? Json(nullptr) : Json{{"id", i}, {"type", "CREATE"}, {"state", "RUNNING"}}},
                         {"last_operation", {{"id", i}, {"type", "CREATE"}, {"state", "SUCCEEDED"}, {"intent", "d1"}}}});
  }
  return {{"deployment", {{"id", "d1"}, {"count", n}}}, {"instances", std::move(instances)}};
}

TEST_CASE("lua: strategy errors, timeouts and memory bombs are errors naming the script") {
  LuaLimits limits;
  limits.deadline = 20ms;
  limits.memory_bytes = 8u << 20;
  FixedScripts scripts;
  scripts.publish({
      {"broken", strategy("broken", "    local missing = nil\n    return missing.field")},
      {"loop", strategy("loop", "    while true do end")},
      {"bomb", strategy("bomb", "    local t = {}\n    for i = 1, 1e9 do t[i] = {i} end")},
      {"fine", strategy("fine", "    return { create(r.count) }")},
  });
  const FakeClock clock = testClock();
  StrategyEngine engine(scripts, clock, limits);
  // The bomb runs under a deadline it cannot reach, so the memory cap, not the speed of
  // the machine, stops it.
  LuaLimits no_hurry = limits;
  no_hurry.deadline = 10s;
  StrategyEngine patient(scripts, clock, no_hurry);

  auto broken = engine.reconcile("broken", Json::object());
  CHECK(broken.status().code() == Code::kUnprocessable);
  CHECK(broken.status().message().find("scripts/rollout/broken.lua:6:") != std::string::npos);

  auto loop = engine.reconcile("loop", Json::object());
  CHECK(loop.status().code() == Code::kDeadlineExceeded);
  CHECK(loop.status().message().find("scripts/rollout/loop.lua") != std::string::npos);

  auto bomb = patient.reconcile("bomb", Json::object());
  CHECK(bomb.status().code() == Code::kResourceExhausted);
  CHECK(bomb.status().message().find("scripts/rollout/bomb.lua") != std::string::npos);

  for (StrategyEngine* e : {&engine, &patient}) {
    for (int i = 0; i < 3; ++i) {  // the state is cleaned and keeps serving
      auto fine = e->reconcile("fine", Json{{"deployment", {{"count", 2}}}});
      REQUIRE(fine.isOk());
      REQUIRE(fine->actions.size() == 1);
      CHECK(fine->actions[0].kind == StrategyAction::Kind::kCreate);
      CHECK(fine->actions[0].count == 2);
    }
  }
}

TEST_CASE("lua: reconcile must return a list of valid actions") {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"return 42", "not a list of actions"},
      {"return create(1)", "a single action; return a list of actions"},
      {"return { { action = 'explode' } }", "actions[1] has an unknown action 'explode'"},
      {"return { function() end }", "cannot convert a function"},
      {"return { update('ghost') }", "update names 'ghost', which is not an instance of this rollout"},
      {"return { update('web-a'), delete({ r.instances[1] }) }", "instance 'web-a' is named by more than one action"},
      {"return { complete(), fail('no') }", "at most one of complete, fail and rollback"},
      {"r.state.f = print\n return {}", "r.state cannot be saved"},
      {"r.state[1] = 'x'\n return {}", "r.state cannot be saved: it must hold named fields"},
  };
  for (const auto& entry : bad) {
    const std::string& body = entry.first;
    const std::string& message = entry.second;
    CAPTURE(body);
    FixedScripts scripts;
    scripts.publish({{"bad", strategy("bad", body)}});
    const FakeClock clock = testClock();
    StrategyEngine engine(scripts, clock);
    auto result = engine.reconcile("bad", Json{{"instances", {readyInstance("web-a", "new")}}});
    REQUIRE(!result.isOk());
    CHECK(result.status().code() == Code::kUnprocessable);
    CHECK(result.status().message().find("scripts/rollout/bad.lua") != std::string::npos);
    CHECK(result.status().message().find(message) != std::string::npos);
  }
}

TEST_CASE("lua: strategy verbs check their arguments and name themselves") {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"create(-1)", "create: count must be a non-negative integer"},
      {"create(1.5)", "create: count must be a non-negative integer"},
      {"create('2')", "create: count must be a non-negative integer"},
      {"update(5)", "update: expects an instance, a list of instances or their names"},
      {"update({ 'a', 7 })", "update: item 2 is neither an instance nor an instance name"},
      {"delete(-2)", "delete: count must be a non-negative integer"},
      {"relocate({ 'a', 'b' })", "relocate: expects one instance (or its name)"},
      {"pause()", "pause: reason must be a non-empty string"},
      {"pause('x', 'soon')", "pause: until must be a time in unix seconds"},
      {"route({ new = 'most' })", "route: weights must be a table of non-negative numbers"},
      {"fail('')", "fail: reason must be a non-empty string"},
      {"rollback()", "rollback: reason must be a non-empty string"},
      {"complete(3)", "complete: message must be a string"},
  };
  for (const auto& entry : bad) {
    const std::string& call = entry.first;
    const std::string& message = entry.second;
    CAPTURE(call);
    FixedScripts scripts;
    scripts.publish({{"verbs", strategy("verbs", "    return { " + call + " }")}});
    const FakeClock clock = testClock();
    StrategyEngine engine(scripts, clock);
    auto result = engine.reconcile("verbs", Json::object());
    REQUIRE(!result.isOk());
    CHECK(result.status().message().find(message) != std::string::npos);
    CHECK(result.status().message().find("scripts/rollout/verbs.lua:5:") != std::string::npos);
  }
}

TEST_CASE("lua: every verb's action reaches the host in StrategyAction's shape") {
  FixedScripts scripts;
  scripts.publish({{"all", strategy("all", R"(
    return {
      create(2), update(r.old), delete({ 'web-n' }), relocate(r.new[2]), delete(0),
      update({}), pause('waiting for promotion', r.now + 60), route({ new = 10, old = 90 }),
    })")},
                   {"done", strategy("done", "    return { complete() }")},
                   {"more", strategy("more", "    return { delete(3), rollback('analysis failed') }")}});
  const FakeClock clock = testClock();
  StrategyEngine engine(scripts, clock);
  const Json snapshot = {{"now_unix", 1790000000.25},
                         {"instances",
                          {readyInstance("web-o1", "old"), readyInstance("web-n", "new"),
                           readyInstance("web-o2", "old"), readyInstance("web-m", "new")}}};
  auto result = engine.reconcile("all", snapshot);
  REQUIRE(result.isOk());
  Json actions = Json::array();
  for (const StrategyAction& action : result->actions) actions.push_back(action);
  CHECK(actions == Json::parse(R"([
    {"action": "create", "count": 2},
    {"action": "update", "instances": ["web-o1", "web-o2"]},
    {"action": "delete", "instances": ["web-n"]},
    {"action": "relocate", "instances": ["web-m"]},
    {"action": "pause", "reason": "waiting for promotion", "until_unix": 1790000060.25},
    {"action": "route", "weights": {"new": 10, "old": 90}}
  ])"));
  CHECK(describeActions(result->actions) ==
        "create(2), update(web-o1, web-o2), delete(web-n), relocate(web-m), "
        "pause(\"waiting for promotion\", until 1790000060.25), route({\"new\":10,\"old\":90})");
  CHECK(result->script_sha256 == scripts.current()->files.at("scripts/rollout/all.lua").sha256);
  CHECK(result->duration_us >= 0);

  auto done = engine.reconcile("done", snapshot);
  REQUIRE(done.isOk());
  CHECK(Json(done->actions.at(0)) == Json{{"action", "complete"}});
  CHECK(std::string(actionKindName(done->actions.at(0).kind)) == "complete");
  auto more = engine.reconcile("more", snapshot);
  REQUIRE(more.isOk());
  CHECK(Json(more->actions.at(0)) == Json{{"action", "delete"}, {"count", 3}});
  CHECK(Json(more->actions.at(1)) == Json{{"action", "rollback"}, {"reason", "analysis failed"}});
}

TEST_CASE("lua: a rollout snapshot's time beyond the years tide holds is refused, not overflowed") {
  FixedScripts scripts;
  scripts.publish({{"done", strategy("done", "    return { complete() }")}});
  const FakeClock clock = testClock();
  StrategyEngine engine(scripts, clock);
  for (const Json& snapshot : {Json{{"now_unix", 1e300}}, Json{{"now", "4026-03-03T10:00:00Z"}}}) {
    CAPTURE(snapshot.dump());
    auto refused = engine.reconcile("done", snapshot);
    REQUIRE(!refused.isOk());
    CHECK(refused.status().code() == Code::kInvalidArgument);
    CHECK(refused.status().message().find("rollout snapshot: now") != std::string::npos);
  }
}

TEST_CASE("lua: r describes the rollout and is read-only except r.state, which persists") {
  FixedScripts scripts;
  scripts.publish({{"look", strategy("look", R"(
    r.state.passes = (r.state.passes or 0) + 1
    r.state.view = {
      count = r.count, counts = r.counts, now = r.now, new = #r.new, old = #r.old,
      same_table = r.new[1] == r.instances[2], previous = r.previous == nil,
      signals = r.signals, ready = r.new[1].ready, version = r.instances[3].version,
      plan = r.plan.name, deployment = r.deployment.id, coordinates = r.deployment.coordinates,
    }
    tide.log.info('looked', { passes = r.state.passes })
    return {})")},
                   {"write", strategy("write", "    r.count = 5")},
                   {"deep", strategy("deep", "    r.new[1].name = 'x'")},
                   {"replace", strategy("replace", "    r.state = {}")}});
  const FakeClock clock = testClock();
  StrategyEngine engine(scripts, clock);
  Json busy = readyInstance("web-b", "new");
  busy["operation"] = {{"id", 5}, {"type", "CREATE"}, {"state", "RUNNING"}};
  Json snapshot = {
      {"deployment", {{"id", "deployment-2"}, {"count", 3}, {"coordinates", {{"web", {{"image", "v2"}}}}}}},
      {"previous", nullptr},
      {"plan", {{"name", "web"}}},
      {"instances",
       {readyInstance("web-o", "old"),
        readyInstance("web-a", "new"),
        {{"name", "web-c"}, {"deployment_id", "deployment-2"}},
        busy}},
      {"now", "2026-03-03T10:00:30Z"},
      {"signals", {{"promote", true}}},
  };
  auto first = engine.reconcile("look", snapshot);
  REQUIRE(first.isOk());
  const Json& view = first->state["view"];
  CHECK(view["count"] == 3);
  CHECK(view["counts"] ==
        Json{{"total", 4}, {"new", 3}, {"old", 1}, {"ready", 2}, {"new_ready", 1}, {"old_ready", 1}, {"in_flight", 1}});
  CHECK(view["now"] == 1772532030);
  CHECK(view["new"] == 3);
  CHECK(view["old"] == 1);
  CHECK(view["same_table"] == true);
  CHECK(view["previous"] == true);
  CHECK(view["signals"] ==
        Json{{"promote", true}, {"promote_full", false}, {"abort", false}, {"pause", false}, {"resume", false}});
  CHECK(view["ready"] == true);
  CHECK(view["version"] == "new");  // derived from deployment_id
  CHECK(view["plan"] == "web");
  CHECK(view["deployment"] == "deployment-2");
  CHECK(view["coordinates"] == Json{{"web", {{"image", "v2"}}}});
  REQUIRE(first->logs.size() == 1);
  CHECK(first->logs[0].message == "looked");
  CHECK(first->logs[0].where == "scripts/rollout/look.lua:13");
  CHECK(first->logs[0].fields == Json{{"passes", 1}});

  snapshot["state"] = first->state;  // the host persists it and hands it back
  auto second = engine.reconcile("look", snapshot);
  REQUIRE(second.isOk());
  CHECK(second->state["passes"] == 2);

  for (const char* name : {"write", "deep", "replace"}) {
    CAPTURE(name);
    auto refused = engine.reconcile(name, snapshot);
    REQUIRE(!refused.isOk());
    CHECK(refused.status().code() == Code::kUnprocessable);
    CHECK(refused.status().message().find("attempt to modify read-only field") != std::string::npos);
  }
}

TEST_CASE("lua: the strategy engine picks up a new version of a script") {
  FixedScripts scripts;
  scripts.publish({{"grow", strategy("grow", "    return { create(1) }")}});
  const FakeClock clock = testClock();
  StrategyEngine engine(scripts, clock);
  auto v1 = engine.reconcile("grow", Json::object());
  REQUIRE(v1.isOk());
  CHECK(v1->actions.at(0).count == 1);
  CHECK(engine.loadedVersion() == 1);

  scripts.publish({{"grow", strategy("grow", "    return { create(2) }")}});
  auto v2 = engine.reconcile("grow", Json::object());
  REQUIRE(v2.isOk());
  CHECK(v2->actions.at(0).count == 2);
  CHECK(engine.loadedVersion() == 2);
  CHECK(v2->script_sha256 != v1->script_sha256);
}

TEST_CASE("lua: the registry loads strategies, runs their tests and keeps the old version on failure") {
  RegistryFixture fx;
  const std::filesystem::path file = fx.dir.path() / "scripts" / "rollout" / "grow.lua";
  const std::string passing = R"(return {
  name = "grow",
  reconcile = function(r) return { create(r.count - #r.new) } end,
  tests = { { name = "creates what is missing", r = { count = 2, new = { { name = "a" } } }, expect = { create(1) } } },
})";
  writeFile(file, passing);
  ReloadSummary summary = fx.registry->reloadAll();
  CHECK(summary.loaded == 1);
  CHECK(summary.failed == 0);
  StrategyEngine engine(*fx.registry, fx.clock);
  auto result = engine.reconcile("grow", Json{{"deployment", {{"count", 3}}}});
  REQUIRE(result.isOk());
  CHECK(result->actions.at(0).count == 3);

  std::string failing = passing;
  failing.replace(failing.find("r.count - #r.new"), 16, "r.count");
  writeFile(file, failing);
  summary = fx.registry->reloadAll();
  CHECK(summary.failed == 1);
  REQUIRE(summary.errors.size() == 1);
  CHECK(summary.errors[0].find("test 'creates what is missing' expected create(1), got create(2)") !=
        std::string::npos);

  writeFile(file, strategy("grow", "return {}", "{ x = { type = 'int' } }"));
  summary = fx.registry->reloadAll();
  CHECK(summary.failed == 1);
  REQUIRE(summary.errors.size() == 1);
  CHECK(summary.errors[0].find("params.x: unknown type 'int'") != std::string::npos);

  auto still = engine.reconcile("grow", Json{{"deployment", {{"count", 3}}}});
  REQUIRE(still.isOk());
  CHECK(still->actions.at(0).count == 3);  // the passing version still runs
}

TEST_CASE("lua: strategy test cases report expectations, checks, state and expected errors") {
  ScriptFile file;
  file.path = "scripts/rollout/cases.lua";
  file.kind = ScriptKind::kStrategy;
  file.name = "cases";
  file.text = R"(return {
  name = "cases",
  params = { n = 1 },
  reconcile = function(r)
    r.state.phase = "p" .. r.params.n
    if r.signals.abort then error("aborted") end
    return { create(r.params.n) }
  end,
  tests = {
    { name = "pass", expect = { create(1) }, expect_state = { phase = "p1" } },
    { name = "wrong actions", r = { params = { n = 2 } }, expect = { create(1) } },
    { name = "wrong state", expect = { create(1) }, expect_state = { phase = "p9" } },
    { name = "check passes", check = function(actions, state) assert(actions[1].count == 1) end },
    { name = "check fails", check = function(actions, state) return false, "no" end },
    { name = "expected error", r = { signals = { abort = true } }, expect_error = "aborted" },
    { name = "unexpected error", r = { signals = { abort = true } }, expect = {} },
    { name = "bad param", r = { params = { m = 1 } }, expect = {} },
  },
})";
  file.sha256 = sha256Hex(file.text);
  auto results = runStrategyFileTests(file, ScriptSet{}, LuaLimits{});
  REQUIRE(results.isOk());
  REQUIRE(results->size() == 8);
  const std::vector<bool> passed = {true, false, false, true, false, true, false, false};
  for (size_t i = 0; i < passed.size(); ++i) {
    CAPTURE((*results)[i].name);
    CAPTURE((*results)[i].actual);
    CHECK((*results)[i].passed == passed[i]);
  }
  CHECK((*results)[1].actual == "create(2)");
  CHECK((*results)[2].actual == "create(1) with state phase=\"p1\"");
  CHECK((*results)[2].expected == "create(1) with state {\"phase\":\"p9\"}");
  CHECK((*results)[4].actual == "create(1); check returned false: no");
  CHECK((*results)[6].actual.find("scripts/rollout/cases.lua:6: aborted") != std::string::npos);
  CHECK((*results)[7].actual.find("unknown deployment param 'm'") != std::string::npos);
}

TEST_CASE("lua: the shipped rolling strategy loads and passes its own tests") {
  ScriptSet libs;
  auto lib = readScriptFile(kSourceTree / "scripts" / "lib" / "rollout.lua", "scripts/lib/rollout.lua", ScriptKind::kLib);
  REQUIRE(lib.isOk());
  libs.files[lib->path] = *lib;
  auto rolling = readScriptFile(kSourceTree / "scripts" / "rollout" / "rolling.lua", "scripts/rollout/rolling.lua",
                                ScriptKind::kStrategy);
  REQUIRE(rolling.isOk());
  auto results = runStrategyFileTests(*rolling, libs, LuaLimits{});
  REQUIRE(results.isOk());
  CHECK(results->size() >= 15);
  for (const CaseResult& r : *results) {
    CAPTURE(r.name);
    CAPTURE(r.expected);
    CAPTURE(r.actual);
    CHECK(r.passed);
  }

  std::ostringstream out;
  PolicyToolOptions options;
  options.policies_dir = kSourceTree / "policies";
  options.scripts_dir = kSourceTree / "scripts";
  CHECK(testScriptFiles({}, out, options) == 0);
  CHECK(out.str().find("scripts/rollout/rolling.lua\n  PASS  the first deployment creates every "
                       "instance\n") != std::string::npos);
  CHECK(out.str().find("policies/business_hours.lua") != std::string::npos);
}

TEST_CASE("lua: the rolling strategy through the registry and the engine") {
  MemoryRecorder recorder;
  FakeClock clock = testClock();
  ScriptRegistryOptions options;
  options.policies_dir = kSourceTree / "policies";
  options.scripts_dir = kSourceTree / "scripts";
  ScriptRegistry registry(options, recorder, clock);
  const ReloadSummary summary = registry.reloadAll();
  for (const std::string& error : summary.errors) MESSAGE(error);
  REQUIRE(summary.failed == 0);
  StrategyEngine engine(registry, clock);

  CHECK(engine.resolveParams("rolling", nullptr, Json{{"max_surge", "25%"}}).isOk());
  auto refused = engine.resolveParams("rolling", Json{{"max_unavailable", "x"}}, nullptr);
  CHECK(refused.status().code() == Code::kInvalidArgument);

  Json snapshot = {{"deployment", {{"id", "deployment-2"}, {"count", 2}}},
                   {"instances", {readyInstance("web-a", "old"), readyInstance("web-b", "old")}}};
  auto result = engine.reconcile("rolling", snapshot);
  REQUIRE(result.isOk());
  CHECK(describeActions(result->actions) == "update(web-a)");
  CHECK(result->state["waiting_for"] == "update domain 'ud-1' to be replaced (0 of 2 instances run the new version)");
  CHECK(result->state["domain"] == "ud-1");
  CHECK(result->params == Json{{"max_surge", 0}, {"max_unavailable", 1}, {"progress_deadline_seconds", 600}});
}

TEST_CASE("lua: the host pushing a fleet-sized snapshot counts against neither the strategy's deadline nor its memory") {
  // 5,000 instances take the host far longer than 1 ms to push and far more than 4 MiB of
  // Lua memory; counted against the script, every call would fail and the rollout stall.
  LuaLimits limits;
  limits.deadline = 1ms;
  limits.memory_bytes = 4u << 20;
  FixedScripts scripts;
  scripts.publish({
      {"reader", strategy("reader", R"(    local ready = 0
    for _, inst in ipairs(r.instances) do
      if inst.ready then ready = ready + 1 end
    end
    return { pause(ready .. " ready") })")},
      {"loop", strategy("loop", "    while true do end")},
  });
  const FakeClock clock = testClock();
  StrategyEngine engine(scripts, clock, limits);
  const Json snapshot = fleetSnapshot(5000);

  auto read = engine.reconcile("reader", snapshot);
  REQUIRE_MESSAGE(read.isOk(), read.status().toString());
  REQUIRE(read->actions.size() == 1);
  CHECK(read->actions[0].reason == "2500 ready");
  // The time a script gets grows with its snapshot, but stays a deadline.
  auto loop = engine.reconcile("loop", snapshot);
  CHECK(loop.status().code() == Code::kDeadlineExceeded);
  CHECK(engine.reconcile("reader", snapshot).isOk());
}

TEST_CASE("lua: r.metric answers from the snapshot's metrics and records each query asked, once") {
  FixedScripts scripts;
  scripts.publish({{"ask", strategy("ask", R"lua(
    local a, why_a, pending_a = r.metric("prom", "up")
    local b = r.metric("prom", "up")
    local c, why_c = r.metric("prom", "rate(x[1m])", { range_seconds = 300, reduce = "avg" })
    local d, why_d, pending_d = r.metric("web", "/errors")
    r.state.seen = { a = a, b = b, why_c = why_c, why_d = why_d, pending_d = pending_d,
                     pending_a = pending_a == nil }
    return {})lua")},
                   {"bad", strategy("bad", R"lua(return { r.metric("prom", "up", { range = 5 }) })lua")}});
  const FakeClock clock = testClock();
  StrategyEngine engine(scripts, clock);
  Json snapshot = {{"deployment", {{"id", "deployment-2"}, {"count", 1}}},
                   {"metrics", {{"prom", {{"up", 1}, {"rate(x[1m]) [range=300 reduce=avg]", "prom: HTTP 503"}}}}}};
  auto result = engine.reconcile("ask", snapshot);
  REQUIRE_MESSAGE(result.isOk(), result.status().toString());
  CHECK(result->state["seen"] == Json{{"a", 1},
                                      {"b", 1},
                                      {"why_c", "prom: HTTP 503"},
                                      {"why_d", "waiting for the first answer from 'web'"},
                                      {"pending_d", true},
                                      {"pending_a", true}});
  REQUIRE(result->metric_queries.size() == 3);
  model::MetricQuery ranged;
  ranged.provider = "prom";
  ranged.query = "rate(x[1m])";
  ranged.range_seconds = 300;
  ranged.reduce = "avg";
  CHECK(result->metric_queries[0].key() == "rate(x[1m]) [range=300 reduce=avg]");
  CHECK(result->metric_queries[0] == ranged);
  CHECK(result->metric_queries[1].key() == "up");
  CHECK(result->metric_queries[2].provider == "web");

  auto bad = engine.reconcile("bad", snapshot);
  REQUIRE(!bad.isOk());
  CHECK(bad.status().message().find("metric: unknown option 'range'") != std::string::npos);
}

TEST_CASE("lua: a reconcile asks at most 64 distinct metric queries, so a loop cannot flood a metrics server") {
  FixedScripts scripts;
  scripts.publish({{"flood", strategy("flood", R"lua(
    for i = 1, 100 do r.metric("prom", "up{n=\"" .. i .. "\"}") end
    local again = select(2, r.metric("prom", "up{n=\"1\"}"))
    local _, beyond = r.metric("prom", "up{n=\"100\"}")
    r.state.seen = { again = again, beyond = beyond }
    return {})lua")}});
  const FakeClock clock = testClock();
  StrategyEngine engine(scripts, clock);
  auto result = engine.reconcile("flood", Json{{"deployment", {{"id", "deployment-2"}, {"count", 1}}}});
  REQUIRE_MESSAGE(result.isOk(), result.status().toString());
  CHECK(result->metric_queries.size() == 64);
  CHECK(result->state["seen"]["again"] == "waiting for the first answer from 'prom'");
  CHECK(result->state["seen"]["beyond"] == "more than 64 metric queries in one reconcile; this one is not asked");
}
