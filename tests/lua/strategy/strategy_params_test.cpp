#include "host/lua/strategy/strategy_params.h"
#include <doctest/doctest.h>

using namespace tide;
using namespace tide::lua;
using Json = nlohmann::json;

TEST_CASE("lua: strategy params take their type from a default or a spec") {
  auto specs = parseParamSpecs(Json{{"pause_seconds", 60},
                                    {"steps", {10, 50, 100}},
                                    {"max_surge", {{"type", "count"}, {"default", 0}}},
                                    {"mode", {{"type", "string"}, {"one_of", {"a", "b"}}}},
                                    {"empty", {{"type", "list"}, {"default", Json::object()}}}});
  REQUIRE(specs.isOk());
  CHECK(specs->at("pause_seconds").type == "number");
  CHECK(specs->at("steps").type == "list");
  CHECK(specs->at("max_surge").type == "count");
  CHECK(specs->at("mode").default_value.is_null());
  CHECK(specs->at("empty").default_value == Json::array());

  auto resolved = resolveParams("canary", *specs, Json{{"pause_seconds", 5}, {"mode", "a"}},
                                Json{{"mode", "b"}, {"max_surge", "25%"}, {"steps", nullptr}});
  REQUIRE(resolved.isOk());
  CHECK(*resolved == Json{{"pause_seconds", 5},
                          {"steps", {10, 50, 100}},
                          {"max_surge", "25%"},
                          {"mode", "b"},
                          {"empty", Json::array()}});
}

TEST_CASE("lua: unknown params and params of another type are refused, naming the param") {
  auto specs = parseParamSpecs(
      Json{{"max_surge", {{"type", "count"}, {"default", 0}}}, {"pause_seconds", {{"type", "integer"}, {"min", 0}}}});
  REQUIRE(specs.isOk());
  auto unknown = resolveParams("rolling", *specs, Json::object(), Json{{"max_surg", 1}});
  REQUIRE(!unknown.isOk());
  CHECK(unknown.status().code() == Code::kInvalidArgument);
  CHECK(unknown.status().message() ==
        "rolling: unknown deployment param 'max_surg' (did you mean 'max_surge'?); rolling knows max_surge, "
        "pause_seconds");
  REQUIRE(unknown.status().details().size() == 1);
  CHECK(unknown.status().details()[0].field == "params.max_surg");

  for (const Json& bad : {Json("lots"), Json(-1), Json(1.5), Json("25"), Json(true)}) {
    CAPTURE(bad.dump());
    auto wrong = resolveParams("rolling", *specs, Json{{"max_surge", bad}}, nullptr);
    REQUIRE(!wrong.isOk());
    CHECK(wrong.status().message().find("plan param 'max_surge' must be an integer >= 0 or a "
                                        "percentage like \"25%\"") != std::string::npos);
    CHECK(wrong.status().details()[0].field == "params.max_surge");
  }
  CHECK(resolveParams("rolling", *specs, Json{{"max_surge", "150%"}}, nullptr).isOk());
  auto negative = resolveParams("rolling", *specs, nullptr, Json{{"pause_seconds", -5}});
  CHECK(negative.status().message().find("must be at least 0") != std::string::npos);
  CHECK(!resolveParams("rolling", *specs, Json::array(), nullptr).isOk());
}

TEST_CASE("lua: every problem of the params is reported, an unknown name with the nearest declared one") {
  auto specs = parseParamSpecs(Json{{"max_surge", {{"type", "count"}, {"default", 0}}},
                                    {"max_unavailable", {{"type", "count"}, {"default", 1}}},
                                    {"progress_deadline_seconds", {{"type", "number"}, {"min", 1}}}});
  REQUIRE(specs.isOk());
  const Json params{{"max_surg", 1}, {"progress_deadline_seconds", 0}, {"wholly_else", 2}};
  std::vector<ParamProblem> problems = paramProblems("rolling", *specs, params, "plan");
  REQUIRE(problems.size() == 3);
  CHECK(problems[0].name == "max_surg");
  CHECK(problems[0].unknown);
  CHECK(problems[0].message ==
        "unknown plan param 'max_surg' (did you mean 'max_surge'?); rolling knows max_surge, max_unavailable, "
        "progress_deadline_seconds");
  CHECK(problems[1].name == "progress_deadline_seconds");
  CHECK_FALSE(problems[1].unknown);
  CHECK(problems[1].message == "plan param 'progress_deadline_seconds' must be at least 1, not 0");
  CHECK(problems[2].message.starts_with("unknown plan param 'wholly_else'; rolling knows"));  // no near miss

  auto both = resolveParams("rolling", *specs, params, Json{{"max_unavailabel", 1}});
  REQUIRE(!both.isOk());
  CHECK(both.status().message().ends_with("(and 3 more errors)"));
  REQUIRE(both.status().details().size() == 4);
  CHECK(both.status().details()[3].field == "params.max_unavailabel");
  CHECK(both.status().details()[3].message.find("did you mean 'max_unavailable'?") != std::string::npos);
}

TEST_CASE("lua: a bad params declaration is refused") {
  CHECK(!parseParamSpecs(Json::array({1, 2})).isOk());
  auto unknown_type = parseParamSpecs(Json{{"x", {{"type", "int"}}}});
  CHECK(unknown_type.status().message().find("params.x: unknown type 'int'") != std::string::npos);
  auto typo = parseParamSpecs(Json{{"x", {{"type", "number"}, {"defualt", 1}}}});
  CHECK(typo.status().message().find("unknown spec field 'defualt'") != std::string::npos);
  auto bad_default = parseParamSpecs(Json{{"x", {{"type", "count"}, {"default", "many"}}}});
  CHECK(bad_default.status().message().find("the default must be") != std::string::npos);
}
