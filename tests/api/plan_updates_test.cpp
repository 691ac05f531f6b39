// Changing a plan over HTTP (PUT /v1/plans/{name}, docs/api.md#changing-a-plan), and plans
// and nodes that name capabilities nobody declared (docs/mrds.md), over real loopback HTTP.

#include <doctest/doctest.h>

#include <string>

#include "tests/api/api_test_support.h"

using namespace tide;
using namespace tide::testing;

namespace {

// kMrdsPlan with its one application's cores and its strategy as given.
std::string mrdsPlanWith(int cores, const std::string& extra = "") {
  std::string plan = kMrdsPlan;
  plan.replace(plan.find("cores: 4"), 8, "cores: " + std::to_string(cores));
  return plan + extra;
}

Reply put(const ApiHarness& h, const std::string& path, const std::string& body, const std::string& content_type,
          const std::string& token = kAdminToken, const httplib::Headers& headers = {}) {
  return toReply(h.client(token).Put(path.c_str(), headers, body, content_type.c_str()));
}

const std::string kPlanPath = "/v1/plans/" + kMrdsPlanName;

// The newest event of `kind`, or null.
Json lastEvent(const ApiHarness& h, const std::string& kind) {
  Json events = h.get("/v1/events?limit=1000&kind=" + kind).json()["items"];
  return events.empty() ? Json(nullptr) : events.back();
}

// A live instance of deployment-1 of the MRDS plan, running on `node`.
void runInstanceOn(ApiHarness& h, const std::string& node) {
  auto meta = h.ledger->instances().createMetaInstance(kMrdsPlanName, "deployment-1", "test");
  REQUIRE(meta.isOk());
  auto runtime = h.ledger->instances().createRuntimeInstance(runtimeOn(meta->name, node), "test");
  REQUIRE(runtime.isOk());
  moveRuntime(h, runtime->meta.id, {"STARTING", "RUNNING"});
}

}  // namespace

TEST_CASE("api: PUT changes a plan for the next deployment, those added before keep theirs") {
  ApiHarness h;
  addInventoryAndPlan(h);
  REQUIRE(h.post(kMrdsDeployments, kMrdsDeployment, "application/yaml").status == 201);

  const std::string changed = mrdsPlanWith(8, "strategy: {script: canary}\nplacement: {maxPerNode: 2}\n");
  Reply updated = put(h, kPlanPath, changed, "application/yaml", kOperatorToken, {{"If-Match", "1"}});
  REQUIRE_MESSAGE(updated.status == 200, updated.body);
  Json plan = updated.json();
  CHECK(plan["changed"] == Json{"applications", "strategy", "placement"});
  CHECK(plan["warnings"] == Json::array());
  CHECK(updated.header("ETag") == "2");
  CHECK(plan["applications"][0]["resources"]["cores"] == 8.0);
  CHECK(plan["strategy"]["script"] == "canary");
  CHECK(plan["placement"]["max_per_node"] == 2);
  CHECK(h.get(kPlanPath).json()["plan"]["applications"][0]["resources"]["cores"] == 8.0);

  Json event = lastEvent(h, "plan.updated");
  REQUIRE(event.is_object());
  CHECK(event["subject"] == "plan/" + kMrdsPlanName);
  CHECK(event["actor"] == kOperatorName);
  CHECK(event["data"] == Json{{"changed", {"applications", "strategy", "placement"}},
                              {"from_generation", 1},
                              {"generation", 2}});

  // deployment-1 was made with generation 1; one added now is made with generation 2.
  CHECK(h.get(kMrdsDeployments + "/deployment-1").json()["plan_generation"] == 1);
  // Its rollout runs with the strategy of the plan it was made with, and says so.
  CHECK(h.get(kMrdsDeployments + "/deployment-1").json()["strategy_in_force"]["script"] == "rolling");
  std::string second = kMrdsDeployment;
  second.replace(second.find("deployment-1"), 12, "deployment-2");
  Reply added = h.post(kMrdsDeployments, second, "application/yaml");
  REQUIRE(added.status == 201);
  CHECK(added.json()["plan_generation"] == 2);
  CHECK(added.json()["strategy_in_force"]["script"] == "canary");
  auto first = h.ledger->plans().getDeployment(kMrdsPlanName, "deployment-1");
  REQUIRE(first.isOk());
  REQUIRE(first->plan_snapshot != nullptr);
  CHECK(first->plan_snapshot->applications[0].resources.cores == 4);
  CHECK(first->plan_snapshot->strategy.script == "rolling");
  CHECK(first->plan_snapshot->placement.max_per_node == 1);
  auto next = h.ledger->plans().getDeployment(kMrdsPlanName, "deployment-2");
  REQUIRE(next.isOk());
  CHECK(next->plan_snapshot->applications[0].resources.cores == 8);

  // The same plan again changes nothing: no new generation, no event.
  const int64_t seq = h.lastEventSeq();
  Reply same = put(h, kPlanPath, changed, "application/yaml");
  REQUIRE(same.status == 200);
  CHECK(same.json()["changed"] == Json::array());
  CHECK(same.header("ETag") == "2");
  CHECK(h.lastEventSeq() == seq);
}

