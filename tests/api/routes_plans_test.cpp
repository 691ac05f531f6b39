// Plans (and their show view), deployments, instances and operations over HTTP.

#include <doctest/doctest.h>

#include <string>

#include "host/core/embedded.h"
#include "tests/api/api_test_support.h"

using namespace tide;
using namespace tide::testing;

TEST_CASE("api: plans round trip from the MRDS deployment-plan file") {
  ApiHarness h;
  REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
  Reply created = h.post("/v1/plans", kMrdsPlan, "application/yaml");
  REQUIRE(created.status == 201);
  Json plan = created.json();
  CHECK(plan["name"] == kMrdsPlanName);
  CHECK(plan["namespace"] == "nginx-namespace");
  CHECK(plan["service_name"] == "nginx-service");
  CHECK(plan["matching_capabilities"][0] ==
        Json{{"type", "GPU"}, {"comparator", "GTE"}, {"names", {"nvidia-v100", "nvidia-p100"}}});
  CHECK(plan["applications"][0]["resources"] == Json{{"cores", 4.0}, {"memory_gib", 64.0}});
  CHECK(created.header("ETag") == "1");

  // The same plan as JSON in the wire's snake_case, under another name and namespace.
  Json other = {{"name", "web"},
                {"namespace", "web-ns"},
                {"service_name", "web"},
                {"applications", {{{"payload_name", "web"}, {"resources", {{"cores", 1}, {"memory_gib", 1}}}}}}};
  REQUIRE(h.post("/v1/plans", other.dump()).status == 201);

  Json all = h.get("/v1/plans").json();
  REQUIRE(all["items"].size() == 2);
  Json web_only = h.get("/v1/plans?namespace=web-ns").json();
  REQUIRE(web_only["items"].size() == 1);
  CHECK(web_only["items"][0]["name"] == "web");
  CHECK(h.get("/v1/plans?state=INACTIVE").json()["items"].empty());

  Json before = h.everything();
  Reply mistyped_capability = h.post("/v1/plans", R"({"name":"gpu","namespace":"n","service_name":"s",
      "matching_capabilities":[{"type":"CPU","comparator":"IN","names":["nvidia-v100"]}],
      "applications":[{"payload_name":"p","resources":{"cores":1,"memory":1}}]})");
  CHECK(mistyped_capability.status == 422);
  CHECK(h.post("/v1/plans", kMrdsPlan, "application/yaml").status == 409);
  Reply missing = h.post("/v1/plans", R"({"name":"half"})");
  CHECK(missing.status == 400);
  CHECK(missing.detailNames("namespace"));
  CHECK(h.everything() == before);

  CHECK(h.del("/v1/plans/web").status == 200);
  CHECK(h.get("/v1/plans/web").status == 404);
}

TEST_CASE("api: a plan's placement is returned by create, get, list and the show view") {
  ApiHarness h;
  REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
  Reply defaults = h.post("/v1/plans", kMrdsPlan, "application/yaml");
  REQUIRE(defaults.status == 201);
  CHECK(defaults.json()["placement"] == Json{{"max_per_node", 1}, {"bin_pack", false}});

  Json packed = {{"name", "batch"},
                 {"namespace", "batch-ns"},
                 {"service_name", "batch"},
                 {"placement", {{"max_per_node", 3}, {"bin_pack", true}}},
                 {"applications", {{{"payload_name", "job"}, {"resources", {{"cores", 1}, {"memory_gib", 1}}}}}}};
  Reply created = h.post("/v1/plans", packed.dump());
  REQUIRE(created.status == 201);
  const Json placement = {{"max_per_node", 3}, {"bin_pack", true}};
  CHECK(created.json()["placement"] == placement);
  CHECK(h.get("/v1/plans/batch", kViewerToken).json()["plan"]["placement"] == placement);
  CHECK(h.get("/v1/plans?namespace=batch-ns").json()["items"][0]["placement"] == placement);

  // The document describes the field the views return.
  Json schema = Json::parse(embedded::openapiDocument().front().text)["components"]["schemas"]["Plan"];
  CHECK(schema["properties"]["placement"]["properties"]["max_per_node"]["maximum"] == model::kMaxPerNodeLimit);
  CHECK(schema["properties"]["placement"]["properties"]["bin_pack"]["type"] == "boolean");

  Json before = h.everything();
  packed["name"] = "too-many";
  packed["placement"]["max_per_node"] = 1001;
  Reply refused = h.post("/v1/plans", packed.dump());
  CHECK(refused.status == 400);
  CHECK(refused.detailNames("placement.max_per_node"));
  CHECK(h.everything() == before);
}

