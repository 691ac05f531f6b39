#include <doctest/doctest.h>

#include <stdexcept>

#include "host/lua/runtime/guard.h"
#include "tests/lua/lua_test_util.h"

using namespace tide::lua;
using namespace tide::lua::testing;
using namespace std::chrono_literals;

namespace {

LuaStateOptions shortDeadline() {
  LuaStateOptions options;
  options.limits.deadline = 20ms;
  return options;
}

}  // namespace

TEST_CASE("lua: a busy loop ends with a timeout error naming the script") {
  auto state = newState(shortDeadline());
  REQUIRE(state);
  ChunkResult r = runChunk(*state, "while true do end", "policies/spin.lua");
  CHECK(r.error.error_class == LuaErrorClass::kTimeout);
  CHECK(r.error.message.find("policies/spin.lua:1:") != std::string::npos);
  CHECK(r.error.message.find("deadline of 20 ms exceeded") != std::string::npos);
}

TEST_CASE("lua: pcall cannot swallow a timeout because the deadline is sticky") {
  auto state = newState(shortDeadline());
  REQUIRE(state);
  ChunkResult r = runChunk(*state, R"(
    for i = 1, 100 do
      pcall(function() while true do end end)
    end
    return "escaped")");
  CHECK(r.error.error_class == LuaErrorClass::kTimeout);

  // xpcall with a handler that loops, and a script that catches and returns, fare no better.
  r = runChunk(*state, R"(
    local ok = xpcall(function() while true do end end, function(e) while true do end end)
    return "escaped")");
  CHECK(r.error.error_class == LuaErrorClass::kTimeout);
  r = runChunk(*state, R"(
    pcall(function() while true do end end)
    return "escaped")");
  CHECK(r.error.error_class == LuaErrorClass::kTimeout);
}

TEST_CASE("lua: the state works again after a timeout") {
  auto state = newState(shortDeadline());
  REQUIRE(state);
  CHECK(runChunk(*state, "while true do end").error.error_class == LuaErrorClass::kTimeout);
  ChunkResult r = runChunk(*state, "local n = 0 for i = 1, 1000 do n = n + i end return n");
  CHECK(r.error.ok());
  CHECK(r.value == 500500);
  // ... and still enforces the deadline.
  CHECK(runChunk(*state, "while true do end").error.error_class == LuaErrorClass::kTimeout);
}

TEST_CASE("lua: xpcall calls its handler with the error and passes results through") {
  auto state = newState();
  REQUIRE(state);
  ChunkResult r = runChunk(*state, R"(
    local ok, sum = xpcall(function(a, b) return a + b end, print, 1, 2)
    local failed, handled = xpcall(function() error("boom", 0) end, function(e) return "handled " .. e end)
    local bad_handler, message = xpcall(function() error("boom", 0) end, function(e) error("again", 0) end)
    return { ok, sum, failed, handled, bad_handler, message })");
  REQUIRE(r.error.ok());
  CHECK(r.value == nlohmann::json({true, 3, false, "handled boom", false, "again"}));
}

