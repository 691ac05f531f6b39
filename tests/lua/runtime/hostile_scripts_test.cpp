// The hostile corpus (tests/lua/hostile/*.lua): each file returns an `attack(ctx)` function;
// this driver runs it as a policy's decide, a strategy's reconcile, a hook's handler, at
// a script's top level and from a policy's tests table, and asserts that every run ends
// within twice the deadline with the typed error the file's first line announces
// ("-- expect: <class>: <text>"), that the process is still here to check, and that no
// policy approves.

#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>

#include "host/core/sha256.h"
#include "host/lua/hook/hook_engine.h"
#include "host/lua/policy/bindings_policy.h"
#include "host/lua/policy/policy_engine.h"
#include "host/lua/registry/script_tests.h"
#include "host/lua/strategy/bindings_strategy.h"
#include "host/lua/strategy/strategy_interpreter.h"
#include "host/lua/strategy/strategy_tests.h"
#include "tests/lua/lua_test_util.h"

using namespace tide;
using namespace tide::lua;
using namespace tide::lua::testing;
using namespace std::chrono_literals;

namespace {

const std::filesystem::path kCorpus = std::filesystem::path(TIDE_SOURCE_DIR) / "tests" / "lua" / "hostile";

// Generous, for a loaded machine: what is asserted is a ratio to it.
LuaLimits hostileLimits() {
  LuaLimits limits;
  limits.deadline = 200ms;
  limits.memory_bytes = size_t{16} << 20;
  return limits;
}

// The ratio allowed between a run's duration and the deadline.
constexpr double kMaxDeadlineRatio = 2.0;

struct Hostile {
  std::string file;
  std::string text;
  std::regex error_class;  // "timeout", "(timeout|memory)", ...
  std::string message;     // a part of the error's message, or ""
};

std::vector<Hostile> corpus() {
  std::vector<Hostile> out;
  for (const auto& entry : std::filesystem::directory_iterator(kCorpus)) {
    if (entry.path().extension() != ".lua") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    const std::string body = text.str();
    std::smatch m;
    const std::string first_line = body.substr(0, body.find('\n'));
    REQUIRE_MESSAGE(std::regex_match(first_line, m, std::regex(R"(-- expect: (\S+)(?:: (.*))?)")),
                    (entry.path().filename().string() + " must begin with \"-- expect: <class>[: <text>]\""));
    out.push_back({entry.path().filename().string(), body, std::regex(m[1].str()), m[2].str()});
  }
  std::sort(out.begin(), out.end(), [](const Hostile& a, const Hostile& b) { return a.file < b.file; });
  REQUIRE(out.size() >= 15);
  return out;
}

// A script file named "hostile" of `kind` at `path`: the attack as a local function, then
// `rest`, which calls it.
ScriptFile hostileScript(const Hostile& hostile, ScriptKind kind, const std::string& path, const std::string& rest) {
  ScriptFile file;
  file.path = path;
  file.kind = kind;
  file.name = "hostile";
  file.level = kind == ScriptKind::kPolicy ? "hard" : "";
  file.text = "local attack = (function()\n" + hostile.text + "\nend)()\n" + rest;
  file.sha256 = sha256Hex(file.text);
  return file;
}


std::shared_ptr<ScriptSet> setOf(const ScriptFile& file) {
  auto set = std::make_shared<ScriptSet>();
  set->version = 1;
  set->files[file.path] = file;
  return set;
}

class StaticScripts final : public ScriptSetProvider {
 public:
  explicit StaticScripts(std::shared_ptr<const ScriptSet> set) : set_(std::move(set)) {}
  std::shared_ptr<const ScriptSet> current() const override { return set_; }

 private:
  std::shared_ptr<const ScriptSet> set_;
};

double ratio(std::chrono::nanoseconds took, const LuaLimits& limits) {
  return std::chrono::duration<double>(took).count() / std::chrono::duration<double>(limits.deadline).count();
}

// How long a run took on this thread's CPU, which the deadline counts (so a loaded machine
// does not stretch it), as a multiple of the deadline; and that its wall time stayed within
// the wall limit that ends a call whatever happens (twice over: a thread starved of the CPU
// reaches the limit first and is still starved while it unwinds).
class Stopwatch {
 public:
  double cpuRatio(const LuaLimits& limits, std::chrono::milliseconds wall_budget = {}) const {
    const auto wall = std::chrono::steady_clock::now() - wall_started_;
    CHECK(wall < 2 * wallLimitOf(limits.deadline) + wall_budget);
    return ratio(threadCpuTime() - cpu_started_, limits);
  }

