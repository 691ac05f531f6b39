#include <doctest/doctest.h>

#include <algorithm>

#include "host/lua/policy/bindings_policy.h"
#include "host/lua/runtime/bindings_readonly.h"
#include "host/lua/runtime/bindings_time.h"
#include "tests/lua/lua_test_util.h"

using namespace tide::lua;
using namespace tide::lua::testing;

namespace {

std::vector<std::string> namesOf(LuaState& state, std::span<const Verb> verbs) {
  std::vector<std::string> names;
  LuaError e = state.call([&](lua_State* L) {
    pushEnvironment(L, verbs);
    names = environmentNames(L, -1);
  });
  REQUIRE(e.ok());
  return names;
}

// Runs `code` and expects it to fail at runtime with a message containing `expected`.
void expectRefused(LuaState& state, const std::string& code, const std::string& expected) {
  ChunkResult r = runChunk(state, code);
  INFO("script: " << code);
  INFO("error: " << r.error.message);
  CHECK(r.error.error_class == LuaErrorClass::kRuntime);
  CHECK(r.error.message.find(expected) != std::string::npos);
}

}  // namespace

TEST_CASE("lua: the sandbox's global set equals the allow-list exactly") {
  auto state = newState();
  REQUIRE(state);
  const std::vector<std::string> expected = {
      "assert",       "error",         "getmetatable",   "ipairs",       "math",         "math.abs",
      "math.acos",    "math.asin",     "math.atan",      "math.atan2",   "math.ceil",    "math.cos",
      "math.cosh",    "math.deg",      "math.exp",       "math.floor",   "math.fmod",    "math.frexp",
      "math.huge",    "math.ldexp",    "math.log",       "math.log10",   "math.max",     "math.min",
      "math.modf",    "math.pi",       "math.pow",       "math.rad",     "math.random",  "math.randomseed",
      "math.sin",     "math.sinh",     "math.sqrt",      "math.tan",     "math.tanh",    "next",
      "os",           "os.clock",      "os.date",        "os.time",      "pairs",        "pcall",
      "print",        "select",        "setmetatable",   "string",       "string.byte",  "string.char",
      "string.find",  "string.format", "string.gmatch",  "string.gsub",  "string.len",   "string.lower",
      "string.match", "string.rep",    "string.reverse", "string.sub",   "string.upper", "table",
      "table.concat", "table.insert",  "table.maxn",     "table.remove", "table.sort",   "tide",
      "tide.lib",     "tide.log",      "tide.version",   "tonumber",     "tostring",     "type",
      "unpack",       "xpcall",
  };
  CHECK(allowList() == expected);
  CHECK(namesOf(*state, {}) == allowList());

  std::vector<std::string> with_verbs = allowList();
  for (const char* verb : {"abstain", "approve", "deny", "manual"}) with_verbs.push_back(verb);
  std::sort(with_verbs.begin(), with_verbs.end());
  CHECK(namesOf(*state, policyVerbs()) == with_verbs);

  // Libraries (tide.lib.*) see the allow-list and the libs' own host functions.
  std::vector<std::string> lib_names = allowList();
  for (const char* verb : {"zone_check", "zone_local_time", "zone_parse_local"}) lib_names.push_back(verb);
  std::sort(lib_names.begin(), lib_names.end());
  CHECK(namesOf(*state, libVerbs()) == lib_names);
}

TEST_CASE("lua: escape attempts all fail") {
  auto state = newState();
  REQUIRE(state);
  for (const char* name :
       {"io",       "ffi",    "debug",   "jit",       "package", "require", "load",     "loadstring",
        "loadfile", "dofile", "setfenv", "getfenv",   "rawset",  "rawget",  "rawequal", "collectgarbage",
        "newproxy", "gcinfo", "module",  "coroutine", "_G",      "bit"}) {
    expectRefused(*state, std::string("return ") + name, std::string("unknown global '") + name + "'");
  }
  expectRefused(*state, "os.execute('true')", "attempt to call field 'execute'");
  expectRefused(*state, "return os.getenv('HOME')", "attempt to call field 'getenv'");
  expectRefused(*state, "io.open('/etc/passwd')", "unknown global 'io'");
  expectRefused(*state, "return string.dump(print)", "attempt to call field 'dump'");
  expectRefused(*state, "return ('').dump(print)", "attempt to call field 'dump'");
  expectRefused(*state, "require('ffi')", "unknown global 'require'");
  expectRefused(*state, "setfenv(1, {})", "unknown global 'setfenv'");
  expectRefused(*state, "collectgarbage('stop')", "unknown global 'collectgarbage'");
}

