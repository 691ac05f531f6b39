// Capabilities, clusters, nodes and whole manifests over HTTP.

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/api/api_test_support.h"

using namespace tide;
using namespace tide::testing;

namespace {

std::vector<std::string> names(const Json& page) {
  std::vector<std::string> out;
  for (const Json& item : page["items"]) out.push_back(item["name"]);
  return out;
}

// GET /v1/nodes/{name}, read twice (the first read may fill the API's cache, the second
// may be served from it), shows what the ledger says of the node right now.
void checkNodeAsLedgerSays(const ApiHarness& h, const std::string& name) {
  Result<model::Node> stored = h.ledger->inventory().getNode(name);
  REQUIRE(stored.isOk());
  for (int read = 0; read < 2; ++read) {
    Reply shown = h.get("/v1/nodes/" + name, kViewerToken);
    REQUIRE(shown.status == 200);
    Json record = shown.json();
    record.erase("drain");  // a DRAINING node's progress, checked on its own
    CHECK(record == Json(stored.value()));
    CHECK(shown.header("ETag") == std::to_string(stored->meta.generation));
  }
}

}  // namespace

TEST_CASE("api: capabilities round trip in JSON and YAML") {
  ApiHarness h;
  Reply created = h.post("/v1/capabilities", R"({"name":"nvidia-a100","type":"gpu","score":90})");
  REQUIRE(created.status == 201);
  Json a100 = created.json();
  CHECK(a100["name"] == "nvidia-a100");
  CHECK(a100["type"] == "GPU");
  CHECK(a100["score"] == 90);
  CHECK(created.header("ETag") == std::to_string(a100["metadata"]["generation"].get<int64_t>()));

  REQUIRE(h.post("/v1/capabilities", "name: intel-xeon\ntype: CPU\nscore: 10\n", "application/yaml").status == 201);
  REQUIRE(h.post("/v1/capabilities", "name: amd-epyc\ntype: CPU\n", "text/yaml").status == 201);

  Reply got = h.get("/v1/capabilities/nvidia-a100");
  CHECK(got.status == 200);
  CHECK(got.json() == a100);

  CHECK(names(h.get("/v1/capabilities").json()) == std::vector<std::string>{"nvidia-a100", "intel-xeon", "amd-epyc"});
  CHECK(names(h.get("/v1/capabilities?type=cpu").json()) == std::vector<std::string>{"intel-xeon", "amd-epyc"});

  Reply deleted = h.del("/v1/capabilities/amd-epyc");
  CHECK(deleted.status == 200);
  CHECK(deleted.json() == Json{{"deleted", true}, {"kind", "capability"}, {"name", "amd-epyc"}});
  CHECK(h.get("/v1/capabilities/amd-epyc").status == 404);
  CHECK(h.del("/v1/capabilities/amd-epyc").status == 404);
}

TEST_CASE("api: lists page with limit and after") {
  ApiHarness h;
  for (int i = 0; i < 5; ++i) {
    REQUIRE(h.post("/v1/capabilities", R"({"name":"cap-)" + std::to_string(i) + R"(","type":"GPU"})").status == 201);
  }
  Json first = h.get("/v1/capabilities?limit=2").json();
  CHECK(names(first) == std::vector<std::string>{"cap-0", "cap-1"});
  REQUIRE(first.contains("next_after"));
  Json second = h.get("/v1/capabilities?limit=2&after=" + std::to_string(first["next_after"].get<int64_t>())).json();
  CHECK(names(second) == std::vector<std::string>{"cap-2", "cap-3"});
  Json last = h.get("/v1/capabilities?limit=2&after=" + std::to_string(second["next_after"].get<int64_t>())).json();
  CHECK(names(last) == std::vector<std::string>{"cap-4"});
  CHECK_FALSE(last.contains("next_after"));
}

TEST_CASE("api: bad query parameters are 400 naming the parameter") {
  ApiHarness h;
  for (const char* query : {"limit=0", "limit=1001", "limit=ten", "limit=", "after=-1", "after=1.5"}) {
    Reply r = h.get(std::string("/v1/nodes?") + query);
    CHECK_MESSAGE(r.status == 400, query);
    std::string param = std::string(query).substr(0, std::string(query).find('='));
    CHECK_MESSAGE(r.detailNames(param), query << " -> " << r.body);
  }
  Reply unknown = h.get("/v1/nodes?colour=blue");
  CHECK(unknown.status == 400);
  CHECK(unknown.detailNames("colour"));
  Reply bad_state = h.get("/v1/nodes?state=SLEEPING");
  CHECK(bad_state.status == 400);
  CHECK(bad_state.detailNames("state"));
  CHECK(h.get("/v1/nodes/x?limit=1").status == 400);
  CHECK(h.del("/v1/nodes/x?force=1").status == 400);
}

