#include "host/lua/hook/hook_engine.h"
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "host/lua/hook/bindings_hook.h"
#include "tests/lua/lua_test_util.h"

using namespace tide;
using namespace tide::lua;
using namespace tide::lua::testing;

namespace {


// A registry over a temp dir whose scripts/hooks/ the test writes, and a HookEngine over it.
struct HookFixture {
  explicit HookFixture(LuaLimits limits = {}) : registry(limits) {
    std::filesystem::create_directories(hooksDir());
    options.limits = limits;
    options.output_dir = registry.dir.path() / "out";
    options.log = [this](const LogRecord& record) {
      std::lock_guard<std::mutex> lock(mu);
      logs.push_back(record);
    };
  }
  std::filesystem::path hooksDir() const { return registry.dir.path() / "scripts" / "hooks"; }

  // Writes scripts/hooks/<file> and reloads; the file must load.
  void hook(const std::string& file, const std::string& text) {
    writeFile(hooksDir() / file, text);
    const ReloadSummary summary = registry.registry->reloadAll();
    REQUIRE_MESSAGE(summary.failed == 0, (summary.errors.empty() ? "" : summary.errors.front()));
  }

  HookEngine& engine() {
    if (!engine_) engine_ = std::make_unique<HookEngine>(*registry.registry, registry.clock, options);
    return *engine_;
  }