 private:
  std::chrono::nanoseconds cpu_started_ = threadCpuTime();
  std::chrono::steady_clock::time_point wall_started_ = std::chrono::steady_clock::now();
};

void checkError(const Hostile& hostile, const char* error_class, const std::string& message) {
  INFO("error class: " << error_class << ", message: " << message);
  CHECK(std::regex_match(std::string(error_class), hostile.error_class));
  CHECK(message.find(hostile.message) != std::string::npos);
}

const char* classOfStatus(const Status& status) {
  switch (status.code()) {
    case Code::kDeadlineExceeded: return "timeout";
    case Code::kResourceExhausted: return "memory";
    default: return "runtime";
  }
}

const Json kHostileOp = {{"type", "CREATE"}, {"meta_instance", "web-1"}, {"plan", {{"name", "web"}, {"namespace", "prod"}}}};

}  // namespace

TEST_CASE("hostile scripts: as a policy, each ends within twice the deadline with a typed error and never approves") {
  const LuaLimits limits = hostileLimits();
  for (const Hostile& hostile : corpus()) {
    CAPTURE(hostile.file);
    const ScriptFile policy = hostileScript(hostile, ScriptKind::kPolicy, "policies/hostile.lua",
                                            "return { name = \"hostile\", decide = function(op, ctx) attack(ctx) "
                                            "return approve(\"escaped\") end }\n");
    StaticScripts scripts(setOf(policy));
    FakeClock clock = testClock();
    PolicyEngineOptions options;
    options.limits = limits;
    PolicyEngine engine(scripts, clock, options);
    SnapshotDataSource data(Json::object(), clock);
    const Stopwatch stopwatch;
    const Evaluation evaluation = engine.evaluate(kHostileOp, data);
    const double took = stopwatch.cpuRatio(limits);
    CHECK(evaluation.outcome != Outcome::kApproved);
    REQUIRE(evaluation.decisions.size() == 1);
    const model::Decision& decision = evaluation.decisions[0].record;
    CHECK(decision.verdict == "manual");
    const std::string reason = decision.reasons.empty() ? "" : decision.reasons[0].get<std::string>();
    checkError(hostile, decision.error_class.c_str(), reason);
    MESSAGE(hostile.file << " as a policy: " << took << " x the deadline, " << decision.error_class);
    CHECK(took < kMaxDeadlineRatio);

    // With deny as the default, the failing policy still does not approve.
    options.default_outcome = Outcome::kRejected;
    PolicyEngine denying(scripts, clock, options);
    CHECK(denying.evaluate(kHostileOp, data).outcome != Outcome::kApproved);
  }
}

TEST_CASE("hostile scripts: as a strategy, each reconcile ends within twice the deadline with a typed error") {
  const LuaLimits limits = hostileLimits();
  for (const Hostile& hostile : corpus()) {
    CAPTURE(hostile.file);
    const ScriptFile strategy = hostileScript(hostile, ScriptKind::kStrategy, "scripts/rollout/hostile.lua",
                                              "return { name = \"hostile\", reconcile = function(r) attack(nil) "
                                              "return { complete() } end }\n");
    FakeClock clock = testClock();
    auto interpreter = StrategyInterpreter::create(setOf(strategy), limits, clock);
    REQUIRE(interpreter.isOk());
    auto snapshot = fixtureSnapshot(Json{{"count", 1}});
    REQUIRE(snapshot.isOk());
    const Stopwatch stopwatch;
    auto result = (*interpreter)->reconcile(strategy, *snapshot);
    const double took = stopwatch.cpuRatio(limits);
    REQUIRE_FALSE(result.isOk());
    checkError(hostile, classOfStatus(result.status()), result.status().message());
    MESSAGE(hostile.file << " as a strategy: " << took << " x the deadline");
    CHECK(took < kMaxDeadlineRatio);
  }
}