TEST_CASE("api: a field problem is 400 with details naming the field, nothing is written") {
  ApiHarness h;
  REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
  Json before = h.everything();

  Reply bad_score = h.post("/v1/capabilities", R"({"name":"x","type":"GPU","score":"high"})");
  CHECK(bad_score.status == 400);
  CHECK(bad_score.detailNames("score"));

  Reply bad_node = h.post("/v1/nodes", "name: n9\nupdateDomain: ud\ntotalResources:\n  cores: -1\n  memory: 8\n",
                          "application/yaml");
  CHECK(bad_node.status == 400);
  CHECK(bad_node.detailNames("totalResources.cores"));
  CHECK(bad_node.json()["error"]["details"][0]["location"] == "request body:4:10");

  Reply unknown_key = h.post("/v1/clusters", R"({"name":"c2","colour":"blue"})");
  CHECK(unknown_key.status == 400);
  CHECK(unknown_key.detailNames("colour"));

  Reply bad_name = h.post("/v1/clusters", R"({"name":"Not A Name"})");
  CHECK(bad_name.status == 400);
  CHECK(bad_name.detailNames("name"));

  CHECK(h.everything() == before);
}

TEST_CASE("api: duplicates and unknown references are 409 and 422, nothing is written") {
  ApiHarness h;
  REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
  Json before = h.everything();

  Reply duplicate = h.post("/v1/capabilities", R"({"name":"nvidia-v100","type":"GPU"})");
  CHECK(duplicate.status == 409);
  CHECK(duplicate.errorCode() == "already_exists");
  CHECK(h.post("/v1/clusters", R"({"name":"local"})").status == 409);

  Reply unknown_cluster = h.post(
      "/v1/nodes", R"({"name":"n3","cluster":"nowhere","update_domain":"ud-3","total":{"cores":8,"memory":32}})");
  CHECK(unknown_cluster.status == 422);
  CHECK(unknown_cluster.errorCode() == "unprocessable");
  Reply over_reserved = h.post("/v1/nodes", R"({"name":"n3","cluster":"local","update_domain":"ud-3",
                             "total":{"cores":8,"memory":32},"system_reserved":{"cores":9,"memory":1}})");
  CHECK(over_reserved.status == 400);

  CHECK(h.everything() == before);
}

TEST_CASE("api: clusters round trip, activate and deactivate with If-Match") {
  ApiHarness h;
  Reply created = h.post("/v1/clusters", "name: edge\ndriver: fault\nconfig:\n  seed: 7\n", "application/yaml");
  REQUIRE(created.status == 201);
  CHECK(created.json()["driver_kind"] == "fault");
  CHECK(created.json()["driver_config"] == Json{{"seed", 7}});
  CHECK(created.json()["state"] == "ACTIVE");
  std::string generation = created.header("ETag");
  REQUIRE_FALSE(generation.empty());

  Reply off = h.post("/v1/clusters/edge/deactivate", "", "", kAdminToken, {{"If-Match", generation}});
  REQUIRE(off.status == 200);
  CHECK(off.json()["state"] == "INACTIVE");
  CHECK(off.header("ETag") != generation);

  Json before = h.everything();
  Reply stale = h.post("/v1/clusters/edge/activate", "", "", kAdminToken, {{"If-Match", generation}});
  CHECK(stale.status == 409);
  CHECK(stale.errorCode() == "conflict");
  Reply stale_query = h.post("/v1/clusters/edge/activate?generation=" + generation, "", "");
  CHECK(stale_query.status == 409);
  CHECK(h.everything() == before);

  Reply bad_tag = h.post("/v1/clusters/edge/activate", "", "", kAdminToken, {{"If-Match", "yesterday"}});
  CHECK(bad_tag.status == 400);
  CHECK(bad_tag.detailNames("If-Match"));

  Reply on =
      h.post("/v1/clusters/edge/activate", "", "", kAdminToken, {{"If-Match", "\"" + off.header("ETag") + "\""}});
  CHECK(on.status == 200);
  CHECK(on.json()["state"] == "ACTIVE");

  CHECK(names(h.get("/v1/clusters?state=ACTIVE").json()) == std::vector<std::string>{"edge"});
  CHECK(h.get("/v1/clusters?state=INACTIVE").json()["items"].empty());
  CHECK(h.del("/v1/clusters/edge").status == 200);
  CHECK(h.get("/v1/clusters/edge").status == 404);
}

