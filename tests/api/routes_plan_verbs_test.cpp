// POST /v1/plans/{name}/scale and /set-image over HTTP: a new deployment made from the plan's
// current one, who may ask, and every bad body refused with nothing written.

#include <doctest/doctest.h>

#include <string>

#include "tests/api/api_test_support.h"

using namespace tide;
using namespace tide::testing;

namespace {

const std::string kVerbPlanPath = "/v1/plans/" + kMrdsPlanName;

Json verbDeploymentsOf(ApiHarness& h) { return h.get(kVerbPlanPath + "/deployments").json()["items"]; }

}  // namespace

TEST_CASE("api: scale adds the current deployment at another size, with the next free id") {
  ApiHarness h;
  addInventoryAndPlan(h);
  Json before = h.everything();
  CHECK(h.post(kVerbPlanPath + "/scale", R"({"instances": 3})", "application/json", kOperatorToken).status == 409);
  CHECK(h.everything() == before);  // no deployment to start from yet
  REQUIRE(h.post(kMrdsDeployments, kMrdsDeployment, "application/yaml").status == 201);

  before = h.everything();
  CHECK(h.post(kVerbPlanPath + "/scale", R"({"instances": 3})", "application/json", kViewerToken).status == 403);
  Reply missing = h.post(kVerbPlanPath + "/scale", R"({})", "application/json", kOperatorToken);
  CHECK(missing.status == 400);
  CHECK(missing.detailNames("instances"));
  CHECK(h.post(kVerbPlanPath + "/scale", R"({"instances": -1})", "application/json", kOperatorToken).status == 400);
  CHECK(h.post(kVerbPlanPath + "/scale", R"({"instances": 10001})", "application/json", kOperatorToken).status == 400);
  CHECK(h.post(kVerbPlanPath + "/scale", R"({"instances": "3"})", "application/json", kOperatorToken).status == 400);
  CHECK(h.post(kVerbPlanPath + "/scale", R"({"instances": 3, "size": 2})", "application/json", kOperatorToken).status ==
        400);
  Reply same = h.post(kVerbPlanPath + "/scale", R"({"instances": 1})", "application/json", kOperatorToken);
  CHECK(same.status == 409);
  CHECK(same.body.find("nothing to change") != std::string::npos);
  CHECK(h.post("/v1/plans/nope/scale", R"({"instances": 3})", "application/json", kOperatorToken).status == 404);
  CHECK(h.post(kVerbPlanPath + "/scale", R"({"instances": 3, "deployment_id": "deployment-1"})", "application/json",
               kOperatorToken)
            .status == 409);
  CHECK(h.everything() == before);

  Reply scaled = h.post(kVerbPlanPath + "/scale", R"({"instances": 3})", "application/json", kOperatorToken);
  REQUIRE(scaled.status == 201);
  Json added = scaled.json();
  CHECK(added["deployment_id"] == "deployment-2");
  CHECK(added["from_deployment"] == "deployment-1");
  CHECK(added["instance_count"] == 3);
  CHECK(added["added_by"] == kOperatorName);
  CHECK(added["state"] == "PENDING");
  CHECK(added["payload_coordinates"][0]["coordinates"]["image"] == "nginx:latest");

  Reply named = h.post(kVerbPlanPath + "/scale", R"({"instances": 5, "deployment_id": "wide"})", "application/json",
                       kOperatorToken);
  REQUIRE(named.status == 201);
  CHECK(named.json()["deployment_id"] == "wide");
  CHECK(named.json()["from_deployment"] == "deployment-2");
  CHECK(verbDeploymentsOf(h).size() == 3);
}

TEST_CASE("api: set-image adds the current deployment with payloads on new images, a tag keeping the repository") {
  ApiHarness h;
  addInventoryAndPlan(h);
  REQUIRE(h.post(kMrdsDeployments, kMrdsDeployment, "application/yaml").status == 201);

  Json before = h.everything();
  Reply bad = h.post(kVerbPlanPath + "/set-image", R"({"images": {"web": "1.2", "nginx-payload": 7}})",
                     "application/json", kOperatorToken);
  CHECK(bad.status == 400);
  CHECK(bad.detailNames("images.web"));
  CHECK(bad.detailNames("images.nginx-payload"));
  CHECK(bad.body.find("its payloads: nginx-payload") != std::string::npos);
  CHECK(h.post(kVerbPlanPath + "/set-image", R"({"images": {}})", "application/json", kOperatorToken).status == 400);
  CHECK(h.post(kVerbPlanPath + "/set-image", R"({"images": "nginx:1"})", "application/json", kOperatorToken).status ==
        400);
  CHECK(h.post(kVerbPlanPath + "/set-image", R"({"images": {"nginx-payload": "latest"}})", "application/json",
               kOperatorToken)
            .status == 409);  // nginx:latest already
  CHECK(h.everything() == before);

  Reply tagged = h.post(kVerbPlanPath + "/set-image", R"({"images": {"nginx-payload": "1.27"}})", "application/json",
                        kOperatorToken);
  REQUIRE(tagged.status == 201);
  CHECK(tagged.json()["deployment_id"] == "deployment-2");
  CHECK(tagged.json()["payload_coordinates"][0]["coordinates"]["image"] == "nginx:1.27");
  CHECK(tagged.json()["instance_count"] == 1);

  Reply full = h.post(kVerbPlanPath + "/set-image", R"({"images": {"nginx-payload": "registry:5000/nginx:1.28"}})",
                      "application/json", kOperatorToken);
  REQUIRE(full.status == 201);
  CHECK(full.json()["deployment_id"] == "deployment-3");
  CHECK(full.json()["payload_coordinates"][0]["coordinates"]["image"] == "registry:5000/nginx:1.28");
  Reply retag = h.post(kVerbPlanPath + "/set-image", R"({"images": {"nginx-payload": "1.29"}})", "application/json",
                       kOperatorToken);
  REQUIRE(retag.status == 201);
  CHECK(retag.json()["payload_coordinates"][0]["coordinates"]["image"] == "registry:5000/nginx:1.29");
}