TEST_CASE("api: PUT with a stale If-Match is 412 and writes nothing") {
  ApiHarness h;
  addInventoryAndPlan(h);
  REQUIRE(put(h, kPlanPath, mrdsPlanWith(6), "application/yaml").status == 200);  // now at generation 2

  Json before = h.everything();
  Reply stale = put(h, kPlanPath, mrdsPlanWith(8), "application/yaml", kAdminToken, {{"If-Match", "\"1\""}});
  CHECK(stale.status == 412);
  CHECK(stale.errorCode() == "precondition_failed");
  CHECK(contains(stale.json()["error"]["message"].get<std::string>(), "the plan is now at 2"));
  Reply stale_query = put(h, kPlanPath + "?generation=1", mrdsPlanWith(8), "application/yaml");
  CHECK(stale_query.status == 412);
  CHECK(h.everything() == before);

  Reply current = put(h, kPlanPath, mrdsPlanWith(8), "application/yaml", kAdminToken, {{"If-Match", "2"}});
  CHECK(current.status == 200);
  CHECK(current.header("ETag") == "3");
}

TEST_CASE("api: PUT refuses bad input by name, and a viewer, and writes nothing") {
  ApiHarness h;
  addInventoryAndPlan(h);
  Json before = h.everything();

  std::string moved = kMrdsPlan;
  moved.replace(moved.find("nginx-namespace"), 15, "prod-namespace");
  std::string wrong_type = kMrdsPlan;
  wrong_type.replace(wrong_type.find("\"GPU\""), 5, "\"CPU\"");
  struct Refusal {
    std::string path, body;
    int status;
    std::string field;
  };
  for (const Refusal& refusal : {Refusal{"/v1/plans/other", kMrdsPlan, 400, "name"},
                                 Refusal{kPlanPath, moved, 422, "namespace"},
                                 Refusal{kPlanPath, mrdsPlanWith(4, "colour: blue\n"), 400, "colour"},
                                 Refusal{kPlanPath, wrong_type, 422, "matching_capabilities[0].names"}}) {
    Reply reply = put(h, refusal.path, refusal.body, "application/yaml");
    CHECK_MESSAGE(reply.status == refusal.status, refusal.field);
    CHECK_MESSAGE(reply.detailNames(refusal.field), reply.body);
  }
  CHECK(put(h, kPlanPath, mrdsPlanWith(8), "application/yaml", kViewerToken).status == 403);
  CHECK(put(h, "/v1/plans/no-such-plan", "name: no-such-plan\nnamespace: n\nserviceName: s\napplications:\n"
                                         "  - {payloadName: p, resources: {cores: 1, memory: 1}}\n",
            "application/yaml")
            .status == 404);
  CHECK(h.everything() == before);
}

