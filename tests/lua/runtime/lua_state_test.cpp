#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <vector>

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

// `code` ends with a timeout, soon after its deadline: in CPU time, which the deadline
// counts (a ratio generous enough for a loaded machine, not a measurement), and within
// twice the wall limit, which a thread starved of the CPU reaches first.
void checkEndsAtDeadline(LuaState& state, const char* code) {
  CAPTURE(code);
  const auto cpu_started = tide::threadCpuTime();
  const auto started = std::chrono::steady_clock::now();
  ChunkResult r = runChunk(state, code);
  CHECK(r.error.error_class == LuaErrorClass::kTimeout);
  CHECK(tide::threadCpuTime() - cpu_started < 20 * state.limits().deadline);
  CHECK(std::chrono::steady_clock::now() - started < 2 * wallLimitOf(state.limits().deadline));
}

// What preemption looks like to a script: time passes and the thread uses no CPU.
int offTheCpu(lua_State* L) {
  std::this_thread::sleep_for(std::chrono::milliseconds(luaL_checkinteger(L, 1)));
  return 0;
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

TEST_CASE("lua: the deadline counts the script's CPU time, not time the thread is off the CPU") {
  // A thread preempted on a loaded machine sees wall time pass while it uses no CPU; here a
  // C function sleeps that way between the Lua instructions the count hook checks. A
  // deadline read on the wall clock failed this script (and issue 11's sim fleet test, on a
  // loaded machine).
  LuaStateOptions options;
  options.limits.deadline = 200ms;  // and a wall limit of 2 s
  auto state = newState(options);
  REQUIRE(state);
  const auto started = std::chrono::steady_clock::now();
  const LuaError preempted = state->call([](lua_State* L) {
    loadTextChunk(L, "local n = 0 for i = 1, 4 do off_the_cpu(100) for j = 1, 10000 do n = n + j end end return n",
                  "preempted.lua");
    const Verb verbs[] = {{"off_the_cpu", offTheCpu}};
    pushEnvironment(L, verbs);
    lua_setfenv(L, -2);
    lua_call(L, 0, 0);
  });
  CHECK(preempted.ok());
  CHECK(std::chrono::steady_clock::now() - started > options.limits.deadline);
}

TEST_CASE("lua: calls in quick succession start from one CPU clock reading instead of a system call each") {
  auto state = newState();
  REQUIRE(state);
  constexpr int kCalls = 1000;
  const uint64_t reads_before = LuaState::cpuClockReads();
  for (int i = 0; i < kCalls; ++i) REQUIRE(runChunk(*state, "return 1").error.ok());
  const uint64_t reads = LuaState::cpuClockReads() - reads_before;
  MESSAGE(kCalls << " calls read the CPU clock " << reads << " times");
  // A reading serves the calls of the next millisecond; a thousand trivial calls take a few.
  CHECK(reads < kCalls / 4);
}

TEST_CASE("lua: a state handed to a fresh thread keeps its deadline (CPU readings are per thread)") {
  // The state first runs on a thread that has used far more CPU than the deadline; a
  // reading of that thread's clock taken as the fresh thread's would let a spinning script
  // run on until the wall limit (an older reading) or fail at once (a newer one).
  LuaStateOptions options;
  options.limits.deadline = 20ms;
  auto state = newState(options);
  REQUIRE(state);
  bool busy_ok = true;
  std::thread busy([&] {
    const auto started = tide::threadCpuTime();
    while (tide::threadCpuTime() - started < 300ms) busy_ok = busy_ok && runChunk(*state, "return 1").error.ok();
  });
  busy.join();
  ChunkResult warmed;
  ChunkResult spun;
  std::chrono::nanoseconds cpu{};
  std::thread fresh([&] {
    warmed = runChunk(*state, "local n = 0 for i = 1, 1000 do n = n + i end return n");
    const auto started = tide::threadCpuTime();
    spun = runChunk(*state, "while true do end");
    cpu = tide::threadCpuTime() - started;
  });
  fresh.join();
  CHECK(busy_ok);
  CHECK(warmed.error.ok());
  CHECK(spun.error.error_class == LuaErrorClass::kTimeout);
  CHECK(cpu >= options.limits.deadline);
  CHECK(cpu < 2 * options.limits.deadline);
}

TEST_CASE("lua: C code that blocks outside host work is stopped by the wall limit") {
  auto state = newState(shortDeadline());
  REQUIRE(state);
  REQUIRE(wallLimitOf(20ms) == kMinWallLimit);
  LuaState* self = state.get();
  const LuaError blocked = state->call([self](lua_State* L) {
    std::this_thread::sleep_for(kMinWallLimit + 50ms);
    self->checkLimits(L);
  });
  CHECK(blocked.error_class == LuaErrorClass::kTimeout);
  CHECK(blocked.message.find("deadline of 20 ms exceeded") != std::string::npos);
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

TEST_CASE("lua: the allocator's pool reuses a freed small block and keeps at most its cap") {
  BlockPool pool;
  void* first = pool.take(40);
  REQUIRE(first);
  pool.give(first, 40);
  CHECK(pool.keptBytes() == 48);
  CHECK(pool.take(33) == first);  // 33 and 40 bytes are one size class
  CHECK(pool.keptBytes() == 0);
  pool.give(first, 40);
  void* other_class = pool.take(64);
  CHECK(other_class != first);
  pool.give(other_class, 64);

  std::vector<void*> many;
  for (size_t kept = 0; kept <= 2 * BlockPool::kMaxKeptBytes; kept += BlockPool::kMaxBlockBytes) {
    many.push_back(pool.take(BlockPool::kMaxBlockBytes));
  }
  for (void* block : many) pool.give(block, BlockPool::kMaxBlockBytes);
  CHECK(pool.keptBytes() <= BlockPool::kMaxKeptBytes);
  CHECK(pool.keptBytes() > BlockPool::kMaxKeptBytes - BlockPool::kMaxBlockBytes);
}

TEST_CASE("lua: memory counts the same whether blocks come from the pool or from malloc") {
  // Small strings and tables (pooled) and big ones (malloc'ed) made, grown across the
  // pool's bound and dropped, twice: the state's count comes back to where it was, and
  // the second round, served from the pool, counts what the first did. The churn is
  // seconds of CPU under a sanitizer: the deadline is not what this test is about.
  LuaStateOptions options;
  options.limits.deadline = 60s;
  auto state = newState(options);
  REQUIRE(state);
  REQUIRE(state->usesCappedAllocator());
  const char* churn = R"(
    local kept = {}
    for i = 1, 2000 do
      local t = {}
      for j = 1, i % 80 do t[j] = ("x"):rep(j * 8) .. i end  -- strings and array grow past 512 bytes
      kept[i % 100 + 1] = t
    end
    return #kept)";
  auto used_after_collect = [&] {
    REQUIRE(state->call([](lua_State* L) { lua_gc(L, LUA_GCCOLLECT, 0); }).ok());
    return state->memoryUsed();
  };
  auto run_churn = [&] {
    ChunkResult r = runChunk(*state, churn);
    REQUIRE_MESSAGE(r.error.ok(), r.error.message);
  };
  const size_t before = used_after_collect();
  run_churn();
  const size_t after_first = used_after_collect();
  run_churn();
  const size_t after_second = used_after_collect();
  CHECK(after_first < before + (64u << 10));
  CHECK(after_second == after_first);
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

TEST_CASE("lua: os.date refuses times beyond the years tide holds, os.time takes absurd fields") {
  auto state = newState({});
  REQUIRE(state);
  for (const char* code : {"return os.date('*t', 1e300)", "return os.date('%Y', 0/0)", "return os.date('*t', -1e12)"}) {
    CAPTURE(code);
    ChunkResult r = runChunk(*state, code);
    CHECK(r.error.error_class == LuaErrorClass::kRuntime);
    CHECK(r.error.message.find("os.date: time out of range") != std::string::npos);
  }
  ChunkResult r = runChunk(*state, "return os.time({ year = -2^31, month = -2^31, day = 2^31 })");
  CHECK(r.error.ok());
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

TEST_CASE("lua: costly patterns run into the deadline instead of running on in C") {
  auto state = newState(shortDeadline());
  REQUIRE(state);
  for (const char* code : {
           "local s = string.rep('a', 10000) while true do s:find('a*b') end",
           "return string.find(string.rep('a', 100000), '.-.-.-b')",
           "return (string.gsub(string.rep('a', 100000), 'a-a-a-b', 'x'))",
           "for x in string.rep('a', 100000):gmatch('.*.*b') do end",
       }) {
    checkEndsAtDeadline(*state, code);
  }

  // Everyday patterns, and plain searches, are fine.
  ChunkResult r = runChunk(*state, R"(
    local y, m, d = string.match("2026-12-21T00:00:00Z", "^(%d%d%d%d)%-(%d%d)%-(%d%d)T")
    local words = 0
    for _ in string.gmatch("a b c", "%a+") do words = words + 1 end
    return { y, m, d, ("prod-web"):find("^prod%-") ~= nil, words,
             string.find(string.rep("a", 100000), ".-.-.-b", 1, true) == nil,
             (string.gsub("a-b-c", "%-", "+")) })");
  REQUIRE(r.error.ok());
  CHECK(r.value == nlohmann::json({"2026", "12", "21", true, 3, true, "a+b+c"}));
}

TEST_CASE("lua: the sandbox's patterns behave as Lua 5.1's") {
  auto state = newState();
  REQUIRE(state);
  ChunkResult r = runChunk(*state, R"lua(
    local out = {}
    local function add(...)
      local values, parts = { ... }, {}
      for i = 1, 4 do parts[i] = tostring(values[i]) end
      out[#out + 1] = table.concat(parts, ",")
    end
    add(string.find("hello world", "o w"))
    add(string.find("hello world", "o", 6))
    add(string.find("hello", "l+"))
    add(string.find("hello", "(l)(l)"))
    add(string.find("a.b", ".", 1, true))
    add(string.find("abc", "", 10))
    add(string.find("abc", "b", -1))
    add(string.match("key = value", "(%w+)%s*=%s*(%w+)"))
    add(string.match("  trim  ", "^%s*(.-)%s*$"))
    add(string.match("f(a(b)c)d", "%b()"))
    add(string.match("THE (quick) fox", "%f[%a]%a+", 5))
    add(string.match("hello", "()ll()"))
    add(string.match("abcabc", "(abc)%1"))
    add(string.match("[x]", "[%]x[]+"))
    add(string.match("a-z", "[a%-z]+"))
    add(string.match("2026-12-21", "^(%d+)%-(%d+)%-(%d+)$"))
    add(string.match("x", "^y"))
    add(string.gsub("hello world", "o", "0"))
    add(string.gsub("hello world", "(%w+)", "<%1>"))
    add(string.gsub("abc", "%w", "%0%0", 2))
    add(string.gsub("abc", "", "-"))
    add(string.gsub("hello", "l", { l = "L" }))
    add(string.gsub("hello", "[eo]", function(c) if c == "e" then return "3" end end))
    add(string.gsub("$1.5", "%$(%d+%.%d+)", "%1 USD"))
    add(string.gsub("abc", "^a", "x"))
    local words = {}
    for k, v in string.gmatch("a=1, b=2", "(%w+)=(%w+)") do words[#words + 1] = k .. v end
    for w in string.gmatch("one two", "%a+") do words[#words + 1] = w end
    for e in string.gmatch("ab", "x*") do words[#words + 1] = "[" .. e .. "]" end
    add(table.concat(words, " "))
    add(pcall(string.find, "a", "[a"))
    add(pcall(string.find, "a", "%"))
    add(pcall(string.match, "a", "(a"))
    add(pcall(string.match, "a", "%1"))
    return out)lua");
  REQUIRE(r.error.ok());
  CHECK(r.value == nlohmann::json({
                       "5,7,nil,nil",
                       "8,8,nil,nil",
                       "3,4,nil,nil",
                       "3,4,l,l",
                       "2,2,nil,nil",
                       "4,3,nil,nil",
                       "nil,nil,nil,nil",
                       "key,value,nil,nil",
                       "trim,nil,nil,nil",
                       "(a(b)c),nil,nil,nil",
                       "quick,nil,nil,nil",
                       "3,5,nil,nil",
                       "abc,nil,nil,nil",
                       "[x],nil,nil,nil",
                       "a-z,nil,nil,nil",
                       "2026,12,21,nil",
                       "nil,nil,nil,nil",
                       "hell0 w0rld,2,nil,nil",
                       "<hello> <world>,2,nil,nil",
                       "aabbc,2,nil,nil",
                       "-a-b-c-,4,nil,nil",
                       "heLLo,2,nil,nil",
                       "h3llo,2,nil,nil",
                       "1.5 USD,1,nil,nil",
                       "xbc,1,nil,nil",
                       "a1 b2 one two [] [] [],nil,nil,nil",
                       "false,malformed pattern (missing ']'),nil,nil",
                       "false,malformed pattern (ends with '%'),nil,nil",
                       "false,unfinished capture,nil,nil",
                       "false,invalid capture index %1,nil,nil",
                   }));
}

TEST_CASE("lua: pcall and xpcall re-raise a limit error instead of returning it") {
  auto state = newState(shortDeadline());
  REQUIRE(state);
  for (const char* code : {
           "while true do pcall(function() while true do end end) end",
           "while true do pcall(pcall, function() while true do end end) end",
           "while true do xpcall(function() while true do end end, function() return 'caught' end) end",
           "while true do pcall(error, 'x') pcall(function() while true do end end) end",
       }) {
    checkEndsAtDeadline(*state, code);
  }
  // Other errors are still caught as usual.
  ChunkResult r = runChunk(*state, "local ok, e = pcall(error, 'boom', 0) return { ok, e }");
  CHECK(r.value == nlohmann::json({false, "boom"}));
}

TEST_CASE("lua: C functions calling back into Lua stop at the C depth limit instead of overflowing the stack") {
  // This is about depth, not time: a loaded machine must not reach the deadline first.
  LuaStateOptions options;
  options.limits.deadline = 10s;
  auto state = newState(options);
  REQUIRE(state);
  for (const char* code : {
           "local function r() return (string.gsub('a', 'a', r)) end pcall(r) r()",
           "local t = setmetatable({}, { __tostring = function(s) print(s) return '' end }) print(t)",
           "local t = setmetatable({}, { __tostring = function(s) return string.format('%s', s) end }) "
           "return string.format('%s', t)",
           "local function f() local _, e = pcall(f) error(e, 0) end f()",
           "local function s(a, b) table.sort({ 2, 1 }, s) return a < b end table.sort({ 2, 1 }, s)",
       }) {
    CAPTURE(std::string(code));
    ChunkResult r = runChunk(*state, code);
    CAPTURE(r.error.message);
    CHECK(r.error.error_class == LuaErrorClass::kRuntime);
    CHECK(r.error.message.find("C stack depth limit of 100 exceeded") != std::string::npos);
  }
  // Nesting well below the limit is fine.
  ChunkResult r = runChunk(*state, R"(
    local function nest(n) if n == 0 then return "ok" end local _, v = pcall(nest, n - 1) return v end
    return nest(50))");
  CHECK(r.value == "ok");
}

TEST_CASE("lua: each script's memory is its own budget") {
  LuaStateOptions options;
  options.limits.memory_bytes = 8u << 20;
  options.limits.deadline = 10s;
  auto state = newState(options);
  REQUIRE(state);
  const MemoryBudget hoarder = state->newBudget();
  const MemoryBudget modest = state->newBudget();
  int hoard_ref = LUA_NOREF;
  // Keeps `mib` MiB of strings made of `fill`: a different fill each time, since equal
  // strings are interned once and charged to whoever made them first.
  auto keep = [&](MemoryBudget budget, size_t mib, char fill, int* ref) {
    return state->call(budget, [&](lua_State* L) {
      loadTextChunk(L,
                    "local t = {} for i = 1, " + std::to_string(mib) + " * 1024 do t[i] = string.rep('" +
                        std::string(1, fill) + "', 1000) .. i end return t",
                    "hoard.lua");
      pushEnvironment(L, {});
      lua_setfenv(L, -2);
      lua_call(L, 0, 1);
      *ref = luaL_ref(L, LUA_REGISTRYINDEX);
    });
  };
  // The hoarder keeps 6 MiB of its 8: no other budget is touched.
  REQUIRE(keep(hoarder, 6, 'h', &hoard_ref).ok());
  CHECK(state->memoryUsed(hoarder) > (6u << 20));
  CHECK(state->memoryUsed(modest) == 0);
  // Another script still has all of its own 8 MiB ...
  int modest_ref = LUA_NOREF;
  CHECK(keep(modest, 5, 'm', &modest_ref).ok());
  // ... while the hoarder fails alone when it wants more.
  int more_ref = LUA_NOREF;
  CHECK(keep(hoarder, 3, 'g', &more_ref).error_class == LuaErrorClass::kMemory);
  CHECK(state->memoryUsed(modest) > (5u << 20));
}