TEST_CASE("api: nodes round trip with MRDS YAML, filters, cordon, uncordon, drain, delete") {
  ApiHarness h;
  REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
  Reply created = h.post("/v1/nodes", R"(name: "kind-worker3"
cluster: local
updateDomain: "update-domain-2"
totalResources:
  cores: 64
  memory: 512
systemReservedResources:
  cores: 4
  memory: 32
capabilityIDs:
  - "intel-xeon"
localVolumes:
  - mountPath: "/mnt/u001"
    storageClass: "SSD"
    storageCapacity: 1024
labels:
  rack: r7
)",
                         "application/x-yaml");
  REQUIRE(created.status == 201);
  Json node = created.json();
  CHECK(node["state"] == "ALLOCATED");
  CHECK(node["remaining"] == Json{{"cores", 60.0}, {"memory_gib", 480.0}});
  CHECK(node["local_volumes"][0]["capacity_gib"] == 1024.0);
  CHECK(node["labels"]["rack"] == "r7");
  CHECK(node["warnings"] == Json::array());  // every capability it names is declared
  node.erase("warnings");
  CHECK(h.get("/v1/nodes/kind-worker3").json() == node);

  CHECK(names(h.get("/v1/nodes?update_domain=update-domain-2").json()) ==
        std::vector<std::string>{"kind-worker2", "kind-worker3"});
  CHECK(names(h.get("/v1/nodes?cluster=local&limit=1").json()) == std::vector<std::string>{"kind-worker"});
  CHECK(h.get("/v1/nodes?cluster=elsewhere").json()["items"].empty());

  Reply cordoned = h.post("/v1/nodes/kind-worker3/cordon", "", "", kOperatorToken);
  REQUIRE(cordoned.status == 200);
  CHECK(cordoned.json()["state"] == "CORDONED");
  CHECK(names(h.get("/v1/nodes?state=CORDONED").json()) == std::vector<std::string>{"kind-worker3"});
  Reply uncordoned = h.post("/v1/nodes/kind-worker3/uncordon", "", "", kOperatorToken);
  REQUIRE(uncordoned.status == 200);
  CHECK(uncordoned.json()["state"] == "ALLOCATED");
  Reply draining =
      h.post("/v1/nodes/kind-worker3/drain", "", "", kOperatorToken, {{"If-Match", uncordoned.header("ETag")}});
  REQUIRE(draining.status == 200);
  CHECK(draining.json()["state"] == "DRAINING");

  CHECK(h.post("/v1/nodes/nowhere/cordon", "", "").status == 404);

  Json before = h.everything();
  CHECK(h.del("/v1/nodes/kind-worker3", kAdminToken, {{"If-Match", uncordoned.header("ETag")}}).status == 409);
  CHECK(h.everything() == before);
  CHECK(h.del("/v1/nodes/kind-worker3", kAdminToken, {{"If-Match", draining.header("ETag")}}).status == 200);
  CHECK(h.get("/v1/nodes/kind-worker3").status == 404);
}

