#include "drivers/traffic/routers.h"

#include <doctest/doctest.h>

using namespace tide;
using namespace tide::drivers;
using namespace tide::drivers::traffic;

TEST_CASE("router: an unknown kind is refused naming router_kind and the known kinds") {
  auto made = makeRouter("nginx", nlohmann::json::object(), RouterContext{});
  REQUIRE(made.status().code() == Code::kInvalidArgument);
  std::string known;
  for (const RouterKind& row : routerKinds()) known += (known.empty() ? "" : ", ") + std::string(row.kind);
  CHECK(made.status().message() ==
        "unknown router kind \"nginx\" (known: " + (known.empty() ? std::string("none yet") : known) + ")");
  CHECK(made.status().details().front().field == "router_kind");
  CHECK(checkRouterConfig("nginx", nullptr).code() == Code::kInvalidArgument);
}

TEST_CASE("router: a row's parse runs before its factory, and check() builds nothing") {
  struct Config {
    int weight = 0;
  };
  static int built = 0;
  const RouterKind row(
      "test", "a router that only counts",
      +[](const nlohmann::json& config) -> Result<Config> {
        if (!config.is_object() || !config.contains("weight")) {
          return Status::invalidArgument("bad config", {{"config.weight", "is required", ""}});
        }
        return Config{config["weight"].get<int>()};
      },
      +[](const Config& config, const RouterContext&) -> Result<std::unique_ptr<Router>> {
        built += config.weight;
        return Status::unavailable("counted");
      });
  CHECK(row.check(nlohmann::json::object()).details().front().field == "config.weight");
  CHECK(row.check(nlohmann::json{{"weight", 2}}).ok());
  CHECK(built == 0);
  CHECK(row.make(nlohmann::json::object(), RouterContext{}).status().code() == Code::kInvalidArgument);
  CHECK(built == 0);
  CHECK(row.make(nlohmann::json{{"weight", 2}}, RouterContext{}).status().code() == Code::kUnavailable);
  CHECK(built == 2);
}

TEST_CASE("router: objectConfig hands a factory its JSON object, null as {}") {
  CHECK(*objectConfig(nullptr) == nlohmann::json::object());
  CHECK(*objectConfig(nlohmann::json{{"a", 1}}) == nlohmann::json{{"a", 1}});
  CHECK(objectConfig(nlohmann::json::array()).status().code() == Code::kInvalidArgument);
}

TEST_CASE("router: the haproxy row checks its config without starting anything") {
  CHECK(checkRouterConfig("haproxy", nullptr).ok());
  const Status bad = checkRouterConfig("haproxy", nlohmann::json{{"no_such_key", 1}});
  CHECK(bad.code() == Code::kInvalidArgument);
}