TEST_CASE("api: a PUT that would strand running instances is 422 naming the field and the instances") {
  ApiHarness h;
  addInventoryAndPlan(h);
  REQUIRE(h.post(kMrdsDeployments, kMrdsDeployment, "application/yaml").status == 201);
  runInstanceOn(h, "kind-worker");  // nvidia-v100 and intel-xeon
  const std::string instance = h.get("/v1/instances").json()["items"][0]["meta_instance"]["name"];
  Json before = h.everything();

  // An IN rule kind-worker does not meet: it has nvidia-v100, not nvidia-p100.
  std::string p100_only = kMrdsPlan;
  p100_only.replace(p100_only.find("comparator: \"gte\""), 17, "comparator: \"in\"");
  p100_only.replace(p100_only.find("      - \"nvidia-v100\"\n"), 22, "");
  Reply stranding = put(h, kPlanPath, p100_only, "application/yaml");
  CHECK(stranding.status == 422);
  REQUIRE(stranding.detailNames("matching_capabilities[0]"));
  const std::string message = stranding.json()["error"]["message"];
  CHECK(contains(message, instance + " on kind-worker"));
  CHECK(contains(message, "GPU IN nvidia-p100"));

  // The application its instances run, renamed away.
  std::string renamed = kMrdsPlan;
  renamed.replace(renamed.find("nginx-payload"), 13, "web-payload");
  Reply removing = put(h, kPlanPath, renamed, "application/yaml");
  CHECK(removing.status == 422);
  REQUIRE(removing.detailNames("applications"));
  CHECK(contains(removing.json()["error"]["message"].get<std::string>(),
                 "removing application 'nginx-payload' would strand the instances that run it: " + instance));
  CHECK(h.everything() == before);

  // A rule the instance's node meets is applied.
  std::string with_cpu = kMrdsPlan;
  with_cpu.replace(with_cpu.find("applications:"), 0,
                   "  - {capabilityType: CPU, comparator: eq, capabilityNames: [intel-xeon]}\n");
  Reply kept = put(h, kPlanPath, with_cpu, "application/yaml");
  CHECK_MESSAGE(kept.status == 200, kept.body);
  CHECK(kept.json()["changed"] == Json{"matching_capabilities"});
}

TEST_CASE("api: a plan naming capabilities nobody declared is accepted with warnings and an event") {
  ApiHarness h;
  const std::string plan = R"(name: gpu
namespace: ml
serviceName: trainer
matchingComputeCapabilities:
  - {capabilityType: GPU, comparator: gte, capabilityNames: [nvidia-v100]}
applications:
  - {payloadName: p, resources: {cores: 1, memory: 1}}
)";
  Reply created = h.post("/v1/plans", plan, "application/yaml");
  REQUIRE_MESSAGE(created.status == 201, created.body);
  Json warnings = created.json()["warnings"];
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0]["field"] == "matching_capabilities[0].names");
  CHECK(contains(warnings[0]["message"].get<std::string>(), "capability 'nvidia-v100' is not declared"));
  Json event = lastEvent(h, "plan.warning");
  REQUIRE(event.is_object());
  CHECK(event["subject"] == "plan/gpu");
  CHECK(event["data"]["warnings"][0]["field"] == "matching_capabilities[0].names");

  // In a manifest, each warning is placed at the value it is about, named as written.
  Reply applied = h.post("/v1/manifests", "plans:\n  - name: gpu2\n    namespace: ml\n    serviceName: t2\n"
                                          "    matchingComputeCapabilities:\n"
                                          "      - {capabilityType: GPU, comparator: in, capabilityNames: [tpu]}\n"
                                          "    applications:\n"
                                          "      - {payloadName: p, resources: {cores: 1, memory: 1}}\n",
                         "application/yaml");
  REQUIRE_MESSAGE(applied.status == 201, applied.body);
  REQUIRE(applied.json()["warnings"].size() == 1);
  CHECK(applied.json()["warnings"][0]["location"] == "request body:6:64");
  CHECK(applied.json()["warnings"][0]["field"] == "plans[0].matchingComputeCapabilities[0].capabilityNames");
}

TEST_CASE("api: a node without a cluster joins the default cluster, undeclared capabilities are warned about") {
  ApiHarness h;
  Reply created = h.post("/v1/nodes",
                         "name: kind-worker\nupdateDomain: ud-1\ntotalResources: {cores: 8, memory: 16}\n"
                         "capabilityIDs: [capability-1]\n",
                         "application/yaml");
  REQUIRE_MESSAGE(created.status == 201, created.body);
  Json node = created.json();
  CHECK(node["cluster"] == "default");
  CHECK(node["state"] == "ALLOCATED");
  REQUIRE(node["warnings"].size() == 1);
  CHECK(node["warnings"][0]["field"] == "capabilities[0]");
  CHECK(lastEvent(h, "node.warning")["subject"] == "node/kind-worker");
  Reply cluster = h.get("/v1/clusters/default");
  REQUIRE(cluster.status == 200);
  CHECK(cluster.json()["driver_kind"] == "process");

  // A second one joins the same cluster; a named cluster must still exist.
  CHECK(h.post("/v1/nodes", "name: kind-worker2\nupdateDomain: ud-1\n", "application/yaml").json()["cluster"] ==
        "default");
  Reply unknown = h.post("/v1/nodes", "name: n3\nupdateDomain: ud-1\ncluster: nowhere\n", "application/yaml");
  CHECK(unknown.status == 422);
  CHECK(unknown.detailNames("cluster"));
}