TEST_CASE("api: deployments are added to the plan named in the path") {
  ApiHarness h;
  addInventoryAndPlan(h);

  Reply mrds = h.post(kMrdsDeployments, kMrdsDeployment, "application/yaml", kOperatorToken);
  REQUIRE(mrds.status == 201);
  Json d1 = mrds.json();
  CHECK(d1["plan"] == kMrdsPlanName);
  CHECK(d1["deployment_id"] == "deployment-1");
  CHECK(d1["state"] == "PENDING");
  CHECK(d1["payload_coordinates"][0]["coordinates"] == Json{{"image", "nginx:latest"}});

  // Without a plan in the body, the path names it; line numbers still point at the body.
  Json no_plan = {
      {"deployment_id", "deployment-2"},
      {"payload_coordinates", {{{"payload_name", "nginx-payload"}, {"coordinates", {{"image", "nginx:1.27"}}}}}},
      {"instance_count", 2}};
  Reply json = h.post(kMrdsDeployments, no_plan.dump(), "application/json", kOperatorToken);
  REQUIRE(json.status == 201);
  CHECK(json.json()["plan"] == kMrdsPlanName);
  Reply yaml = h.post(kMrdsDeployments,
                      "deployment_id: deployment-3\npayload_coordinates:\n  - payload_name: nginx-payload\n"
                      "    coordinates: {image: \"nginx:1.28\"}\ninstance_count: 1",
                      "application/yaml");
  REQUIRE(yaml.status == 201);

  Json before = h.everything();
  std::string other_plan = std::string(kMrdsDeployment);
  other_plan.replace(other_plan.find(kMrdsPlanName), kMrdsPlanName.size(), "some-other-plan");
  Reply mismatch = h.post(kMrdsDeployments, other_plan, "application/yaml");
  CHECK(mismatch.status == 400);
  CHECK(mismatch.detailNames("deployment_plan_name"));
  CHECK(mismatch.json()["error"]["details"][0]["location"] == "request body:1:23");
  Reply mismatch_json = h.post(kMrdsDeployments, R"({"plan":"x","deployment_id":"d9","instance_count":1,
      "payload_coordinates":[{"payload_name":"nginx-payload","coordinates":{"image":"a"}}]})");
  CHECK(mismatch_json.status == 400);
  CHECK(mismatch_json.detailNames("plan"));
  Reply bad_field =
      h.post(kMrdsDeployments, "deployment_id: d9\npayload_coordinates: []\ninstance_count: many\n", "application/yaml");
  CHECK(bad_field.status == 400);
  CHECK(bad_field.detailNames("instance_count"));
  CHECK(bad_field.json()["error"]["message"].get<std::string>().find("request body:") == 0);
  CHECK(h.post(kMrdsDeployments, kMrdsDeployment, "application/yaml").status == 409);
  CHECK(h.post("/v1/plans/no-such-plan/deployments", kMrdsDeployment, "application/yaml").status == 404);
  CHECK(h.everything() == before);

  Json listed = h.get(kMrdsDeployments).json();
  REQUIRE(listed["items"].size() == 3);
  CHECK(listed["items"][0]["deployment_id"] == "deployment-1");
  Json page = h.get(kMrdsDeployments + "?limit=2").json();
  CHECK(page["items"].size() == 2);
  CHECK(page.contains("next_after"));
  CHECK(h.get(kMrdsDeployments + "?state=PENDING").json()["items"].size() == 3);
  CHECK(h.get("/v1/plans/no-such-plan/deployments").status == 404);

  Reply got = h.get(kMrdsDeployments + "/deployment-2");
  REQUIRE(got.status == 200);
  CHECK(got.json()["instance_count"] == 2);
  CHECK(h.get(kMrdsDeployments + "/deployment-9").status == 404);

  Reply stale = h.post(kMrdsDeployments + "/deployment-2/cancel", "", "", kOperatorToken, {{"If-Match", "7"}});
  CHECK(stale.status == 409);
  Reply cancelled =
      h.post(kMrdsDeployments + "/deployment-2/cancel", "", "", kOperatorToken, {{"If-Match", got.header("ETag")}});
  REQUIRE(cancelled.status == 200);
  CHECK(cancelled.json()["state"] == "CANCELLED");
  CHECK(h.post(kMrdsDeployments + "/deployment-2/cancel", "", "", kOperatorToken).status == 409);
  CHECK(h.get(kMrdsDeployments + "?state=CANCELLED").json()["items"].size() == 1);
}

