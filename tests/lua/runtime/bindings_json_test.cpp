#include <doctest/doctest.h>

#include "tests/lua/lua_test_util.h"

using namespace tide;
using namespace tide::lua;
using namespace tide::lua::testing;

namespace {

Json roundTrip(LuaState& state, const Json& value) {
  Json out;
  LuaError e = state.call([&](lua_State* L) {
    pushJson(L, value);
    auto converted = toJson(L, -1);
    out = converted.isOk() ? *converted : Json("error: " + converted.status().message());
  });
  REQUIRE(e.ok());
  return out;
}

}  // namespace

TEST_CASE("lua: JSON values survive a trip through Lua") {
  auto state = newState();
  REQUIRE(state);
  const Json value = {{"name", "web"},
                      {"count", 3},
                      {"ratio", 0.25},
                      {"on", true},
                      {"list", {1, "two", {{"three", 3}}}},
                      {"nested", {{"deep", {{"deeper", {"x"}}}}}},
                      {"labels", Json::object()}};
  CHECK(roundTrip(*state, value) == value);
  CHECK(roundTrip(*state, Json::array({1, 2, 3})) == Json::array({1, 2, 3}));
  // null becomes nil: an absent field.
  CHECK(roundTrip(*state, {{"a", 1}, {"b", nullptr}}) == Json{{"a", 1}});
}

TEST_CASE("lua: values Lua cannot express in JSON are refused with a path") {
  auto state = newState();
  REQUIRE(state);
  ChunkResult r = runChunk(*state, "return { ok = 1, bad = { f = print } }");
  REQUIRE(r.error.ok());
  CHECK(r.value.get<std::string>().find("bad: f: cannot convert a function") != std::string::npos);
  r = runChunk(*state, "return { [true] = 1 }");
  CHECK(r.value.get<std::string>().find("table key of type boolean") != std::string::npos);
  r = runChunk(*state, "return { n = 0/0 }");
  CHECK(r.value.get<std::string>().find("NaN") != std::string::npos);
  r = runChunk(*state, "local t = {} t.self = t return t");
  CHECK(r.value.get<std::string>().find("nested deeper") != std::string::npos);
}

TEST_CASE("lua: tables with holes or mixed keys become objects, invalid UTF-8 is replaced") {
  auto state = newState();
  REQUIRE(state);
  CHECK(runChunk(*state, "return { [1] = 'a', [3] = 'c' }").value == Json{{"1", "a"}, {"3", "c"}});
  CHECK(runChunk(*state, "return { 'a', x = 1 }").value == Json{{"1", "a"}, {"x", 1}});
  CHECK(runChunk(*state, "return {}").value == Json::object());
  CHECK(runChunk(*state, "return '\\255ok'").value == "\xEF\xBF\xBDok");
  CHECK(validUtf8("h\xC3\xA9llo") == "h\xC3\xA9llo");
  CHECK(validUtf8("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
}