TEST_CASE("lua: a memory bomb ends with a memory error and the state still works") {
  LuaStateOptions options;
  options.limits.memory_bytes = 4u << 20;
  options.limits.deadline = 10s;  // the cap, not the clock, must stop it
  auto state = newState(options);
  REQUIRE(state);
  REQUIRE(state->usesCappedAllocator());
  const size_t before = state->memoryUsed();
  ChunkResult r = runChunk(*state, R"(
    local t = {}
    local s = "x"
    for i = 1, 1e9 do
      t[#t + 1] = s .. i
      s = s .. "y"
    end)");
  CHECK(r.error.error_class == LuaErrorClass::kMemory);
  CHECK(r.error.message.find("memory limit of 4 MiB exceeded") != std::string::npos);
  CHECK(state->memoryUsed() < before + (512u << 10));  // a full GC ran

  r = runChunk(*state, "return string.rep('ab', 3)");
  CHECK(r.error.ok());
  CHECK(r.value == "ababab");
}

TEST_CASE("lua: a memory error caught by pcall still fails the call") {
  LuaStateOptions options;
  options.limits.memory_bytes = 4u << 20;
  options.limits.deadline = 10s;
  auto state = newState(options);
  REQUIRE(state);
  ChunkResult r = runChunk(*state, R"(
    pcall(function() return string.rep("x", 64 * 1024 * 1024) end)
    return "approve anyway")");
  CHECK(r.error.error_class == LuaErrorClass::kMemory);
}

TEST_CASE("lua: the GC-count fallback also stops a memory bomb") {
  LuaStateOptions options;
  options.allocator = AllocatorMode::kSystemWithGcCheck;
  options.limits.memory_bytes = 4u << 20;
  options.limits.deadline = 10s;
  auto state = newState(options);
  REQUIRE(state);
  CHECK_FALSE(state->usesCappedAllocator());
  ChunkResult r = runChunk(*state, "local t = {} for i = 1, 1e9 do t[i] = {i} end");
  CHECK(r.error.error_class == LuaErrorClass::kMemory);
  CHECK(runChunk(*state, "return 1 + 1").value == 2);
}

TEST_CASE("lua: bytecode is refused, text chunks load") {
  auto state = newState();
  REQUIRE(state);
  const std::string bytecode = std::string("\x1bLJ\x02\x00", 5) + "junk";
  LuaError e = state->call([&](lua_State* L) { loadTextChunk(L, bytecode, "evil.luac"); });
  CHECK(e.error_class == LuaErrorClass::kLoad);
  CHECK(e.message.find("evil.luac: precompiled bytecode is refused") != std::string::npos);
  e = state->call([](lua_State* L) { loadTextChunk(L, std::string("\x1bLua", 4), "evil.luac"); });
  CHECK(e.error_class == LuaErrorClass::kLoad);

  e = state->call([](lua_State* L) { loadTextChunk(L, "return 1", "fine.lua"); });
  CHECK(e.ok());
}

TEST_CASE("lua: a syntax error is a load error with file and line") {
  auto state = newState();
  REQUIRE(state);
  ChunkResult r = runChunk(*state, "local x = 1\nlocal y = = 2\n", "policies/broken.lua");
  CHECK(r.error.error_class == LuaErrorClass::kLoad);
  CHECK(r.error.message.find("policies/broken.lua:2:") != std::string::npos);
}

TEST_CASE("lua: a runtime error names the script and line") {
  auto state = newState();
  REQUIRE(state);
  ChunkResult r = runChunk(*state, "local t = nil\n\nreturn t.field", "policies/nil.lua");
  CHECK(r.error.error_class == LuaErrorClass::kRuntime);
  CHECK(r.error.message.find("policies/nil.lua:3:") != std::string::npos);
}

namespace {

int throwingBinding(lua_State*) { throw std::runtime_error("boom"); }

struct Flag {
  bool* set;
  ~Flag() { *set = true; }
};
bool g_destroyed = false;
int raisingBinding(lua_State* L) {
  Flag flag{&g_destroyed};
  return luaL_error(L, "raised with a C++ object alive");
}

}  // namespace

TEST_CASE("lua: a C++ exception in a binding becomes a Lua error, never crossing Lua frames") {
  auto state = newState();
  REQUIRE(state);
  LuaError e = state->call([](lua_State* L) {
    lua_pushcfunction(L, guarded<throwingBinding>);
    lua_call(L, 0, 0);
  });
  CHECK(e.error_class == LuaErrorClass::kRuntime);
  CHECK(e.message.find("internal error: boom") != std::string::npos);

  e = state->call([](lua_State*) { throw std::runtime_error("from the body"); });
  CHECK(e.error_class == LuaErrorClass::kRuntime);
  CHECK(e.message.find("from the body") != std::string::npos);
}

TEST_CASE("lua: Lua errors unwind C++ frames and run their destructors") {
  // The bindings rely on LuaJIT's external unwinding (x64): a Lua error raised with C++
  // objects alive must destroy them.
  auto state = newState();
  REQUIRE(state);
  g_destroyed = false;
  LuaError e = state->call([](lua_State* L) {
    lua_pushcfunction(L, guarded<raisingBinding>);
    lua_call(L, 0, 0);
  });
  CHECK(e.error_class == LuaErrorClass::kRuntime);
  CHECK(g_destroyed);
}

TEST_CASE("lua: math.random is reproducible from call to call") {
  auto state = newState();
  REQUIRE(state);
  const std::string code = "return { math.random(), math.random(6), math.random(10, 20) }";
  ChunkResult first = runChunk(*state, code);
  ChunkResult second = runChunk(*state, code);
  REQUIRE(first.error.ok());
  CHECK(first.value == second.value);
  CHECK(first.value[1].get<int>() >= 1);
  CHECK(first.value[1].get<int>() <= 6);
  ChunkResult seeded = runChunk(*state, "math.randomseed(42) return math.random()");
  CHECK(seeded.value != first.value[0]);
}

TEST_CASE("lua: os.time and os.date read the injected clock in UTC") {
  tide::FakeClock clock(*tide::parseTimestamp("2026-03-03T10:15:30Z"));
  LuaStateOptions options;
  options.clock = &clock;
  auto state = newState(options);
  REQUIRE(state);
  ChunkResult r = runChunk(*state, R"(
    local t = os.date("*t")
    return { os.time(), os.date("%Y-%m-%d %H:%M"), t.wday, t.hour,
             os.time({ year = 2026, month = 3, day = 3, hour = 10, min = 15, sec = 30 }) })");
  REQUIRE(r.error.ok());
  CHECK(r.value[0] == 1772532930);
  CHECK(r.value[1] == "2026-03-03 10:15");
  CHECK(r.value[2] == 3);  // Tuesday
  CHECK(r.value[3] == 10);
  CHECK(r.value[4] == 1772532930);
}

TEST_CASE("lua: print goes to the log sink with its source line") {
  std::vector<LogRecord> logs;
  LuaStateOptions options;
  options.log = [&logs](const LogRecord& record) { logs.push_back(record); };
  auto state = newState(options);
  REQUIRE(state);
  REQUIRE(runChunk(*state, "\nprint('hello', 42, nil)", "policies/talk.lua").error.ok());
  REQUIRE(logs.size() == 1);
  CHECK(logs[0].message == "hello\t42\tnil");
  CHECK(logs[0].where == "policies/talk.lua:2");
  CHECK(logs[0].level == "info");
}

TEST_CASE("lua: Lua code called back from C library functions is under the deadline too") {
  auto state = newState(shortDeadline());
  REQUIRE(state);
  for (const char* code : {
           "table.sort({3, 2, 1}, function(a, b) while true do end end)",
           "string.gsub('aaa', 'a', function() while true do end end)",
           "return setmetatable({}, { __index = function() while true do end end }).x",
           "return tostring(setmetatable({}, { __tostring = function() while true do end end }))",
       }) {
    CAPTURE(code);
    CHECK(runChunk(*state, code).error.error_class == LuaErrorClass::kTimeout);
  }
}

TEST_CASE("lua: patterns too costly to run uninterrupted are refused") {
  auto state = newState(shortDeadline());
  REQUIRE(state);
  ChunkResult r = runChunk(*state, "return string.find(string.rep('a', 40), string.rep('.-', 12) .. 'b')");
  CHECK(r.error.error_class == LuaErrorClass::kRuntime);
  CHECK(r.error.message.find("too expensive") != std::string::npos);
  r = runChunk(*state, "return (string.rep('a', 40)):match(string.rep('a*', 12) .. 'b')");
  CHECK(r.error.message.find("too expensive") != std::string::npos);

  // Everyday patterns, and plain searches, are fine.
  r = runChunk(*state, R"(
    local y, m, d = string.match("2026-12-21T00:00:00Z", "^(%d%d%d%d)%-(%d%d)%-(%d%d)T")
    local words = 0
    for _ in string.gmatch("a b c", "%a+") do words = words + 1 end
    return { y, m, d, ("prod-web"):find("^prod%-") ~= nil, words,
             string.find(string.rep("a", 100000), ".-.-.-b", 1, true) == nil,
             (string.gsub("a-b-c", "%-", "+")) })");
  REQUIRE(r.error.ok());
  CHECK(r.value == nlohmann::json({"2026", "12", "21", true, 3, true, "a+b+c"}));
}