TEST_CASE("api: the plan show view summarises deployments, instances and operations") {
  ApiHarness h;
  addInventoryAndPlan(h);
  REQUIRE(h.post(kMrdsDeployments, kMrdsDeployment, "application/yaml").status == 201);

  auto meta = [&] {
    auto created = h.ledger->instances().createMetaInstance(kMrdsPlanName, "deployment-1", "test");
    REQUIRE(created.isOk());
    return created->name;
  };
  std::string running = meta(), failed = meta(), waiting = meta(), gone = meta(), leaving = meta();
  REQUIRE(h.ledger->instances().setMetaInstanceState(leaving, model::MetaState::kMarkedForDeletion, std::nullopt, "test").isOk());

  auto r1 = h.ledger->instances().createRuntimeInstance(runtimeOn(running, "kind-worker"), "test");
  REQUIRE(r1.isOk());
  moveRuntime(h, r1->meta.id, {"STARTING", "RUNNING"});
  auto r2 = h.ledger->instances().createRuntimeInstance(runtimeOn(failed, "kind-worker2"), "test");
  REQUIRE(r2.isOk());
  moveRuntime(h, r2->meta.id, {"STARTING", "FAILED"});
  REQUIRE(h.ledger->instances().setMetaInstanceState(gone, model::MetaState::kMarkedForDeletion, std::nullopt, "test").isOk());
  REQUIRE(h.ledger->instances().setMetaInstanceState(gone, model::MetaState::kDeleted, std::nullopt, "test").isOk());

  model::Operation create;
  create.type = model::OperationType::kCreate;
  create.intent = "deployment-1";
  create.meta_instance = running;
  auto op1 = h.ledger->operations().createOperation(create, "test");
  REQUIRE(op1.isOk());
  for (model::OperationState state :
       {model::OperationState::kApproved, model::OperationState::kRunning, model::OperationState::kSucceeded}) {
    REQUIRE(h.ledger->operations().setOperationState(op1->meta.id, state, std::nullopt, "test").isOk());
  }
  model::Operation stop = create;
  stop.type = model::OperationType::kStop;
  REQUIRE(h.ledger->operations().createOperation(stop, "test").isOk());  // the newest of `running`'s two
  create.meta_instance = waiting;
  REQUIRE(h.ledger->operations().createOperation(create, "test").isOk());
  model::Operation restart = create;
  restart.type = model::OperationType::kRestart;
  restart.meta_instance = failed;
  auto op3 = h.ledger->operations().createOperation(restart, "test");
  REQUIRE(op3.isOk());
  REQUIRE(
      h.ledger->operations().setOperationState(op3->meta.id, model::OperationState::kPendingApproval, std::nullopt, "test").isOk());

  Reply shown = h.get("/v1/plans/" + kMrdsPlanName, kViewerToken);
  REQUIRE(shown.status == 200);
  CHECK(shown.header("ETag") == "1");
  Json view = shown.json();
  CHECK(view["plan"]["name"] == kMrdsPlanName);
  REQUIRE(view["deployments"].size() == 1);
  CHECK(view["deployments"][0]["deployment_id"] == "deployment-1");
  // Counted over the whole plan; by deployment without the instance marked for deletion.
  const Json staying = {{"total", 3}, {"running", 1}, {"pending", 1}, {"failed", 1}, {"ready", 0}};
  CHECK(view["instance_summary"] == Json{{"total", 4},
                                         {"running", 1},
                                         {"pending", 2},
                                         {"failed", 1},
                                         {"ready", 0},
                                         {"by_deployment", {{"deployment-1", staying}}}});

  Json summary = view["operations_summary"];
  for (const char* type : {"CREATE", "UPDATE", "RELOCATE", "STOP", "RESTART", "DELETE"}) {
    REQUIRE_MESSAGE(summary.contains(type), type);
    CHECK(summary[type].size() == 8);
  }
  CHECK(summary["CREATE"]["SUCCEEDED"] == 1);
  CHECK(summary["CREATE"]["PENDING"] == 1);
  CHECK(summary["RESTART"]["PENDING_APPROVAL"] == 1);
  CHECK(summary["STOP"]["PENDING"] == 1);
  CHECK(summary["DELETE"]["PENDING"] == 0);

  // Every live instance, with its newest operation only (its history: GET /v1/instances/{name}).
  REQUIRE(view["instances"].size() == 4);
  CHECK_FALSE(view.contains("next_after"));
  Json first = view["instances"][0];
  CHECK(first["meta_instance"]["name"] == running);
  REQUIRE(first["runtime_instances"].size() == 1);
  CHECK(first["runtime_instances"][0]["state"] == "RUNNING");
  REQUIRE(first["operations"].size() == 1);
  CHECK(first["operations"][0]["type"] == "STOP");
  CHECK(view["instances"][2]["meta_instance"]["name"] == waiting);
  CHECK(view["instances"][2]["runtime_instances"].empty());
  CHECK(view["instances"][3]["meta_instance"]["name"] == leaving);
  CHECK(view["instances"][3]["operations"].empty());

  // Instances come a page at a time; the summaries are the plan's on every page.
  Json page1 = h.get("/v1/plans/" + kMrdsPlanName + "?limit=3", kViewerToken).json();
  REQUIRE(page1["instances"].size() == 3);
  REQUIRE(page1["next_after"].is_number());
  Json page2 = h.get("/v1/plans/" + kMrdsPlanName + "?limit=3&after=" + page1["next_after"].dump(), kViewerToken).json();
  REQUIRE(page2["instances"].size() == 1);
  CHECK(page2["instances"][0]["meta_instance"]["name"] == leaving);
  CHECK_FALSE(page2.contains("next_after"));
  CHECK(page2["instance_summary"] == view["instance_summary"]);
  Reply bad = h.get("/v1/plans/" + kMrdsPlanName + "?limit=0", kViewerToken);
  CHECK(bad.status == 400);
  CHECK(bad.body.find("limit") != std::string::npos);
  CHECK(h.get("/v1/plans/" + kMrdsPlanName + "?state=RUNNING", kViewerToken).status == 400);

  CHECK(h.get("/v1/plans/nope").status == 404);

  // Instances.
  Json instances = h.get("/v1/instances?plan=" + kMrdsPlanName).json();
  REQUIRE(instances["items"].size() == 5);
  CHECK(instances["items"][0]["meta_instance"]["name"] == running);
  CHECK(instances["items"][0]["runtime_instances"].size() == 1);
  CHECK(h.get("/v1/instances?state=DELETED").json()["items"].size() == 1);
  CHECK(h.get("/v1/instances?limit=3").json()["next_after"].is_number());
  Reply one = h.get("/v1/instances/" + failed);
  REQUIRE(one.status == 200);
  CHECK(one.json()["runtime_instances"][0]["state"] == "FAILED");
  CHECK(one.json()["operations"][0]["type"] == "RESTART");
  CHECK_FALSE(one.header("ETag").empty());
  CHECK(h.get("/v1/instances/nope-123").status == 404);

  // Operations.
  CHECK(h.get("/v1/operations").json()["items"].size() == 4);  // with the STOP
  CHECK(h.get("/v1/operations?type=CREATE").json()["items"].size() == 2);
  CHECK(h.get("/v1/operations?state=PENDING_APPROVAL").json()["items"][0]["meta_instance"] == failed);
  CHECK(h.get("/v1/operations?meta_instance=" + waiting).json()["items"].size() == 1);
  CHECK(h.get("/v1/operations?plan=" + kMrdsPlanName + "&limit=1").json()["items"].size() == 1);
  Reply bad_type = h.get("/v1/operations?type=EXPLODE");
  CHECK(bad_type.status == 400);
  CHECK(bad_type.detailNames("type"));
  Reply op = h.get("/v1/operations/" + std::to_string(op1->meta.id));
  REQUIRE(op.status == 200);
  CHECK(op.json()["state"] == "SUCCEEDED");
  CHECK(op.header("ETag") == std::to_string(op.json()["metadata"]["generation"].get<int64_t>()));
  CHECK(h.get("/v1/operations/999").status == 404);
  Reply bad_id = h.get("/v1/operations/abc");
  CHECK(bad_id.status == 400);
  CHECK(bad_id.detailNames("id"));

  // A plan with live instances cannot be deleted.
  Json before = h.everything();
  CHECK(h.del("/v1/plans/" + kMrdsPlanName).status == 409);
  CHECK(h.everything() == before);
}