TEST_CASE("api: GET /v1/nodes/{name} shows what the ledger says after every change, reservations included") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tide-api-node-reads-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // In memory, and in a file, whose reads run on connections of their own.
  for (const std::string& url : {std::string("sqlite://:memory:"), "sqlite://" + (dir / "tide.db").string()}) {
    CAPTURE(url);
    ApiHarness h(testServerOptions(), url);
    REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
    REQUIRE(h.post("/v1/plans", kMrdsPlan, "application/yaml").status == 201);
    REQUIRE(h.post("/v1/plans/nginx-deployment-plan/deployments", kMrdsDeployment, "application/yaml").status == 201);
    checkNodeAsLedgerSays(h, "kind-worker");
    checkNodeAsLedgerSays(h, "kind-worker2");

    // A reservation, written by the ledger as the control loop would, shows at once.
    auto meta = h.ledger->instances().createMetaInstance("nginx-deployment-plan", "deployment-1", "test");
    REQUIRE(meta.isOk());
    auto runtime = h.ledger->instances().createRuntimeInstance(runtimeOn(meta->name, "kind-worker"), "test");
    REQUIRE(runtime.isOk());
    checkNodeAsLedgerSays(h, "kind-worker");
    CHECK(h.get("/v1/nodes/kind-worker").json()["remaining"] == Json{{"cores", 56.0}, {"memory_gib", 416.0}});
    moveRuntime(h, runtime->meta.id, {"STARTING", "RUNNING"});
    checkNodeAsLedgerSays(h, "kind-worker");
    checkNodeAsLedgerSays(h, "kind-worker2");
    moveRuntime(h, runtime->meta.id, {"STOPPING", "TERMINATED"});
    checkNodeAsLedgerSays(h, "kind-worker");
    CHECK(h.get("/v1/nodes/kind-worker").json()["remaining"] == Json{{"cores", 60.0}, {"memory_gib", 480.0}});

    // State changes through the API and straight in the ledger.
    REQUIRE(h.post("/v1/nodes/kind-worker/cordon", "", "", kOperatorToken).status == 200);
    checkNodeAsLedgerSays(h, "kind-worker");
    REQUIRE(
        h.ledger->inventory().setNodeState("kind-worker", model::NodeState::kDraining, std::nullopt, "test", "going away").isOk());
    checkNodeAsLedgerSays(h, "kind-worker");
    CHECK(h.get("/v1/nodes/kind-worker").json()["message"] == "going away");
    REQUIRE(h.del("/v1/nodes/kind-worker").status == 200);
    CHECK(h.get("/v1/nodes/kind-worker").status == 404);
    checkNodeAsLedgerSays(h, "kind-worker2");
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("api: a DRAINING node shows who drained it and the instances still on it with their operations") {
  ApiHarness h;
  addInventoryAndPlan(h);
  REQUIRE(h.post(kMrdsDeployments, kMrdsDeployment, "application/yaml").status == 201);
  auto meta = h.ledger->instances().createMetaInstance(kMrdsPlanName, "deployment-1", "test");
  REQUIRE(meta.isOk());
  auto runtime = h.ledger->instances().createRuntimeInstance(runtimeOn(meta->name, "kind-worker"), "test");
  REQUIRE(runtime.isOk());
  moveRuntime(h, runtime->meta.id, {"STARTING", "RUNNING"});
  CHECK_FALSE(h.get("/v1/nodes/kind-worker").json().contains("drain"));

  REQUIRE(h.post("/v1/nodes/kind-worker/drain", "", "", kOperatorToken).status == 200);
  Json node = h.get("/v1/nodes/kind-worker", kViewerToken).json();
  CHECK(node["drained_by"] == kOperatorName);
  CHECK(node["drain"]["instances_left"] == 1);
  CHECK(node["drain"]["instances"][0] == Json{{"instance", meta->name}, {"state", "RUNNING"}, {"operation", nullptr}});

  // The relocation the control loop asks for shows at once (the reply is not kept stale).
  model::Operation relocate;
  relocate.meta_instance = meta->name;
  relocate.type = model::OperationType::kRelocate;
  relocate.intent = "drain";
  relocate.requested_by = kOperatorName;
  auto asked = h.ledger->operations().createOperation(relocate, "controller");
  REQUIRE(asked.isOk());
  Json moving = h.get("/v1/nodes/kind-worker", kViewerToken).json()["drain"]["instances"][0]["operation"];
  CHECK(moving["type"] == "RELOCATE");
  CHECK(moving["state"] == "PENDING");

  moveRuntime(h, runtime->meta.id, {"STOPPING", "TERMINATED"});
  node = h.get("/v1/nodes/kind-worker", kViewerToken).json();
  CHECK(node["drain"]["instances_left"] == 0);
  REQUIRE(h.post("/v1/nodes/kind-worker/cordon", "", "", kOperatorToken).status == 200);
  node = h.get("/v1/nodes/kind-worker", kViewerToken).json();
  CHECK_FALSE(node.contains("drain"));
  CHECK_FALSE(node.contains("drained_by"));
}

TEST_CASE("api: deleting a cluster that still has nodes is 409") {
  ApiHarness h;
  REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
  Json before = h.everything();
  Reply refused = h.del("/v1/clusters/local");
  CHECK(refused.status == 409);
  CHECK(h.everything() == before);
}

TEST_CASE("api: manifests apply atomically") {
  ApiHarness h;
  Reply applied = h.post("/v1/manifests", kInventoryManifest, "application/yaml");
  REQUIRE(applied.status == 201);
  CHECK(applied.json() == Json{{"capabilities", {"nvidia-v100", "nvidia-p100", "intel-xeon"}},
                               {"clusters", {"local"}},
                               {"nodes", {"kind-worker", "kind-worker2"}},
                               {"plans", Json::array()},
                               {"deployments", Json::array()},
                               {"warnings", Json::array()}});

  Json before = h.everything();
  // The first record is fine, the second already exists: nothing of it is written.
  Reply clash = h.post("/v1/manifests", R"({"capabilities":[{"name":"new-one","type":"GPU"},
                                                            {"name":"intel-xeon","type":"CPU"}]})");
  CHECK(clash.status == 409);
  CHECK(h.everything() == before);

  Reply invalid =
      h.post("/v1/manifests", "capabilities:\n  - {name: ok, type: GPU}\n  - {name: bad}\n", "application/yaml");
  CHECK(invalid.status == 400);
  CHECK(invalid.detailNames("capabilities[1].type"));
  CHECK(h.everything() == before);

  Reply nothing = h.post("/v1/manifests", "# only a comment\n", "application/yaml");
  CHECK(nothing.status == 400);
}
