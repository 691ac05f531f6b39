#include <doctest/doctest.h>

#include "host/model/records.h"

using namespace tide::model;

TEST_CASE("model: the effective strategy is the deployment's, else the plan's, else rolling") {
  Deployment deployment;
  CHECK(effectiveStrategy(nullptr, deployment).script == kDefaultStrategy);
  CHECK(std::string(kDefaultStrategy) == "rolling");

  Plan plan;
  plan.strategy.script = "canary";
  plan.strategy.params = {{"steps", {10, 100}}};
  EffectiveStrategy from_plan = effectiveStrategy(&plan, deployment);
  CHECK(from_plan.script == "canary");
  CHECK(from_plan.plan_params == Json{{"steps", {10, 100}}});
  CHECK(from_plan.deployment_params == Json::object());

  deployment.strategy = {{"script", "blue_green"}, {"params", {{"auto_promotion", "never"}}}};
  EffectiveStrategy overridden = effectiveStrategy(&plan, deployment);
  CHECK(overridden.script == "blue_green");
  CHECK(overridden.plan_params == Json{{"steps", {10, 100}}});
  CHECK(overridden.deployment_params == Json{{"auto_promotion", "never"}});

  deployment.strategy = {{"params", {{"steps", {50}}}}};
  CHECK(effectiveStrategy(&plan, deployment).script == "canary");
  plan.strategy.script.clear();
  CHECK(effectiveStrategy(&plan, deployment).script == kDefaultStrategy);
}
