#include "host/core/json_reader.h"

#include <doctest/doctest.h>

using namespace tide;
using Json = nlohmann::json;

TEST_CASE("json reader: every problem is collected, each named by its path") {
  const Json config = {{"seed", -1},      {"rate", 2},       {"name", 3},
                       {"colour", "red"}, {"flag", nullptr}, {"items", {{{"id", "a"}}, {{"id", 7}}}}};
  JsonProblems problems;
  JsonReader r(config, "driver_config", problems);
  r.onlyKeys({"seed", "rate", "name", "flag", "items", "missing"});
  CHECK_FALSE(r.unsignedInteger("seed", JsonNeed::kOptional));
  CHECK_FALSE(r.number("rate", JsonNeed::kOptional, {0, 1}));
  CHECK_FALSE(r.string("name", JsonNeed::kOptional));
  CHECK_FALSE(r.boolean("flag", JsonNeed::kRequired));  // null counts as absent
  CHECK_FALSE(r.integer("missing", JsonNeed::kOptional, {0, 10}));
  const Json* items = r.array("items", JsonNeed::kOptional);
  REQUIRE(items != nullptr);
  for (size_t i = 0; i < items->size(); ++i) r.element("items", i, (*items)[i]).string("id", JsonNeed::kRequired);

  std::vector<std::string> fields;
  for (const ErrorDetail& detail : problems.details()) fields.push_back(detail.field + ": " + detail.message);
  CHECK(fields == std::vector<std::string>{
                      "driver_config.colour: unknown key (known: seed, rate, name, flag, items, missing)",
                      "driver_config.seed: must be a non-negative integer",
                      "driver_config.rate: must be a number in [0, 1]",
                      "driver_config.name: must be a string",
                      "driver_config.flag: is required",
                      "driver_config.items[1].id: must be a string",
                  });
  const Status status = problems.toStatus("sim driver: bad driver_config");
  CHECK(status.code() == Code::kInvalidArgument);
  CHECK(status.message() ==
        "sim driver: bad driver_config: driver_config.colour unknown key (known: seed, rate, name, flag, items, "
        "missing) (and 5 more)");
}

TEST_CASE("json reader: a value that is not an object is one problem at its path") {
  JsonProblems problems;
  JsonReader r(Json::array(), "driver_config", problems);
  CHECK_FALSE(r.isObject());
  CHECK_FALSE(r.string("inner", JsonNeed::kRequired));
  REQUIRE(problems.count() == 1);
  CHECK(problems.details()[0].field == "driver_config");
  CHECK(problems.details()[0].message == "must be an object");
}

TEST_CASE("json reader: bounds read as intervals, an open top as 'of at least'") {
  CHECK(describeBounds({0, 1}) == "in [0, 1]");
  CHECK(describeBounds({0, 3600, true}) == "in (0, 3600]");
  CHECK(describeBounds({1, static_cast<double>(INT64_MAX)}) == "of at least 1");
}