  std::string output(const std::string& name) const {
    std::ifstream in(options.output_dir / name, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  RegistryFixture registry;
  HookEngineOptions options;
  std::mutex mu;
  std::vector<LogRecord> logs;

 private:
  std::unique_ptr<HookEngine> engine_;
};

// A hook named `name` whose operation.before handler has `body`.
std::string beforeHook(const std::string& name, const std::string& body) {
  return "return { name = \"" + name + "\", on = { [\"operation.before\"] = function(op, ctx)\n" + body + "\nend } }\n";
}

const Json kOp = {{"id", 7}, {"type", "UPDATE"}, {"meta_instance", "web-a1"}, {"plan", "web"}};

}  // namespace

TEST_CASE("hooks: a hook file with an unknown event or field is refused, naming the file and the field") {
  HookFixture f;
  writeFile(f.hooksDir() / "typo.lua", "return { name = 'typo', on = { ['operation.befor'] = function() end } }\n");
  writeFile(f.hooksDir() / "extra.lua", "return { name = 'extra', on = {}, when = 'always' }\n");
  writeFile(f.hooksDir() / "handler.lua", "return { name = 'handler', on = { route = 'yes' } }\n");
  writeFile(f.hooksDir() / "tests.lua", "return { name = 'tests', on = {}, tests = {} }\n");
  const ReloadSummary summary = f.registry.registry->reloadAll();
  CHECK(summary.failed == 4);
  auto errorFor = [&](const std::string& file) {
    for (const std::string& e : summary.errors) {
      if (e.find("scripts/hooks/" + file) != std::string::npos) return e;
    }
    return std::string("<no error for " + file + ">");
  };
  CHECK(errorFor("typo.lua").find("on[\"operation.befor\"] is an unknown event") != std::string::npos);
  CHECK(errorFor("extra.lua").find("unknown field 'when'") != std::string::npos);
  CHECK(errorFor("handler.lua").find("on[\"route\"] must be a function") != std::string::npos);
  CHECK(errorFor("tests.lua").find("hooks have no tests table") != std::string::npos);
  // Nothing of them runs, and a gate that cannot be read holds the operation.
  CHECK(f.engine().before(kOp).kind == HookVerdict::Kind::kVeto);
}

TEST_CASE("hooks: the first veto in name order wins over any delay") {
  HookFixture f;
  f.hook("a.lua", beforeHook("a-delay", "return { delay = 300, reason = 'batch window' }"));
  f.hook("b.lua", beforeHook("b-veto", "return { veto = 'night' }"));
  f.hook("c.lua", beforeHook("c-veto", "return { veto = 'later' }"));
  const HookVerdict verdict = f.engine().before(kOp);
  CHECK(verdict.kind == HookVerdict::Kind::kVeto);
  CHECK(verdict.hook == "b-veto");
  CHECK(verdict.reason == "night");
  CHECK(verdict.failures.empty());
}

TEST_CASE("hooks: without a veto the largest delay wins, with its reason") {
  HookFixture f;
  f.hook("a.lua", beforeHook("a", "return { delay = 30, reason = 'short' }"));
  f.hook("b.lua", beforeHook("b", "return { delay = 90.5, reason = 'long' }"));
  f.hook("c.lua", beforeHook("c", "return nil"));
  f.hook("d.lua", beforeHook("d", "return { delay = 0 }"));
  const HookVerdict verdict = f.engine().before(kOp);
  CHECK(verdict.kind == HookVerdict::Kind::kDelay);
  CHECK(verdict.hook == "b");
  CHECK(verdict.reason == "long");
  CHECK(verdict.delay_seconds == doctest::Approx(90.5));
}

TEST_CASE("hooks: the operation reaches operation.before read-only, with ctx.now in UTC") {
  HookFixture f;
  f.hook("a.lua", beforeHook("clock", R"(
    local t = ctx.now()
    local ok = pcall(function() op.type = "DELETE" end)
    return { veto = string.format("%s %s %04d-%02d-%02d %02d:%02d:%02d wday %d unix %d writable %s",
      op.type, op.meta_instance, t.year, t.month, t.day, t.hour, t.min, t.sec, t.wday, t.unix, tostring(ok)) })"));
  const HookVerdict verdict = f.engine().before(kOp);
  REQUIRE(verdict.kind == HookVerdict::Kind::kVeto);
  // 2026-03-03 is a Tuesday (wday 3).
  CHECK(verdict.reason == "UPDATE web-a1 2026-03-03 10:00:00 wday 3 unix 1772532000 writable false");
}

// Hooks whose operation.before errors, loops, exhausts memory or answers nonsense, by name;
// with `fail_open`, each declares it.
std::vector<std::pair<std::string, std::string>> failingBeforeHooks(bool fail_open) {
  const std::string open = fail_open ? "fail_open = true, " : "";
  auto hook = [&open](const std::string& name, const std::string& body, const std::string& more = "") {
    return "return { name = '" + name + "', " + open + "on = { ['operation.before'] = function(op, ctx)\n" + body +
           "\nend" + more + " } }\n";
  };
  return {
      {"a.lua", hook("a-error", "error('boom')", ", ['operation.after'] = function(op) error('after boom') end")},
      {"b.lua", hook("b-loop", "while true do end")},
      // Pieces of half the cap reach it at the second allocation, before the deadline hook
      // (every 1000 instructions) runs and right after the allocator's only look at the clock
      // (every MiB): memory, not the machine's speed, stops it.
      {"c.lua", hook("c-bomb", "local t = {}\n for i = 1, 1e9 do t[i] = string.rep('x', 4 * 1024 * 1024) .. i end")},
      {"d.lua", hook("d-nonsense", "return { veto = 42 }")},
      {"e.lua", hook("e-word", "return 'veto'")},
  };
}

LuaLimits smallMemory() {
  LuaLimits limits;
  limits.memory_bytes = size_t{8} << 20;
  return limits;
}

TEST_CASE("hooks: an operation.before that errors, loops, exhausts memory or answers nonsense vetoes") {
  const std::vector<std::pair<std::string, LuaErrorClass>> expected = {
      {"boom", LuaErrorClass::kRuntime},
      {"", LuaErrorClass::kTimeout},
      {"", LuaErrorClass::kMemory},
      {"veto must be a non-empty string", LuaErrorClass::kRuntime},
      {"scripts/hooks/e.lua", LuaErrorClass::kRuntime},
  };
  const auto hooks = failingBeforeHooks(false);
  for (size_t i = 0; i < hooks.size(); ++i) {
    const std::string& file = hooks[i].first;
    CAPTURE(file);
    HookFixture f(smallMemory());
    f.hook(file, hooks[i].second);
    f.hook("z.lua", beforeHook("z-later", "return { delay = 5 }"));
    const HookVerdict verdict = f.engine().before(kOp);
    CHECK(verdict.kind == HookVerdict::Kind::kVeto);
    REQUIRE(verdict.failures.size() == 1);
    CHECK(verdict.hook == verdict.failures[0].hook);
    CHECK(verdict.failures[0].error_class == expected[i].second);
    CHECK_FALSE(verdict.failures[0].failed_open);
    CHECK(verdict.failures[0].error.find(expected[i].first) != std::string::npos);
    CHECK(verdict.reason.rfind("operation.before failed: ", 0) == 0);
    CHECK(verdict.reason.find(verdict.failures[0].error.substr(0, 200)) != std::string::npos);
  }
}

TEST_CASE("hooks: a hook declaring fail_open = true that fails is reported and the other hooks decide") {
  // f-fine's emit_file syncs to disk, which on a busy machine can take longer than the
  // default 50 ms: a deadline the looping hook reaches and a disk sync does not.
  LuaLimits limits = smallMemory();
  limits.deadline = std::chrono::milliseconds(1000);
  HookFixture f(limits);
  const std::string marker = "ctx.emit_file('seen-' .. op.id, 'x')";
  for (const auto& [file, text] : failingBeforeHooks(true)) f.hook(file, text);
  f.hook("f.lua", "return { name = 'f-fine', on = { ['operation.before'] = function(op, ctx) " + marker +
                      " return { delay = 5 } end, ['operation.after'] = function(op, ctx) " + marker + " end } }\n");

  const HookVerdict verdict = f.engine().before(kOp);
  CHECK(verdict.kind == HookVerdict::Kind::kDelay);  // the only hook that said something sensible
  CHECK(verdict.hook == "f-fine");
  REQUIRE(verdict.failures.size() == 5);
  for (const HookFailure& failure : verdict.failures) CHECK(failure.failed_open);
  CHECK(verdict.failures[0].hook == "a-error");
  CHECK(verdict.failures[0].error.find("boom") != std::string::npos);
  CHECK(verdict.failures[0].error_class == LuaErrorClass::kRuntime);
  CHECK(verdict.failures[1].hook == "b-loop");
  CHECK(verdict.failures[1].error_class == LuaErrorClass::kTimeout);
  CHECK(verdict.failures[2].hook == "c-bomb");
  CHECK(verdict.failures[2].error_class == LuaErrorClass::kMemory);
  CHECK(verdict.failures[3].hook == "d-nonsense");
  CHECK(verdict.failures[3].error.find("veto must be a non-empty string") != std::string::npos);
  CHECK(verdict.failures[4].hook == "e-word");
  CHECK(verdict.failures[4].error.find("scripts/hooks/e.lua") != std::string::npos);
  CHECK(f.output("seen-7") == "x");

  // The state keeps serving after the timeout and the memory error.
  std::filesystem::remove(f.options.output_dir / "seen-7");
  const std::vector<HookFailure> failures = f.engine().notify("operation.after", kOp);
  REQUIRE(failures.size() == 1);
  CHECK(failures[0].hook == "a-error");
  CHECK(failures[0].event == "operation.after");
  CHECK(f.output("seen-7") == "x");
}

TEST_CASE("hooks: fail_open must be a boolean, and a hook file refused with no good version vetoes") {
  HookFixture f;
  writeFile(f.hooksDir() / "maybe.lua", "return { name = 'maybe', fail_open = 'yes', on = {} }\n");
  const ReloadSummary summary = f.registry.registry->reloadAll();
  REQUIRE(summary.failed == 1);
  CHECK(summary.errors[0].find("fail_open must be true or false") != std::string::npos);

  const HookVerdict verdict = f.engine().before(kOp);
  CHECK(verdict.kind == HookVerdict::Kind::kVeto);
  REQUIRE(verdict.failures.size() == 1);
  CHECK(verdict.failures[0].error_class == LuaErrorClass::kLoad);
  CHECK_FALSE(verdict.failures[0].failed_open);
  CHECK(verdict.reason.find("scripts/hooks/maybe.lua") != std::string::npos);
  CHECK(verdict.reason.find("fail_open must be true or false") != std::string::npos);
  CHECK(f.engine().notify("route", Json::object()).empty());  // only operation.before is a gate

  f.hook("maybe.lua", "return { name = 'maybe', fail_open = true, on = {} }\n");
  CHECK(f.engine().before(kOp).kind == HookVerdict::Kind::kProceed);
}

TEST_CASE("hooks: ctx.emit_file writes atomically and refuses bad names and texts over 1 MiB") {
  // The write and its fsync count against the deadline, and a loaded disk may take longer
  // than a decision's 50 ms: this test is about what is written, not how fast.
  LuaLimits limits;
  limits.deadline = std::chrono::seconds(10);
  HookFixture f(limits);
  f.hook("emit.lua",
         "return { name = 'emit', on = { route = function(a, ctx) "
         "ctx.emit_file(a.name, a.text or string.rep('y', a.size)) end } }\n");
  HookEngine& engine = f.engine();

  CHECK(engine.notify("route", {{"name", "route-web.json"}, {"text", "first"}}).empty());
  CHECK(f.output("route-web.json") == "first");
  CHECK(engine.notify("route", {{"name", "route-web.json"}, {"text", "second"}}).empty());
  CHECK(f.output("route-web.json") == "second");
  CHECK(engine.notify("route", {{"name", "big"}, {"size", kMaxEmitFileBytes}}).empty());
  CHECK(std::filesystem::file_size(f.options.output_dir / "big") == kMaxEmitFileBytes);

  for (const std::string& name :
       std::vector<std::string>{"../escape", "a/b", "", ".", "..", "sp ace", std::string(101, 'n')}) {
    CAPTURE(name);
    const auto failures = engine.notify("route", {{"name", name}, {"text", "x"}});
    REQUIRE(failures.size() == 1);
    CHECK(failures[0].error.find("ctx.emit_file: the name must be") != std::string::npos);
  }
  const auto too_big = engine.notify("route", {{"name", "huge"}, {"size", kMaxEmitFileBytes + 1}});
  REQUIRE(too_big.size() == 1);
  CHECK(too_big[0].error.find("more than the limit") != std::string::npos);
  CHECK(!std::filesystem::exists(f.options.output_dir / "huge"));
  CHECK(!std::filesystem::exists(f.registry.dir.path() / "escape"));

  // Only the finished files are there: no temporary sibling is left behind.
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(f.options.output_dir)) {
    names.insert(entry.path().filename().string());
  }
  CHECK(names == std::set<std::string>{"big", "route-web.json"});
}

TEST_CASE("hooks: ctx.emit_file without an output directory is a failure") {
  HookFixture f;
  f.options.output_dir.clear();
  f.hook("emit.lua", "return { name = 'emit', on = { route = function(a, ctx) ctx.emit_file('x', 'y') end } }\n");
  const auto failures = f.engine().notify("route", Json::object());
  REQUIRE(failures.size() == 1);
  CHECK(failures[0].error.find("no hooks output directory") != std::string::npos);
}

TEST_CASE("hooks: a changed hook file takes effect on the next call") {
  HookFixture f;
  f.hook("gate.lua", beforeHook("gate", "return { veto = 'v1' }"));
  HookVerdict verdict = f.engine().before(kOp);
  CHECK(verdict.reason == "v1");
  const uint64_t first = f.engine().loadedVersion();

  f.hook("gate.lua", beforeHook("gate", "return { veto = 'v2' }"));
  CHECK(f.engine().before(kOp).reason == "v2");
  CHECK(f.engine().loadedVersion() > first);

  std::filesystem::remove(f.hooksDir() / "gate.lua");
  f.registry.registry->reloadAll();
  CHECK(f.engine().before(kOp).kind == HookVerdict::Kind::kProceed);
}

TEST_CASE("hooks: notify refuses events hooks are not told about") {
  HookFixture f;
  CHECK(f.engine().notify("operation.before", kOp).size() == 1);
  CHECK(f.engine().notify("deployment.created", kOp).size() == 1);
  CHECK(f.engine().notify("deployment.state", Json::object()).empty());
}

TEST_CASE("hooks: the shipped log hook logs every event with a compact summary") {
  HookFixture f;
  std::ifstream in(kSourceTree / "scripts" / "hooks" / "log.lua");
  std::ostringstream text;
  text << in.rdbuf();
  f.hook("log.lua", text.str());
  HookEngine& engine = f.engine();
  CHECK(engine.before(kOp).kind == HookVerdict::Kind::kProceed);
  CHECK(engine
            .notify("deployment.state",
                    {{"plan", "web"}, {"deployment", "v2"}, {"state", "COMPLETED"}, {"from", "IN_PROGRESS"}})
            .empty());
  CHECK(engine
            .notify("instance.state", {{"id", 3},
                                       {"meta_instance", "web-a1"},
                                       {"node", "worker-1"},
                                       {"state", "RUNNING"},
                                       {"from", "STARTING"}})
            .empty());
  CHECK(engine.notify("route", {{"plan", "web"}, {"deployment", "v2"}, {"new", 10}, {"old", 90}}).empty());
  std::lock_guard<std::mutex> lock(f.mu);
  REQUIRE(f.logs.size() == 4);
  CHECK(f.logs[0].message == "operation.before");
  CHECK(f.logs[0].fields == Json{{"id", 7}, {"type", "UPDATE"}, {"instance", "web-a1"}, {"plan", "web"}});
  CHECK(f.logs[1].message == "deployment.state");
  CHECK(f.logs[1].fields == Json{{"plan", "web"}, {"deployment", "v2"}, {"to", "COMPLETED"}, {"from", "IN_PROGRESS"}});
  CHECK(f.logs[2].fields ==
        Json{{"id", 3}, {"instance", "web-a1"}, {"node", "worker-1"}, {"to", "RUNNING"}, {"from", "STARTING"}});
  CHECK(f.logs[3].fields == Json{{"plan", "web"}, {"deployment", "v2"}, {"new", 10}, {"old", 90}});
  CHECK(f.logs[3].where.find("log.lua") != std::string::npos);
}

TEST_CASE("hooks: the shipped route_file hook writes route-<plan>.json") {
  // emit_file's fsync counts against the deadline: this is about what is written (as below).
  LuaLimits limits;
  limits.deadline = std::chrono::seconds(10);
  HookFixture f(limits);
  std::ifstream in(kSourceTree / "scripts" / "hooks" / "route_file.lua");
  std::ostringstream text;
  text << in.rdbuf();
  f.hook("route_file.lua", text.str());
  CHECK(f.engine()
            .notify("route", {{"plan", "web"}, {"deployment", "v2"}, {"previous", "v1"}, {"new", 10}, {"old", 90}})
            .empty());
  CHECK(f.output("route-web.json") == "{\"deployment\":\"v2\",\"previous\":\"v1\",\"new\":10,\"old\":90}\n");
  CHECK(f.engine()
            .notify("route",
                    {{"plan", "web"}, {"deployment", "a\"b"}, {"previous", nullptr}, {"new", 2.5}, {"old", 97.5}})
            .empty());
  const Json written = Json::parse(f.output("route-web.json"));
  CHECK(written == Json{{"deployment", "a\"b"}, {"previous", nullptr}, {"new", 2.5}, {"old", 97.5}});
}