TEST_CASE("hostile scripts: as a hook, each handler ends within twice the deadline with a typed failure") {
  const LuaLimits limits = hostileLimits();
  TempDir out;
  for (const Hostile& hostile : corpus()) {
    CAPTURE(hostile.file);
    const ScriptFile hook = hostileScript(hostile, ScriptKind::kHook, "scripts/hooks/hostile.lua",
                                          "return { name = \"hostile\", on = { [\"operation.before\"] = "
                                          "function(op, ctx) attack(ctx) return { veto = \"escaped\" } end } }\n");
    StaticScripts scripts(setOf(hook));
    FakeClock clock = testClock();
    HookEngineOptions options;
    options.limits = limits;
    options.output_dir = out.path();
    HookEngine engine(scripts, clock, options);
    // Builds the state (an event the hook does not handle), so that only the handler is timed.
    REQUIRE(engine.notify("route", Json::object()).empty());
    const Stopwatch stopwatch;
    const HookVerdict verdict = engine.before(Json{{"id", 1}, {"type", "CREATE"}});
    const double took = stopwatch.cpuRatio(limits);
    // Held by its failure (fail closed), never by the veto it would have returned.
    CHECK(verdict.kind == HookVerdict::Kind::kVeto);
    CHECK(verdict.reason.rfind("operation.before failed: ", 0) == 0);
    REQUIRE(verdict.failures.size() == 1);
    checkError(hostile, errorClassName(verdict.failures[0].error_class), verdict.failures[0].error);
    MESSAGE(hostile.file << " as a hook: " << took << " x the deadline");
    CHECK(took < kMaxDeadlineRatio);
  }
}

TEST_CASE("hostile scripts: at top level, each fails to load within twice the deadline") {
  const LuaLimits limits = hostileLimits();
  for (const Hostile& hostile : corpus()) {
    CAPTURE(hostile.file);
    const ScriptFile policy = hostileScript(hostile, ScriptKind::kPolicy, "policies/hostile.lua",
                                            "attack(nil)\nreturn { name = \"hostile\", decide = function() "
                                            "return approve(\"escaped\") end }\n");
    LuaStateOptions options;
    options.limits = limits;
    auto state = newState(options);
    REQUIRE(state);
    REQUIRE(prepareScriptState(*state, nullptr, {policyVerbs(), strategyVerbs()}).ok());
    LoadedScript loaded;
    const Stopwatch stopwatch;
    const LuaError e = loadScript(*state, policy, &loaded);
    const double took = stopwatch.cpuRatio(limits);
    checkError(hostile, errorClassName(e.error_class), e.message);
    MESSAGE(hostile.file << " at top level: " << took << " x the deadline");
    CHECK(took < kMaxDeadlineRatio);
  }
}

TEST_CASE("hostile scripts: a tests table of many hostile cases stops within its time budget") {
  LuaLimits limits = hostileLimits();
  limits.deadline = 20ms;  // a budget of 100 deadlines: 2 s
  const Hostile spin{"spin", "return function() while true do pcall(function() while true do end end) end end",
                     std::regex("timeout"), ""};
  std::string cases;
  for (int i = 0; i < 200; ++i) cases += "{ name = 'spin " + std::to_string(i) + "', expect = 'approve' },\n";
  const ScriptFile policy =
      hostileScript(spin, ScriptKind::kPolicy, "policies/spin.lua",
                    "return { name = 'hostile', decide = function() attack() end,\n tests = {\n" + cases + "} }\n");
  const Stopwatch stopwatch;
  auto results = runScriptTests(policy, ScriptSet{}, limits);
  const double took = stopwatch.cpuRatio(limits, testRunBudget(limits));
  REQUIRE(results.isOk());
  REQUIRE_FALSE(results->empty());
  CHECK_FALSE(results->front().passed);
  CHECK(results->back().actual.find("not run") != std::string::npos);
  MESSAGE("200 spinning test cases: " << took << " x the deadline");
  CHECK(took < ratio(testRunBudget(limits), limits) + kMaxDeadlineRatio);
}
