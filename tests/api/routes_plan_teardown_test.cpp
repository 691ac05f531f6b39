// POST /v1/plans/{name}/scale-to-zero over HTTP: who may ask, what the reply holds.

#include <doctest/doctest.h>

#include <string>

#include "tests/api/api_test_support.h"

using namespace tide;
using namespace tide::testing;

TEST_CASE("api: scale-to-zero asks for a DELETE of each live instance on behalf of an operator") {
  ApiHarness h;
  addInventoryAndPlan(h);
  REQUIRE(h.post(kMrdsDeployments, kMrdsDeployment, "application/yaml").status == 201);
  auto meta = h.ledger->instances().createMetaInstance(kMrdsPlanName, "deployment-1", "controller");
  REQUIRE(meta.isOk());
  const std::string path = "/v1/plans/" + kMrdsPlanName + "/scale-to-zero";

  Json before = h.everything();
  CHECK(h.post(path, R"({"reason": "retire"})", "application/json", kViewerToken).status == 403);
  Reply unknown_field = h.post(path, R"({"reasons": "retire"})", "application/json", kOperatorToken);
  CHECK(unknown_field.status == 400);
  CHECK(unknown_field.detailNames("reasons"));
  CHECK(h.post("/v1/plans/nope/scale-to-zero", "", "application/json", kOperatorToken).status == 404);
  CHECK(h.everything() == before);

  Reply asked = h.post(path, R"({"reason": "retire"})", "application/json", kOperatorToken);
  REQUIRE(asked.status == 200);
  Json reply = asked.json();
  CHECK(reply["plan"] == kMrdsPlanName);
  CHECK(reply["cancelled_deployments"] == Json::array({"deployment-1"}));
  REQUIRE(reply["operations"].size() == 1);
  const Json& operation = reply["operations"][0];
  CHECK(operation["type"] == "DELETE");
  CHECK(operation["meta_instance"] == meta->name);
  CHECK(operation["requested_by"] == kOperatorName);
  CHECK(operation["intent"] == "user");
  CHECK(operation["priority"] == 10);
  Json events = h.get("/v1/events?kind=plan.scale_to_zero").json()["items"];
  REQUIRE(events.size() == 1);
  CHECK(events[0]["actor"] == kOperatorName);
  CHECK(events[0]["data"] == Json{{"operations", {operation["metadata"]["id"]}},
                                  {"cancelled_deployments", {"deployment-1"}},
                                  {"reason", "retire"}});
  // The plan goes once its instance has: not yet.
  CHECK(h.del("/v1/plans/" + kMrdsPlanName).status == 409);
}
