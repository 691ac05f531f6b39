// Dry runs over real HTTP (docs/api.md#dry-runs): ?dry_run=true on every route that applies
// something answers what it would do, with the same checks and errors as the real request,
// and writes nothing.

#include <doctest/doctest.h>

#include <string>

#include "tests/api/api_test_support.h"

using namespace tide;
using namespace tide::testing;

namespace {

// The change about `name` of `kind` in a manifest dry run, or null.
Json changeOf(const Json& diff, const std::string& kind, const std::string& name) {
  for (const Json& change : diff["changes"]) {
    if (change["kind"] == kind && change["name"] == name) return change;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("api: a manifest's dry run says what it would create, change and leave, and writes nothing") {
  ApiHarness h;
  addInventoryAndPlan(h);
  REQUIRE(h.post(kMrdsDeployments, kMrdsDeployment, "application/yaml").status == 201);
  const Json before = h.everything();

  // The MRDS plan with one more port, a new capability and a new plan with a deployment.
  std::string changed_plan = kMrdsPlan;
  changed_plan.replace(changed_plan.find("        port: 80"), 16,
                       "        port: 80\n      - protocol: \"TCP\"\n        port: 81");
  std::string indented;
  for (char c : changed_plan) indented += c == '\n' ? std::string("\n    ") : std::string(1, c);
  const std::string manifest =
      "capabilities:\n  - {name: intel-xeon, type: CPU, score: 10}\n"
      "  - {name: amd-epyc, type: CPU, score: 20}\n"
      "plans:\n  - " +
      indented +
      "\n"
      "deployments:\n"
      "  - {deployment_plan_name: nginx-deployment-plan, deployment_id: deployment-1,"
      " instance_count: 1, payload_coordinates: [{payload_name: nginx-payload, coordinates: {image: \"nginx:1\"}}]}\n"
      "  - {deployment_plan_name: nginx-deployment-plan, deployment_id: deployment-2, instance_count: 2,"
      " payload_coordinates: [{payload_name: nginx-payload, coordinates: {image: \"nginx:2\"}}]}\n";
  Reply reply = h.post("/v1/manifests?dry_run=true&source=fleet.yaml", manifest, "application/yaml");
  REQUIRE_MESSAGE(reply.status == 200, reply.body);
  const Json diff = reply.json();
  CHECK(diff["dry_run"] == true);
  CHECK(diff["applies"] == false);  // records that exist make POST /v1/manifests refuse it
  CHECK(changeOf(diff, "capability", "intel-xeon")["action"] == "exists");
  CHECK(changeOf(diff, "capability", "amd-epyc")["action"] == "create");
  CHECK(changeOf(diff, "capability", "amd-epyc")["location"] == "fleet.yaml:3:5");
  const Json plan = changeOf(diff, "plan", kMrdsPlanName);
  CHECK(plan["action"] == "update");
  CHECK(plan["changed"] == Json{"applications"});
  CHECK(changeOf(diff, "deployment", kMrdsPlanName + "/deployment-1")["action"] == "exists");
  const Json added = changeOf(diff, "deployment", kMrdsPlanName + "/deployment-2");
  REQUIRE(added.is_object());
  CHECK(added["action"] == "create");
  CHECK(added["rollout"]["replaces"]["deployment"] == "deployment-1");
  CHECK(added["rollout"]["instance_count"] == 2);
  CHECK(added["rollout"]["approvals"].is_null());  // this host runs no policies, and says so
  CHECK(added["rollout"]["approvals_note"].get<std::string>().find("without scripts") != std::string::npos);
  CHECK(h.everything() == before);

  SUBCASE("the same errors as the real apply, located in the file") {
    Reply bad = h.post("/v1/manifests?dry_run=true&source=fleet.yaml",
                       "nodes:\n  - {name: n9, cluster: nowhere, update_domain: ud}\n", "application/yaml");
    CHECK(bad.status >= 400);
    CHECK_MESSAGE(bad.body.find("fleet.yaml:2:") != std::string::npos, bad.body);
    CHECK(h.post("/v1/manifests?dry_run=maybe", manifest, "application/yaml").detailNames("dry_run"));
    CHECK(h.everything() == before);
  }
}

TEST_CASE("api: dry runs of a plan's create, update, scale and set-image answer as the real call and write nothing") {
  ApiHarness h;
  REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
  Reply created = h.post("/v1/plans?dry_run=true", kMrdsPlan, "application/yaml");
  REQUIRE_MESSAGE(created.status == 200, created.body);
  CHECK(created.json()["dry_run"] == true);
  CHECK(created.json()["name"] == kMrdsPlanName);
  CHECK(h.get("/v1/plans/" + kMrdsPlanName).status == 404);

  REQUIRE(h.post("/v1/plans", kMrdsPlan, "application/yaml").status == 201);
  REQUIRE(h.post(kMrdsDeployments, kMrdsDeployment, "application/yaml").status == 201);
  const Json before = h.everything();

  std::string changed = kMrdsPlan;
  changed.replace(changed.find("cores: 4"), 8, "cores: 2");
  httplib::Client client = h.client();
  Reply updated =
      toReply(client.Put(("/v1/plans/" + kMrdsPlanName + "?dry_run=true").c_str(), changed, "application/yaml"));
  REQUIRE_MESSAGE(updated.status == 200, updated.body);
  CHECK(updated.json()["changed"] == Json{"applications"});
  CHECK(updated.json()["dry_run"] == true);

  Reply scaled = h.post("/v1/plans/" + kMrdsPlanName + "/scale?dry_run=true", R"({"instances": 4})");
  REQUIRE_MESSAGE(scaled.status == 200, scaled.body);
  CHECK(scaled.json()["instance_count"] == 4);
  CHECK(scaled.json()["from_deployment"] == "deployment-1");
  CHECK(scaled.json()["rollout"]["replaces"]["deployment"] == "deployment-1");

  Reply imaged =
      h.post("/v1/plans/" + kMrdsPlanName + "/set-image?dry_run=true", R"({"images": {"nginx-payload": "1.25"}})");
  REQUIRE_MESSAGE(imaged.status == 200, imaged.body);
  CHECK(imaged.json()["payload_coordinates"][0]["coordinates"]["image"] == "nginx:1.25");

  // A dry run refuses what the real call refuses.
  Reply same = h.post("/v1/plans/" + kMrdsPlanName + "/scale?dry_run=true", R"({"instances": 1})");
  CHECK(same.status == 409);
  CHECK(h.everything() == before);
}
