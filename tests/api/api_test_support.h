#pragma once
// A real ApiServer on 127.0.0.1 (ephemeral port) over an in-memory ledger, and small
// helpers to talk to it with httplib::Client over loopback.

#include <doctest/doctest.h>
#include <httplib.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/api/server.h"
#include "host/core/clock.h"
#include "host/ledger/ledger.h"
#include "tests/support/text.h"
#include "tests/support/vocabulary.h"

namespace tide::testing {

using Json = nlohmann::json;

inline const std::string kViewerToken = "viewer-secret";
inline const std::string kOperatorToken = "operator-secret";
inline const std::string kApproverToken = "approver-secret";
inline const std::string kAdminToken = "admin-secret";
// Namespace-scoped (docs/architecture.md#namespace-scoped-tokens): an approver of namespace
// prod, and an operator of namespace staging.
inline const std::string kProdApproverToken = "prod-approver-secret";
inline const std::string kStagingOperatorToken = "staging-operator-secret";
// The names those tokens act under (auth.tokens names), as events and approved_by show them.
inline const std::string kViewerName = "vera";
inline const std::string kOperatorName = "otto";
inline const std::string kApproverName = "alice";
inline const std::string kAdminName = "root";
inline const std::string kProdApproverName = "pat";
inline const std::string kStagingOperatorName = "sam";

inline api::ServerOptions testServerOptions() {
  api::ServerOptions options;
  options.port = 0;
  options.config_tokens = {{"vera", kViewerToken, "viewer", {}},
                           {"otto", kOperatorToken, "operator", {}},
                           {"alice", kApproverToken, "approver", {}},
                           {"root", kAdminToken, "admin", {}},
                           {"pat", kProdApproverToken, "approver", {"prod"}},
                           {"sam", kStagingOperatorToken, "operator", {"staging"}}};
  return options;
}

// The parts of a response the tests look at; status 0 when the request failed.
struct Reply {
  int status = 0;
  std::string body;
  httplib::Headers headers;
  Json json() const { return Json::parse(body, nullptr, false); }
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
  // The error envelope's code, or "" when the body is not one.
  std::string errorCode() const {
    Json j = json();
    return j.is_object() && j.contains("error") ? j["error"].value("code", "") : "";
  }
  bool detailNames(const std::string& field) const {
    Json j = json();
    if (!j.is_object() || !j.contains("error")) return false;
    for (const Json& detail : j["error"]["details"]) {
      if (detail.value("field", "") == field) return true;
    }
    return false;
  }
};

inline Reply toReply(const httplib::Result& result) {
  if (!result) return {};
  return {result->status, result->body, result->headers};
}

class ApiHarness {
 public:
  explicit ApiHarness(api::ServerOptions options = testServerOptions(), const std::string& url = "sqlite://:memory:") {
    auto opened = ledger::Ledger::open(url, clock);
    REQUIRE_MESSAGE(opened.isOk(), opened.status().toString());
    ledger = std::move(opened).value();
    server = std::make_unique<api::ApiServer>(std::move(options), *ledger, clock);
    Status started = server->start();
    REQUIRE_MESSAGE(started.isOk(), started.toString());
    REQUIRE(server->port() > 0);
  }
  ~ApiHarness() { server->stop(); }

  httplib::Client client(const std::string& token = kAdminToken) const {
    httplib::Client c("127.0.0.1", server->port());
    if (!token.empty()) c.set_bearer_token_auth(token.c_str());
    c.set_read_timeout(70, 0);
    return c;
  }

  Reply get(const std::string& path, const std::string& token = kAdminToken) const {
    return toReply(client(token).Get(path.c_str()));
  }
  Reply post(const std::string& path, const std::string& body, const std::string& content_type = "application/json",
             const std::string& token = kAdminToken, const httplib::Headers& headers = {}) const {
    return toReply(client(token).Post(path.c_str(), headers, body, content_type.c_str()));
  }
  Reply del(const std::string& path, const std::string& token = kAdminToken,
            const httplib::Headers& headers = {}) const {
    return toReply(client(token).Delete(path.c_str(), headers));
  }

  int64_t lastEventSeq() const { return ledger->audit().lastEventSeq(); }

  // A snapshot of every list the API serves, to show a failed request wrote nothing.
  Json everything() const {
    Json all;
    for (const char* path :
         {"/v1/capabilities", "/v1/clusters", "/v1/nodes", "/v1/plans", "/v1/instances", "/v1/operations"}) {
      Reply r = get(std::string(path) + "?limit=1000");
      REQUIRE(r.status == 200);
      all[path] = r.json();
    }
    all["events"] = lastEventSeq();
    return all;
  }