TEST_CASE("lua: the string metatable is protected") {
  auto state = newState();
  REQUIRE(state);
  ChunkResult r = runChunk(*state, "return getmetatable('')");
  REQUIRE(r.error.ok());
  CHECK(r.value == "protected");
  expectRefused(*state, "getmetatable('').__index.upper = nil", "attempt to index");
  expectRefused(*state, "('').x = 1", "attempt to index");
  expectRefused(*state, "setmetatable('', {})", "table expected");
  expectRefused(*state, "string.upper = function() return 'pwned' end", "attempt to modify read-only field 'upper'");
  r = runChunk(*state, "return ('abc'):upper()");
  CHECK(r.value == "ABC");
}

TEST_CASE("lua: the sealed library tables read like tables and refuse writes") {
  auto state = newState();
  REQUIRE(state);
  ChunkResult r = runChunk(*state, R"(
    local fields = 0
    for _ in pairs(math) do fields = fields + 1 end
    return table.concat({ type(string), getmetatable(math), tostring(fields > 10),
                          tostring(string.match("dev-web", "^dev%-")), tostring(#os) }, " ")
  )");
  CHECK(r.value == "table protected true dev- 0");
  expectRefused(*state, "math.pi = 3", "attempt to modify read-only field 'pi'");
  expectRefused(*state, "os.time = nil", "attempt to modify read-only field 'time'");
  // pairs and ipairs hand plain tables the built-in iterators and views their own.
  r = runChunk(*state, R"(
    local plain = { 1, 2, x = 3 }
    local sum = 0
    for _, v in pairs(plain) do sum = sum + v end
    for _, v in ipairs(plain) do sum = sum + v end
    for name in pairs(tide) do sum = sum + (name == "lib" and 100 or 0) end
    return sum
  )");
  CHECK(r.value == 109);
}

TEST_CASE("lua: reading an unknown global or assigning any global raises") {
  auto state = newState();
  REQUIRE(state);
  expectRefused(*state, "return undefined_thing", "unknown global 'undefined_thing'");
  expectRefused(*state, "leak = 1", "attempt to assign global 'leak'");
  expectRefused(*state, "function helper() end", "attempt to assign global 'helper'");
  expectRefused(*state, "print = nil", "attempt to assign global 'print'");
  expectRefused(*state, "table.insert = nil", "attempt to modify read-only field 'insert'");
  expectRefused(*state, "tide.lib = {}", "attempt to modify read-only field 'lib'");
  expectRefused(*state, "tide.lib.x = 1", "attempt to modify read-only field 'x'");
  ChunkResult r = runChunk(*state, "local ok = 1 return ok + 1");
  CHECK(r.value == 2);
}

TEST_CASE("lua: read-only views refuse writes at every depth and still read like tables") {
  auto state = newState();
  REQUIRE(state);
  nlohmann::json value;
  LuaError e = state->call([&](lua_State* L) {
    pushReadOnlyJson(L, {{"name", "web"}, {"plan", {{"labels", {{"tier", "gold"}}}}}, {"list", {1, 2, 3}}});
    pushEnvironment(L, {});
    const int env = lua_gettop(L);
    loadTextChunk(L, R"(
      local view = ...
      local out = {}
      out.type = type(view)
      out.len = #view.list
      out.meta = getmetatable(view)
      out.same = view.plan == view.plan
      local keys = {}
      for k in pairs(view) do keys[#keys + 1] = k end
      table.sort(keys)
      out.keys = table.concat(keys, ",")
      local sum = 0
      for _, v in ipairs(view.list) do sum = sum + v end
      out.sum = sum
      out.unpacked = select("#", unpack(view.list))
      out.concat = table.concat(view.list, "-")
      out.tier = view.plan.labels.tier
      for _, write in ipairs({
        function() view.name = "x" end,
        function() view.plan.labels.tier = "free" end,
        function() view.list[1] = 9 end,
        function() table.insert(view.list, 4) end,
        function() table.sort(view.list) end,
        function() rawset(view, "name", "x") end,
        function() setmetatable(view, nil) end,
      }) do
        local ok, err = pcall(write)
        out[#out + 1] = ok and "written" or err
      end
      return out)",
                  "view.lua");
    lua_pushvalue(L, env);
    lua_setfenv(L, -2);
    lua_pushvalue(L, env - 1);
    lua_call(L, 1, 1);
    value = *toJson(L, -1);
  });
  INFO(e.message);
  REQUIRE(e.ok());
  CHECK(value["type"] == "table");
  CHECK(value["len"] == 3);
  CHECK(value["meta"] == "protected");
  CHECK(value["same"] == true);
  CHECK(value["keys"] == "list,name,plan");
  CHECK(value["sum"] == 6);
  CHECK(value["unpacked"] == 3);
  CHECK(value["concat"] == "1-2-3");
  CHECK(value["tier"] == "gold");
  const auto& object = value;
  auto message = [&object](int i) { return object[std::to_string(i)].get<std::string>(); };
  CHECK(message(1).find("attempt to modify read-only field 'name'") != std::string::npos);
  CHECK(message(2).find("attempt to modify read-only field 'tier'") != std::string::npos);
  CHECK(message(3).find("attempt to modify read-only field '1'") != std::string::npos);
  CHECK(message(4).find("attempt to modify a read-only table") != std::string::npos);
  CHECK(message(5).find("attempt to modify a read-only table") != std::string::npos);
  CHECK(message(6).find("unknown global 'rawset'") != std::string::npos);
  CHECK(message(7).find("table expected") != std::string::npos);
}

TEST_CASE("lua: tide.lib loads libs through the host's loader") {
  auto state = newState();
  REQUIRE(state);
  ChunkResult r = runChunk(*state, "return tide.lib.nothing");
  CHECK(r.error.error_class == LuaErrorClass::kRuntime);
  CHECK(r.error.message.find("unknown lib 'nothing'") != std::string::npos);
  r = runChunk(*state, "return type(tide.version)");
  CHECK(r.value == "string");
}

TEST_CASE("lua: tide.log writes to the log sink with level, source line and fields") {
  std::vector<LogRecord> logs;
  LuaStateOptions options;
  options.log = [&logs](const LogRecord& record) { logs.push_back(record); };
  auto state = newState(options);
  REQUIRE(state);
  REQUIRE(
      runChunk(*state, "tide.log.warn('slow', { ms = 7 })\ntide.log.info('x')", "scripts/rollout/x.lua").error.ok());
  REQUIRE(logs.size() == 2);
  CHECK(logs[0].level == "warn");
  CHECK(logs[0].where == "scripts/rollout/x.lua:1");
  CHECK(logs[0].fields == nlohmann::json{{"ms", 7}});
  CHECK(logs[1].level == "info");
  CHECK(runChunk(*state, "tide.log.info = print").error.message.find("read-only") != std::string::npos);
}

TEST_CASE("lua: a table marked writable is handed out as itself by the view around it") {
  auto state = newState();
  REQUIRE(state);
  bool ok = false;
  LuaError e = state->call([&ok](lua_State* L) {
    lua_createtable(L, 0, 2);
    lua_newtable(L);
    markWritable(L, -1);
    lua_setfield(L, -2, "state");
    lua_newtable(L);
    lua_setfield(L, -2, "fixed");
    pushReadOnly(L, -1);
    const int r = lua_gettop(L);
    const char* code =
        "local r = ...\n"
        "r.state.phase = 'x'\n"
        "local seen = 0\n"
        "for k, v in pairs(r) do if k == 'state' and v.phase == 'x' then seen = seen + 1 end end\n"
        "return seen == 1 and not pcall(function() r.fixed.y = 1 end)\n"
        "  and not pcall(function() r.state = {} end)";
    loadTextChunk(L, code, "test.lua");
    pushEnvironment(L, {});
    lua_setfenv(L, -2);
    lua_pushvalue(L, r);
    lua_call(L, 1, 1);
    ok = lua_toboolean(L, -1) != 0;
  });
  CHECK(e.ok());
  CHECK(ok);
}