  FakeClock clock{*parseTimestamp("2026-11-21T12:00:00Z")};
  std::unique_ptr<ledger::Ledger> ledger;
  std::unique_ptr<api::ApiServer> server;
};

// Each of `cases` ({query, field}) asked of GET `path`?query is refused with 400
// invalid_argument naming `field`.
inline void checkRefusedNaming(const ApiHarness& h, const std::string& path,
                               const std::vector<std::pair<std::string, std::string>>& cases,
                               const std::string& token = kAdminToken) {
  for (const auto& entry : cases) {
    const std::string& query = entry.first;
    CAPTURE(query);
    Reply reply = h.get(path + "?" + query, token);
    CHECK(reply.status == 400);
    CHECK(reply.errorCode() == "invalid_argument");
    CHECK(reply.detailNames(entry.second));
  }
}

// A runtime instance of `meta_instance` on `node` reserving 4 cores and 64 GiB.
inline model::RuntimeInstance runtimeOn(const std::string& meta_instance, const std::string& node) {
  model::RuntimeInstance r;
  r.meta_instance = meta_instance;
  r.node = node;
  r.reservation = {4, 64};
  return r;
}

// An operation as the controller asks for it (a CREATE rolling out deployment-1 on behalf of
// `requested_by`), moved on to PENDING_APPROVAL as the approval stage leaves it for a person.
inline model::Operation waitingOperation(ledger::Ledger& ledger, const std::string& meta_instance,
                                         const std::string& requested_by = "controller") {
  model::Operation operation;
  operation.meta_instance = meta_instance;
  operation.type = model::OperationType::kCreate;
  operation.intent = "deployment-1";
  operation.requested_by = requested_by;
  auto created = ledger.operations().createOperation(operation, "controller");
  REQUIRE_MESSAGE(created.isOk(), created.status().toString());
  auto moved = ledger.operations().setOperationState(created->meta.id, model::OperationState::kPendingApproval,
                                                     std::nullopt, "engine", "a policy asked for a person");
  REQUIRE(moved.isOk());
  return *moved;
}

// Moves runtime instance `id` through `states`, in order, in the ledger.
inline void moveRuntime(ApiHarness& h, int64_t id, std::initializer_list<const char*> states) {
  for (const char* state : states) {
    REQUIRE(h.ledger->instances().setRuntimeInstanceState(id, testing::parsed<model::RuntimeState>(state), std::nullopt, "test")
                .isOk());
  }
}

// MRDS-shaped inventory: three capabilities, cluster "local", two nodes in it.
inline const char* kInventoryManifest = R"(capabilities:
  - {name: nvidia-v100, type: gpu, score: 80}
  - {name: nvidia-p100, type: GPU, score: 70}
  - {name: intel-xeon, type: CPU, score: 10}
clusters:
  - {name: local, driver: process}
nodes:
  - name: "kind-worker"
    cluster: local
    updateDomain: "update-domain-1"
    totalResources: {cores: 64, memory: 512}
    systemReservedResources: {cores: 4, memory: 32}
    capabilityIDs: ["nvidia-v100", "intel-xeon"]
    localVolumes:
      - {mountPath: "/mnt/u001", storageClass: "SSD", storageCapacity: 1024}
  - name: "kind-worker2"
    cluster: local
    updateDomain: "update-domain-2"
    totalResources: {cores: 64, memory: 512}
    systemReservedResources: {cores: 4, memory: 32}
    capabilityIDs: ["nvidia-p100", "intel-xeon"]
)";

// MRDS's deployment-plan file, as a single document.
inline const char* kMrdsPlan = R"(name: "nginx-deployment-plan"
namespace: "nginx-namespace"
serviceName: "nginx-service"
matchingComputeCapabilities:
  - capabilityType: "GPU"
    comparator: "gte"
    capabilityNames:
      - "nvidia-v100"
      - "nvidia-p100"
applications:
  - payloadName: "nginx-payload"
    resources:
      cores: 4
      memory: 64
    ports:
      - protocol: "TCP"
        port: 80
)";

// The plan of kMrdsPlan, and where its deployments are added.
inline const std::string kMrdsPlanName = "nginx-deployment-plan";
inline const std::string kMrdsDeployments = "/v1/plans/" + kMrdsPlanName + "/deployments";

// kMrdsPlan under another name.
inline std::string mrdsPlanNamed(const std::string& name) {
  std::string plan = kMrdsPlan;
  plan.replace(plan.find(kMrdsPlanName), kMrdsPlanName.size(), name);
  return plan;
}

// kMrdsPlan named `name` in namespace `ns`.
inline std::string mrdsPlanIn(const std::string& name, const std::string& ns) {
  std::string plan = mrdsPlanNamed(name);
  const std::string written = "namespace: \"nginx-namespace\"";
  plan.replace(plan.find(written), written.size(), "namespace: \"" + ns + "\"");
  return plan;
}

// kInventoryManifest and kMrdsPlan, posted.
inline void addInventoryAndPlan(ApiHarness& h) {
  REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
  REQUIRE(h.post("/v1/plans", kMrdsPlan, "application/yaml").status == 201);
}

// MRDS's deployment file.
inline const char* kMrdsDeployment = R"(deployment_plan_name: "nginx-deployment-plan"
deployment_id: "deployment-1"
payload_coordinates:
  - payload_name: "nginx-payload"
    coordinates:
      image: "nginx:latest"
instance_count: 1
)";

// kMrdsDeployment of plan `plan`.
inline std::string mrdsDeploymentOf(const std::string& plan) {
  std::string deployment = kMrdsDeployment;
  deployment.replace(deployment.find(kMrdsPlanName), kMrdsPlanName.size(), plan);
  return deployment;
}

}  // namespace tide::testing
