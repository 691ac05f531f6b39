#include <doctest/doctest.h>

#include <filesystem>

#include <algorithm>
#include <string>

#include "host/config/manifest.h"
#include "host/core/names.h"
#include "tests/support/text.h"

using namespace tide;
using namespace tide::config;
using Json = nlohmann::json;

namespace {

using tide::testing::contains;

const char* kMrdsNodes = R"(nodes:
  - name: "kind-worker"
    updateDomain: "update-domain-1"
    totalResources: {cores: 64, memory: 512}
    systemReservedResources: {cores: 4, memory: 32}
    capabilityIDs: ["capability-1", "capability-2"]
    localVolumes:
      - {mountPath: "/mnt/u001", storageClass: "SSD", storageCapacity: 1024}
)";

const char* kMrdsPlan = R"(plans:
  - name: "nginx-deployment-plan"
    namespace: "nginx-namespace"
    serviceName: "nginx-service"
    matchingComputeCapabilities:
      - capabilityType: "GPU"
        comparator: "gte"
        capabilityNames: ["nvidia-v100", "nvidia-p100"]
    applications:
      - payloadName: "nginx-payload"
        resources: {cores: 4, memory: 64}
        ports: [{protocol: "TCP", port: 80}, {protocol: "UDP", port: 53}]
        persistentVolumes:
          - {storageClass: "standard", capacity: 100, mountPath: "/data"}
)";

const char* kMrdsDeployment = R"(deployment_plan_name: "nginx-deployment-plan"
deployment_id: "deployment-1"
payload_coordinates:
  - payload_name: "nginx-payload"
    coordinates:
      image: "nginx:latest"
instance_count: 1
)";

Manifest parseOk(const std::string& text) {
  auto result = parseManifest(text, "m.yaml");
  INFO(result.status().toString());
  REQUIRE(result.isOk());
  return std::move(result).value();
}

// The details of a manifest that must be rejected: kInvalidArgument and no Manifest.
std::vector<ErrorDetail> parseErrors(const std::string& text) {
  auto result = parseManifest(text, "m.yaml");
  REQUIRE_FALSE(result.isOk());
  CHECK(result.status().code() == Code::kInvalidArgument);
  REQUIRE_FALSE(result.status().details().empty());
  return result.status().details();
}

// The one detail at `field`; fails the test when there is not exactly one.
ErrorDetail detailAt(const std::vector<ErrorDetail>& details, const std::string& field) {
  auto count = std::count_if(details.begin(), details.end(), [&](const ErrorDetail& d) { return d.field == field; });
  INFO("field " << field);
  for (const auto& d : details) INFO(d.location << " " << d.field << ": " << d.message);
  REQUIRE(count == 1);
  return *std::find_if(details.begin(), details.end(), [&](const ErrorDetail& d) { return d.field == field; });
}

// Appends in place: long chains of operator+ trip GCC 12's -Warray-bounds false positive.
std::string joined(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (auto part : parts) out.append(part);
  return out;
}

// A valid plan with one application, for tests that break one thing.
std::string planWith(const std::string& applicationExtra, const std::string& planExtra = "") {
  return "name: p\nnamespace: ns\nserviceName: svc\n" + planExtra +
         "applications:\n"
         "  - payloadName: app\n"
         "    resources: {cores: 1, memory: 1}\n" +
         applicationExtra;
}

}  // namespace

TEST_CASE("manifest: MRDS node file is accepted verbatim") {
  Manifest m = parseOk(kMrdsNodes);
  REQUIRE(m.nodes.size() == 1);
  const model::Node& n = m.nodes[0].value;
  CHECK(m.nodes[0].location == "m.yaml:2:5");
  CHECK(n.name == "kind-worker");
  CHECK(n.update_domain == "update-domain-1");
  CHECK(n.total.cores == 64);
  CHECK(n.total.memory_gib == 512);
  CHECK(n.system_reserved.cores == 4);
  CHECK(n.system_reserved.memory_gib == 32);
  CHECK(n.capabilities == std::vector<std::string>{"capability-1", "capability-2"});
  REQUIRE(n.local_volumes.size() == 1);
  CHECK(n.local_volumes[0].mount_path == "/mnt/u001");
  CHECK(n.local_volumes[0].storage_class == "SSD");
  CHECK(n.local_volumes[0].capacity_gib == 1024);
  CHECK(n.cluster.empty());
  CHECK(n.state == model::NodeState::kUnallocated);
  CHECK(m.plans.empty());
}

TEST_CASE("manifest: MRDS plan file is accepted verbatim") {
  Manifest m = parseOk(kMrdsPlan);
  REQUIRE(m.plans.size() == 1);
  const model::Plan& p = m.plans[0].value;
  CHECK(p.name == "nginx-deployment-plan");
  CHECK(p.ns == "nginx-namespace");
  CHECK(p.service_name == "nginx-service");
  REQUIRE(p.matching_capabilities.size() == 1);
  CHECK(p.matching_capabilities[0].type == "GPU");
  CHECK(p.matching_capabilities[0].comparator == "GTE");
  CHECK(p.matching_capabilities[0].names == std::vector<std::string>{"nvidia-v100", "nvidia-p100"});
  REQUIRE(p.applications.size() == 1);
  const model::Application& a = p.applications[0];
  CHECK(a.payload_name == "nginx-payload");
  CHECK(a.resources.cores == 4);
  CHECK(a.resources.memory_gib == 64);
  REQUIRE(a.ports.size() == 2);
  CHECK(a.ports[0].protocol == "TCP");
  CHECK(a.ports[0].port == 80);
  CHECK(a.ports[1].protocol == "UDP");
  CHECK(a.ports[1].port == 53);
  REQUIRE(a.persistent_volumes.size() == 1);
  CHECK(a.persistent_volumes[0].storage_class == "standard");
  CHECK(a.persistent_volumes[0].capacity_gib == 100);
  CHECK(a.persistent_volumes[0].mount_path == "/data");
  CHECK_FALSE(a.health_check.has_value());
  CHECK(p.strategy.script == "rolling");
  CHECK(p.strategy.params == Json::object());
  CHECK(p.approval_policies.empty());
  CHECK(p.approval_min_approvals == 1);
  CHECK(p.state == model::PlanState::kActive);
}

TEST_CASE("manifest: MRDS deployment file is accepted verbatim") {
  Manifest m = parseOk(kMrdsDeployment);
  REQUIRE(m.deployments.size() == 1);
  const model::Deployment& d = m.deployments[0].value;
  CHECK(m.deployments[0].location == "m.yaml:1:1");
  CHECK(d.plan == "nginx-deployment-plan");
  CHECK(d.deployment_id == "deployment-1");
  REQUIRE(d.payload_coordinates.size() == 1);
  CHECK(d.payload_coordinates[0].payload_name == "nginx-payload");
  CHECK(d.payload_coordinates[0].coordinates == Json{{"image", "nginx:latest"}});
  CHECK(d.instance_count == 1);
  CHECK(d.strategy.is_null());
  CHECK(d.state == model::DeploymentState::kPending);
}

TEST_CASE("manifest: a single plan document is recognised by its keys") {
  std::string plan = kMrdsPlan;
  // Drop "plans:\n  - " and the list indentation: the plan as its own document.
  std::string single;
  size_t start = plan.find('\n') + 1;
  for (size_t pos = start; pos < plan.size();) {
    size_t end = plan.find('\n', pos);
    std::string line = plan.substr(pos, end - pos);
    single += line.substr(std::min<size_t>(4, line.size())) + "\n";
    pos = end + 1;
  }
  Manifest m = parseOk(single);
  REQUIRE(m.plans.size() == 1);
  CHECK(m.plans[0].value.name == "nginx-deployment-plan");
  CHECK(m.plans[0].location == "m.yaml:1:1");
}

TEST_CASE("manifest: the snake_case JSON wire shape parses to the same records") {
  model::Node node;
  node.name = "n1";
  node.cluster = "local";
  node.update_domain = "ud-1";
  node.total = {8, 16};
  node.system_reserved = {1, 2};
  node.capabilities = {"intel-xeon"};
  node.local_volumes = {{"/mnt/a", "SSD", 10}};
  node.labels = {{"zone", "a"}};
  Json nodeJson = node;
  for (const char* key : {"state", "message", "remaining"}) nodeJson.erase(key);

  model::Plan plan;
  plan.name = "p";
  plan.ns = "ns";
  plan.service_name = "svc";
  plan.matching_capabilities = {{"GPU", "NOT_IN", {"nvidia-t4"}}};
  model::HealthCheck check;
  check.type = "tcp";
  check.port = 8080;
  plan.applications = {{"app", {2, 4}, {{"TCP", 8080}}, {{"SSD", 5, "/data"}}, check, {}, ""},
                       {"sidecar", {0.5, 0.25}, {}, {}, std::nullopt, {}, ""}};
  plan.strategy = {"canary", Json{{"steps", {10, 50, 100}}}};
  plan.approval_policies = {"prod-guard"};
  plan.placement = {4, true};
  Json planJson = plan;
  for (const char* key : {"state", "message"}) planJson.erase(key);

  model::Deployment deployment;
  deployment.plan = "p";
  deployment.deployment_id = "d1";
  deployment.payload_coordinates = {{"app", Json{{"command", {"sleep", "10"}}, {"env", {{"A", "1"}}}}}};
  deployment.instance_count = 2;
  Json deploymentJson = deployment;
  for (const char* key : {"state", "message", "rollout_state", "signals", "started_at", "completed_at",
                          "paused_seconds", "paused_since", "added_by", "plan_generation"}) {
    deploymentJson.erase(key);
  }

  Json capabilityJson = model::Capability{{}, "nvidia-t4", "GPU", 50};
  Json clusterJson = model::Cluster{{}, "local", "fault", Json{{"seed", 7}}, model::ClusterState::kActive, ""};
  for (const char* key : {"state", "message"}) clusterJson.erase(key);

  Json body = {{"capabilities", {capabilityJson}},
               {"clusters", {clusterJson}},
               {"nodes", {nodeJson}},
               {"plans", {planJson}},
               {"deployments", {deploymentJson}}};
  Manifest m = parseOk(body.dump(2));

  REQUIRE(m.nodes.size() == 1);
  node.state = model::NodeState::kAllocated;
  CHECK(Json(m.nodes[0].value) == Json(node));
  REQUIRE(m.plans.size() == 1);
  CHECK(Json(m.plans[0].value) == Json(plan));
  REQUIRE(m.deployments.size() == 1);
  CHECK(Json(m.deployments[0].value) == Json(deployment));
  REQUIRE(m.capabilities.size() == 1);
  CHECK(m.capabilities[0].value.name == "nvidia-t4");
  CHECK(m.capabilities[0].value.type == "GPU");
  CHECK(m.capabilities[0].value.score == 50);
  REQUIRE(m.clusters.size() == 1);
  CHECK(m.clusters[0].value.driver_kind == "fault");
  CHECK(m.clusters[0].value.driver_config == Json{{"seed", 7}});
  // JSON keeps line numbers: each record sits on its own lines in the pretty dump.
  CHECK(m.nodes[0].location != m.plans[0].location);

  // The same bodies one record at a time, as the HTTP API feeds them.
  auto one = parseNode(nodeJson.dump(), "request body");
  REQUIRE(one.isOk());
  CHECK(one->name == "n1");
  CHECK(parsePlan(planJson.dump(), "request body")->applications.size() == 2);
  CHECK(parseDeployment(deploymentJson.dump(), "request body")->instance_count == 2);
  CHECK(parseCapability(capabilityJson.dump(), "request body")->score == 50);
  CHECK(parseCluster(clusterJson.dump(), "request body")->driver_kind == "fault");
}

TEST_CASE("manifest: tide's extra keys and every alias spelling") {
  Manifest m = parseOk(R"(
capabilities:
  - {name: nvidia-a100, type: gpu, score: 90}
clusters:
  - {name: c1}
  - {name: c2, driverKind: fault, driverConfig: {seed: 42, inner: {kind: process}}}
  - {name: c3, driver_kind: "lua:ssh", driver_config: {}}
nodes:
  - name: n1
    cluster: c1
    update_domain: ud
    total_resources: {cores: 2, memory_gib: 4}
    system_reserved_resources: {cores: 0.5, memoryGib: 0.5}
    capability_ids: [nvidia-a100]
    local_volumes: [{mount_path: /v, storage_class: SSD, capacity_gib: 1.5}]
    labels: {zone: eu-1, gpu: true}
  - {name: n2, updateDomain: ud, total: {cores: 1, memory: 1}, capabilities: [], labels: {}}
plans:
  - name: p
    namespace: ns
    service_name: svc
    matching_capabilities:
      - {type: GPU, comparator: Comparator_NOT_IN, names: [nvidia-t4]}
      - {capability_type: CPU, comparator: In, capability_names: [intel-xeon]}
      - {capabilityType: CPU, comparator: comparator_lte, capabilityNames: [amd-epyc]}
      - {capabilityType: GPU, comparator: EQ, capabilityNames: [nvidia-a100]}
    applications:
      - payload_name: web
        resources: {cores: 1, memory: 2}
        ports: [{protocol: tcp, port: 8080}, {port: 9090}, {protocol: udp, port: 8080}]
        persistent_volumes: [{storage_class: SSD, capacity_gib: 1, mount_path: /data}]
        health_check:
          type: http
          port: 8080
          path: /ready
          interval_seconds: 2.5
          timeout_seconds: 1
          healthy_threshold: 2
          unhealthy_threshold: 4
      - payloadName: worker
        resources: {cores: 1, memory: 2}
        healthCheck: {type: exec, command: [/bin/check, "--fast"], intervalSeconds: 10, timeoutSeconds: 3,
                      healthyThreshold: 1, unhealthyThreshold: 1}
    strategy: {script: canary, params: {steps: [10, 50, 100], pause_seconds: 60}}
    approval: {policies: [prod-guard, business-hours], min_approvals: 2}
deployments:
  - plan: p
    deploymentId: d1
    payloadCoordinates:
      - payloadName: web
        coordinates: {command: [/usr/bin/web, "--port", "8080"], env: {MODE: prod, WORKERS: 4}}
    instanceCount: 0
    strategy: {params: {steps: [100]}}
)");
  REQUIRE(m.capabilities.size() == 1);
  CHECK(m.capabilities[0].value.type == "GPU");
  REQUIRE(m.clusters.size() == 3);
  CHECK(m.clusters[0].value.driver_kind == "process");
  CHECK(m.clusters[0].value.driver_config == Json::object());
  CHECK(m.clusters[1].value.driver_config == Json{{"seed", 42}, {"inner", {{"kind", "process"}}}});
  CHECK(m.clusters[2].value.driver_kind == "lua:ssh");
  REQUIRE(m.nodes.size() == 2);
  CHECK(m.nodes[0].value.state == model::NodeState::kAllocated);
  CHECK(m.nodes[0].value.cluster == "c1");
  CHECK(m.nodes[0].value.system_reserved.memory_gib == 0.5);
  CHECK(m.nodes[0].value.local_volumes[0].capacity_gib == 1.5);
  CHECK(m.nodes[0].value.labels == std::map<std::string, std::string>{{"gpu", "true"}, {"zone", "eu-1"}});
  CHECK(m.nodes[1].value.state == model::NodeState::kUnallocated);
  REQUIRE(m.plans.size() == 1);
  const model::Plan& p = m.plans[0].value;
  REQUIRE(p.matching_capabilities.size() == 4);
  CHECK(p.matching_capabilities[0].comparator == "NOT_IN");
  CHECK(p.matching_capabilities[1].comparator == "IN");
  CHECK(p.matching_capabilities[2].comparator == "LTE");
  CHECK(p.matching_capabilities[3].comparator == "EQ");
  const model::Application& web = p.applications[0];
  REQUIRE(web.ports.size() == 3);
  CHECK(web.ports[0].protocol == "TCP");
  CHECK(web.ports[1].protocol == "TCP");  // the default
  CHECK(web.ports[2].protocol == "UDP");
  REQUIRE(web.health_check.has_value());
  CHECK(web.health_check->type == "http");
  CHECK(web.health_check->port == 8080);
  CHECK(web.health_check->path == "/ready");
  CHECK(web.health_check->interval_seconds == 2.5);
  CHECK(web.health_check->timeout_seconds == 1);
  CHECK(web.health_check->healthy_threshold == 2);
  CHECK(web.health_check->unhealthy_threshold == 4);
  const model::HealthCheck& exec = *p.applications[1].health_check;
  CHECK(exec.type == "exec");
  CHECK(exec.command == std::vector<std::string>{"/bin/check", "--fast"});
  CHECK(p.strategy.script == "canary");
  CHECK(p.strategy.params == Json{{"steps", {10, 50, 100}}, {"pause_seconds", 60}});
  CHECK(p.approval_policies == std::vector<std::string>{"prod-guard", "business-hours"});
  CHECK(p.approval_min_approvals == 2);
  REQUIRE(m.deployments.size() == 1);
  const model::Deployment& d = m.deployments[0].value;
  CHECK(d.instance_count == 0);
  CHECK(d.payload_coordinates[0].coordinates ==
        Json{{"command", {"/usr/bin/web", "--port", "8080"}}, {"env", {{"MODE", "prod"}, {"WORKERS", 4}}}});
  CHECK(d.strategy == Json{{"params", {{"steps", {100}}}}});
}

TEST_CASE("manifest: a plan's placement defaults to one instance per node, least-allocated") {
  const model::Plan plain = parseOk(planWith("")).plans.at(0).value;
  CHECK(plain.placement.max_per_node == 1);
  CHECK_FALSE(plain.placement.bin_pack);

  const model::Plan camel = parseOk(planWith("", "placement: {maxPerNode: 3, binPack: true}\n")).plans.at(0).value;
  CHECK(camel.placement.max_per_node == 3);
  CHECK(camel.placement.bin_pack);
  const model::Plan snake = parseOk(planWith("", "placement: {max_per_node: 1000}\n")).plans.at(0).value;
  CHECK(snake.placement.max_per_node == 1000);
  CHECK_FALSE(snake.placement.bin_pack);
  const model::Plan empty = parseOk(planWith("", "placement: {}\n")).plans.at(0).value;
  CHECK(empty.placement.max_per_node == 1);
}

TEST_CASE("manifest: free-form values keep YAML's types, quoted scalars stay strings") {
  Manifest m = parseOk(R"(deployment_plan_name: p
deployment_id: d
instance_count: 1
payload_coordinates:
  - payload_name: app
    coordinates:
      int: 42
      negative: -7
      hex: 0x1F
      float: 1.5
      exp: 1e3
      yes_bool: true
      no_bool: FALSE
      nothing: null
      tilde: ~
      quoted_int: "42"
      quoted_bool: 'true'
      tagged: !!str 12
      word: nginx:latest
      yaml11_yes: yes
      list: [1, "1", a]
      nested: {a: [{b: c}]}
)");
  const Json& c = m.deployments[0].value.payload_coordinates[0].coordinates;
  CHECK(c["int"] == 42);
  CHECK(c["int"].is_number_integer());
  CHECK(c["negative"] == -7);
  CHECK(c["hex"] == 31);
  CHECK(c["float"] == 1.5);
  CHECK(c["exp"] == 1000.0);
  CHECK(c["yes_bool"] == true);
  CHECK(c["no_bool"] == false);
  CHECK(c["nothing"].is_null());
  CHECK(c["tilde"].is_null());
  CHECK(c["quoted_int"] == "42");
  CHECK(c["quoted_bool"] == "true");
  CHECK(c["tagged"] == "12");
  CHECK(c["word"] == "nginx:latest");
  CHECK(c["yaml11_yes"] == "yes");
  CHECK(c["list"] == Json{1, "1", "a"});
  CHECK(c["nested"] == Json{{"a", {{{"b", "c"}}}}});
}

TEST_CASE("manifest: several documents combine into one manifest") {
  std::string text = joined({"---\n", kMrdsNodes, "---\n", kMrdsPlan, "---\n", kMrdsDeployment, "---\n"});
  Manifest m = parseOk(text);
  CHECK(m.nodes.size() == 1);
  CHECK(m.plans.size() == 1);
  CHECK(m.deployments.size() == 1);
  CHECK(m.nodes[0].location == "m.yaml:3:5");
  CHECK(m.deployments[0].location == "m.yaml:26:1");
}

TEST_CASE("manifest: every file in examples/ loads from disk") {
  const std::string dir = std::string(TIDE_SOURCE_DIR) + "/examples/";

  auto nodes = loadManifestFile(dir + "nodes.yaml");
  INFO(nodes.status().toString());
  REQUIRE(nodes.isOk());
  REQUIRE(nodes->capabilities.size() == 6);
  CHECK(nodes->capabilities[0].value.name == "nvidia-a100");
  CHECK(nodes->capabilities[0].value.score == 90);
  CHECK(nodes->capabilities[4].value.type == "CPU");
  REQUIRE(nodes->clusters.size() == 1);
  CHECK(nodes->clusters[0].value.name == "local");
  CHECK(nodes->clusters[0].value.driver_kind == "process");
  REQUIRE(nodes->nodes.size() == 4);
  std::vector<std::string> domains;
  for (const auto& n : nodes->nodes) {
    CHECK(n.value.cluster == "local");
    CHECK(n.value.state == model::NodeState::kAllocated);
    CHECK(n.value.total.cores == 64);
    CHECK(n.value.system_reserved.memory_gib == 32);
    CHECK(n.value.local_volumes.size() == 2);
    CHECK(n.value.capabilities.size() == 2);
    domains.push_back(n.value.update_domain);
  }
  CHECK(domains ==
        std::vector<std::string>{"update-domain-1", "update-domain-1", "update-domain-2", "update-domain-2"});
  CHECK(nodes->nodes[3].value.name == "kind-worker4");
  CHECK(nodes->nodes[0].location == dir + "nodes.yaml:16:5");

  auto plan = loadManifestFile(dir + "nginx-plan.yaml");
  INFO(plan.status().toString());
  REQUIRE(plan.isOk());
  REQUIRE(plan->plans.size() == 1);
  const model::Plan& p = plan->plans[0].value;
  CHECK(p.name == "nginx-deployment-plan");
  REQUIRE(p.matching_capabilities.size() == 2);
  CHECK(p.matching_capabilities[1].comparator == "EQ");
  CHECK(p.applications[0].persistent_volumes[0].storage_class == "SSD");
  REQUIRE(p.applications[0].health_check.has_value());
  CHECK(p.applications[0].health_check->path == "/healthz");

  struct Expected {
    const char* file;
    const char* id;
    int64_t count;
    const char* image;
  };
  for (const Expected& e : {Expected{"deployment-1.yaml", "deployment-1", 1, "nginx:latest"},
                            Expected{"deployment-2.yaml", "deployment-2", 3, "nginx:latest"},
                            Expected{"deployment-3.yaml", "deployment-3", 1, "nginx:1.27"}}) {
    auto d = loadManifestFile(dir + e.file);
    INFO(e.file << ": " << d.status().toString());
    REQUIRE(d.isOk());
    REQUIRE(d->deployments.size() == 1);
    CHECK(d->deployments[0].value.plan == "nginx-deployment-plan");
    CHECK(d->deployments[0].value.deployment_id == e.id);
    CHECK(d->deployments[0].value.instance_count == e.count);
    CHECK(d->deployments[0].value.payload_coordinates[0].coordinates["image"] == e.image);
  }

  // And every other manifest the README and docs/ use (the host configs, tide*.yaml, are not manifests).
  int manifests = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".yaml" || name.rfind("tide", 0) == 0) continue;
    auto loaded = loadManifestFile(entry.path().string());
    CHECK_MESSAGE(loaded.isOk(), name << ": " << loaded.status().toString());
    ++manifests;
  }
  CHECK(manifests >= 14);
}

TEST_CASE("manifest: a file that cannot be read is not found") {
  auto r = loadManifestFile("/nonexistent/nodes.yaml");
  REQUIRE_FALSE(r.isOk());
  CHECK(r.status().code() == Code::kNotFound);
  CHECK(contains(r.status().message(), "/nonexistent/nodes.yaml"));
  CHECK(loadManifestFile(TIDE_SOURCE_DIR).status().code() == Code::kNotFound);
}

TEST_CASE("manifest error: YAML syntax error names its line") {
  auto details = parseErrors("nodes:\n  - name: a\n    totalResources: {cores: 1, memory: 2\n  - name: b\n");
  REQUIRE(details.size() == 1);
  CHECK(details[0].location == "m.yaml:4:9");
  CHECK(contains(details[0].message, "YAML syntax error"));
  auto r = parseManifest("a: [1, 2\nb: 3\n", "body");
  CHECK(r.status().message().starts_with("body:2:2: YAML syntax error"));
}

TEST_CASE("manifest error: a value or key that is not UTF-8 names its line") {
  // Such a value cannot be written as JSON: a plan's param with raw bytes made
  // POST /v1/plans throw from inside the handler (found by api_body_fuzz).
  for (const char* text : {"nodes:\n  - name: a\n    labels: {zone: \"b\xF2\xF2\"}\n",
                           "nodes:\n  - name: a\n    labels: {\"z\xC3\": b}\n"}) {
    CAPTURE(text);
    auto details = parseErrors(text);
    REQUIRE(details.size() == 1);
    CHECK(details[0].location.starts_with("m.yaml:3:"));
    CHECK(contains(details[0].message, "not UTF-8"));
  }
}

TEST_CASE("manifest error: unknown key suggests the known ones") {
  auto details = parseErrors(R"(nodes:
  - name: n1
    updateDomian: ud
    totalResources: {cores: 1, memory: 1}
)");
  ErrorDetail unknown = detailAt(details, "nodes[0].updateDomian");
  CHECK(unknown.location == "m.yaml:3:5");
  CHECK(contains(unknown.message, "unknown key \"updateDomian\" (did you mean \"updateDomain\"?)"));
  CHECK(contains(unknown.message, "known keys: metadata, name, cluster, updateDomain, totalResources"));
  // The real key is then missing.
  CHECK(detailAt(details, "nodes[0].updateDomain").message == "is required");
  CHECK(details.size() == 2);

  auto top = parseErrors("nodes: []\nplan: []\ncolour: red\n");
  CHECK(detailAt(top, "plan").message.starts_with("unknown key \"plan\" (did you mean \"plans\"?)"));
  CHECK(detailAt(top, "colour").message.starts_with("unknown key \"colour\"; known keys: capabilities"));
}

TEST_CASE("manifest error: wrong types") {
  auto details = parseErrors(R"(nodes:
  - name: n1
    updateDomain: ud
    totalResources: {cores: "lots", memory: true}
    systemReservedResources: [1, 2]
    capabilityIDs: gpu
    localVolumes: {mountPath: /a}
    labels: [a]
)");
  CHECK(detailAt(details, "nodes[0].totalResources.cores").message == "expected a number, got the string \"lots\"");
  CHECK(detailAt(details, "nodes[0].totalResources.cores").location == "m.yaml:4:29");
  CHECK(detailAt(details, "nodes[0].totalResources.memory").message == "expected a number, got the boolean true");
  CHECK(detailAt(details, "nodes[0].systemReservedResources").message == "expected a mapping, got a list");
  CHECK(detailAt(details, "nodes[0].systemReservedResources").location == "m.yaml:5:30");
  CHECK(detailAt(details, "nodes[0].capabilityIDs").message == "expected a list, got the string \"gpu\"");
  CHECK(detailAt(details, "nodes[0].localVolumes").message == "expected a list, got a mapping");
  CHECK(detailAt(details, "nodes[0].labels").message == "expected a mapping, got a list");
  CHECK(details.size() == 6);

  auto more = parseErrors(R"(deployment_plan_name: p
deployment_id: d
instance_count: 1.5
payload_coordinates:
  - payload_name: [x]
    coordinates: nginx
)");
  CHECK(detailAt(more, "instance_count").message == "expected an integer, got the number 1.5");
  CHECK(detailAt(more, "payload_coordinates[0].payload_name").message == "expected a string, got a list");
  CHECK(detailAt(more, "payload_coordinates[0].coordinates").message == "expected a mapping, got the string \"nginx\"");
  CHECK(detailAt(more, "payload_coordinates[0].coordinates").location == "m.yaml:6:18");

  auto top = parseErrors("- name: n1\n");
  CHECK(contains(top[0].message, "got a list"));
  auto list = parseErrors("nodes: {name: n1}\n");
  CHECK(detailAt(list, "nodes").message == "expected a list, got a mapping");
}

TEST_CASE("manifest error: missing required fields") {
  auto details = parseErrors(R"(nodes:
  - cluster: c1
plans:
  - name: p
deployments:
  - deployment_plan_name: p
    deployment_id:
capabilities:
  - {name: x}
clusters:
  - {driver: process}
)");
  CHECK(detailAt(details, "nodes[0].name").message == "is required");
  CHECK(detailAt(details, "nodes[0].name").location == "m.yaml:2:5");
  CHECK(detailAt(details, "nodes[0].updateDomain").message == "is required");
  CHECK(detailAt(details, "plans[0].namespace").location == "m.yaml:4:5");
  CHECK(detailAt(details, "plans[0].serviceName").message == "is required");
  CHECK(detailAt(details, "plans[0].applications").message == "is required");
  CHECK(detailAt(details, "deployments[0].deployment_id").message == "is required, got nothing (null)");
  CHECK(detailAt(details, "deployments[0].deployment_id").location == "m.yaml:7:5");
  CHECK(detailAt(details, "deployments[0].payload_coordinates").message == "is required");
  CHECK(detailAt(details, "deployments[0].instance_count").message == "is required");
  CHECK(detailAt(details, "capabilities[0].type").message == "is required");
  CHECK(detailAt(details, "clusters[0].name").message == "is required");
  CHECK(details.size() == 10);

  auto apps = parseErrors(
      "name: p\nnamespace: ns\nserviceName: s\napplications:\n  - payloadName: a\n  - resources: {cores: 1}\n");
  CHECK(detailAt(apps, "applications[0].resources").location == "m.yaml:5:5");
  CHECK(detailAt(apps, "applications[1].payloadName").location == "m.yaml:6:5");
  CHECK(detailAt(apps, "applications[1].resources.memory").message == "is required");
  CHECK(apps.size() == 3);
}

TEST_CASE("manifest error: negative and absurd numbers") {
  auto nodes = parseErrors(R"(nodes:
  - name: n1
    updateDomain: ud
    totalResources: {cores: -1, memory: 20000000}
    localVolumes: [{mountPath: /a, storageClass: SSD, storageCapacity: 0}]
  - name: n2
    updateDomain: ud
    totalResources: {cores: 8, memory: 16}
    systemReservedResources: {cores: 9, memory: 16}
)");
  CHECK(detailAt(nodes, "nodes[0].totalResources.cores").message == "must be between 0 and 100000, got -1");
  CHECK(detailAt(nodes, "nodes[0].totalResources.memory").message == "must be between 0 and 10000000, got 20000000");
  CHECK(detailAt(nodes, "nodes[0].localVolumes[0].storageCapacity").message ==
        "must be greater than 0 and at most 10000000, got 0");
  ErrorDetail reserved = detailAt(nodes, "nodes[1].systemReservedResources.cores");
  CHECK(reserved.location == "m.yaml:9:38");
  CHECK(reserved.message == "9 exceeds the total 8 (nodes[1].totalResources.cores)");
  CHECK(nodes.size() == 4);  // reserved memory equal to the total is fine

  auto plan = parseErrors(planWith(R"(    ports: [{port: 0}, {port: 65536}, {port: 65535}]
    persistentVolumes: [{storageClass: SSD, capacity: -5, mountPath: /d}]
    healthCheck: {type: tcp, port: 65535, intervalSeconds: 0, timeoutSeconds: -1, healthyThreshold: 0,
                  unhealthyThreshold: 1001}
)"));
  CHECK(detailAt(plan, "applications[0].ports[0].port").message == "must be between 1 and 65535, got 0");
  CHECK(detailAt(plan, "applications[0].ports[1].port").message == "must be between 1 and 65535, got 65536");
  CHECK(detailAt(plan, "applications[0].persistentVolumes[0].capacity").location == "m.yaml:8:55");
  CHECK(detailAt(plan, "applications[0].healthCheck.intervalSeconds").message ==
        "must be greater than 0 and at most 86400, got 0");
  CHECK(detailAt(plan, "applications[0].healthCheck.timeoutSeconds").location == "m.yaml:9:79");
  CHECK(detailAt(plan, "applications[0].healthCheck.healthyThreshold").message == "must be between 1 and 1000, got 0");
  CHECK(detailAt(plan, "applications[0].healthCheck.unhealthyThreshold").location == "m.yaml:10:39");
  CHECK(plan.size() == 7);

  auto count =
      parseErrors(std::string(kMrdsDeployment)
                      .replace(std::string(kMrdsDeployment).find("instance_count: 1"), 17, "instance_count: 10001"));
  CHECK(detailAt(count, "instance_count").message == "must be between 0 and 10000, got 10001");
  CHECK(detailAt(count, "instance_count").location == "m.yaml:7:17");
  auto negative = parseErrors(
      "deployment_plan_name: p\ndeployment_id: d\ninstance_count: -1\n"
      "payload_coordinates: [{payload_name: a, coordinates: {image: x}}]\n");
  CHECK(detailAt(negative, "instance_count").message == "must be between 0 and 10000, got -1");
  auto huge = parseErrors(
      "deployment_plan_name: p\ndeployment_id: d\ninstance_count: 99999999999999999999\n"
      "payload_coordinates: [{payload_name: a, coordinates: {image: x}}]\n");
  CHECK(contains(detailAt(huge, "instance_count").message, "must be between 0 and 10000"));
}

TEST_CASE("manifest error: placement takes max_per_node 1..1000, a boolean bin_pack and nothing else") {
  auto bounds = parseErrors(planWith("", "placement:\n  max_per_node: 0\n  bin_pack: yes please\n"));
  ErrorDetail zero = detailAt(bounds, "placement.max_per_node");
  CHECK(zero.location == "m.yaml:5:17");
  CHECK(zero.message == "must be between 1 and 1000, got 0");
  ErrorDetail pack = detailAt(bounds, "placement.bin_pack");
  CHECK(pack.location == "m.yaml:6:13");
  CHECK(pack.message == "expected true or false, got the string \"yes please\"");
  CHECK(bounds.size() == 2);

  CHECK(detailAt(parseErrors(planWith("", "placement: {maxPerNode: 1001}\n")), "placement.maxPerNode").message ==
        "must be between 1 and 1000, got 1001");
  CHECK(detailAt(parseErrors(planWith("", "placement: {maxPerNode: 2.5}\n")), "placement.maxPerNode").message ==
        "expected an integer, got the number 2.5");
  CHECK(detailAt(parseErrors(planWith("", "placement: {binPack: \"true\"}\n")), "placement.binPack").message ==
        "expected true or false, got the string \"true\"");
  CHECK(detailAt(parseErrors(planWith("", "placement: 3\n")), "placement").message ==
        "expected a mapping, got the number 3");

  auto unknown = parseErrors(planWith("", "placement: {max_per_node: 2, spread: zone}\n"));
  ErrorDetail spread = detailAt(unknown, "placement.spread");
  CHECK(spread.location == "m.yaml:4:30");
  CHECK(contains(spread.message, "unknown key \"spread\"; known keys: maxPerNode, binPack"));
  CHECK(unknown.size() == 1);
}

TEST_CASE("manifest error: duplicate names within a manifest, per kind") {
  auto details = parseErrors(std::string(kMrdsNodes) + R"(  - name: "kind-worker"
    updateDomain: "update-domain-2"
    totalResources: {cores: 1, memory: 1}
capabilities:
  - {name: kind-worker, type: GPU}
  - {name: kind-worker, type: CPU}
)");
  ErrorDetail node = detailAt(details, "nodes[1].name");
  CHECK(node.location == "m.yaml:9:11");
  CHECK(node.message == "duplicate node name \"kind-worker\" (first at m.yaml:2:11)");
  CHECK(detailAt(details, "capabilities[1].name").message ==
        "duplicate capability name \"kind-worker\" (first at m.yaml:13:12)");
  CHECK(details.size() == 2);  // a node and a capability may share a name

  // Deployments are keyed by plan and deployment id, across documents too.
  std::string other = std::string(kMrdsDeployment);
  other.replace(other.find("nginx-deployment-plan"), 21, "other-plan");
  auto deployments = parseErrors(std::string(kMrdsDeployment) + "---\n" + other + "---\n" + kMrdsDeployment);
  ErrorDetail dup = detailAt(deployments, "deployment_id");
  CHECK(dup.location == "m.yaml:18:16");
  CHECK(dup.message ==
        "duplicate deployment (plan/deployment_id) \"nginx-deployment-plan/deployment-1\" (first at m.yaml:2:16)");
}

TEST_CASE("manifest error: duplicates inside a record") {
  auto plan = parseErrors(R"(name: p
namespace: ns
serviceName: svc
applications:
  - payloadName: web
    resources: {cores: 1, memory: 1}
    ports: [{protocol: TCP, port: 80}, {protocol: UDP, port: 80}, {protocol: tcp, port: 80}]
    persistentVolumes:
      - {storageClass: SSD, capacity: 1, mountPath: /data}
      - {storageClass: HDD, capacity: 1, mountPath: /data}
  - payloadName: web
    resources: {cores: 1, memory: 1}
    ports: [{port: 80}]
)");
  CHECK(detailAt(plan, "applications[0].ports[2]").message == "duplicate port \"TCP/80\" (first at m.yaml:7:13)");
  CHECK(detailAt(plan, "applications[1].ports[0]").location == "m.yaml:13:13");
  CHECK(detailAt(plan, "applications[0].persistentVolumes[1].mountPath").message ==
        "duplicate mount path \"/data\" (first at m.yaml:9:53)");
  CHECK(detailAt(plan, "applications[1].payloadName").message ==
        "duplicate payload name \"web\" (first at m.yaml:5:18)");
  CHECK(plan.size() == 4);

  auto node = parseErrors(R"(nodes:
  - name: n
    updateDomain: ud
    totalResources: {cores: 1, memory: 1}
    capabilityIDs: [a, b, a]
    localVolumes:
      - {mountPath: /mnt/a, storageClass: SSD, storageCapacity: 1}
      - {mount_path: /mnt/a, storage_class: HDD, capacity_gib: 1}
)");
  CHECK(detailAt(node, "nodes[0].capabilityIDs[2]").message == "duplicate capability \"a\" (first at m.yaml:5:21)");
  CHECK(detailAt(node, "nodes[0].localVolumes[1].mount_path").location == "m.yaml:8:22");
  CHECK(node.size() == 2);

  auto deployment = parseErrors(R"(deployment_plan_name: p
deployment_id: d
instance_count: 1
payload_coordinates:
  - {payload_name: a, coordinates: {image: x}}
  - {payload_name: a, coordinates: {image: y}}
)");
  CHECK(detailAt(deployment, "payload_coordinates[1].payload_name").message ==
        "duplicate payload name \"a\" (first at m.yaml:5:20)");

  auto twice = parseErrors(
      "nodes:\n  - name: n\n    name: m\n    updateDomain: u\n    capabilityIDs: []\n"
      "    capabilities: []\n    totalResources: {cores: 1, memory: 1}\n");
  CHECK(detailAt(twice, "nodes[0].name").message == "key given twice (first as \"name\" at line 2)");
  CHECK(detailAt(twice, "nodes[0].capabilities").message == "key given twice (first as \"capabilityIDs\" at line 5)");
}

TEST_CASE("manifest error: names outside the name rule carry nameProblem's text") {
  auto details = parseErrors(R"(capabilities:
  - {name: "", type: GPU}
clusters:
  - {name: Local}
nodes:
  - name: kind_worker..1
    cluster: "-c"
    updateDomain: "Update Domain"
    totalResources: {cores: 1, memory: 1}
    capabilityIDs: [NVIDIA]
plans:
  - name: p
    namespace: ns/prod
    serviceName: svc!
    matchingComputeCapabilities: [{capabilityType: GPU, comparator: in, capabilityNames: [V100]}]
    applications: [{payloadName: App, resources: {cores: 1, memory: 1}}]
    strategy: {script: ../evil}
    approval: {policies: [Guard]}
deployments:
  - {plan: P, deployment_id: "d 1", instance_count: 1, payload_coordinates: [{payload_name: a, coordinates: {image: x}}]}
)");
  CHECK(detailAt(details, "capabilities[0].name").message == "\"\" " + nameProblem(""));
  CHECK(detailAt(details, "clusters[0].name").message == "\"Local\" " + nameProblem("Local"));
  CHECK(detailAt(details, "nodes[0].name").message == "\"kind_worker..1\" must not contain '..'");
  CHECK(detailAt(details, "nodes[0].name").location == "m.yaml:6:11");
  CHECK(detailAt(details, "nodes[0].cluster").message == "\"-c\" " + nameProblem("-c"));
  CHECK(detailAt(details, "nodes[0].updateDomain").message == "\"Update Domain\" " + nameProblem("Update Domain"));
  CHECK(detailAt(details, "nodes[0].capabilityIDs[0]").location == "m.yaml:10:21");
  CHECK(detailAt(details, "plans[0].namespace").message == "\"ns/prod\" " + nameProblem("ns/prod"));
  CHECK(detailAt(details, "plans[0].serviceName").location == "m.yaml:14:18");
  CHECK(detailAt(details, "plans[0].matchingComputeCapabilities[0].capabilityNames[0]").location == "m.yaml:15:91");
  CHECK(detailAt(details, "plans[0].applications[0].payloadName").location == "m.yaml:16:34");
  CHECK(detailAt(details, "plans[0].strategy.script").location == "m.yaml:17:24");
  CHECK(detailAt(details, "plans[0].approval.policies[0]").location == "m.yaml:18:27");
  CHECK(detailAt(details, "deployments[0].plan").location == "m.yaml:20:12");
  CHECK(detailAt(details, "deployments[0].deployment_id").message == "\"d 1\" " + nameProblem("d 1"));
  CHECK(details.size() == 14);
}

TEST_CASE("manifest error: mount paths must be absolute") {
  auto details =
      parseErrors(planWith("    persistentVolumes:\n"
                           "      - {storageClass: SSD, capacity: 1, mountPath: data}\n"
                           "      - {storageClass: SSD, capacity: 1, mountPath: /data/../etc}\n"));
  CHECK(detailAt(details, "applications[0].persistentVolumes[0].mountPath").message ==
        "\"data\" must be an absolute path");
  CHECK(detailAt(details, "applications[0].persistentVolumes[0].mountPath").location == "m.yaml:8:53");
  CHECK(detailAt(details, "applications[0].persistentVolumes[1].mountPath").message ==
        "\"/data/../etc\" must not contain '..'");
  auto local = parseErrors(
      "nodes:\n  - {name: n, updateDomain: u, totalResources: {cores: 1, memory: 1},"
      " localVolumes: [{mountPath: mnt, storageClass: SSD, storageCapacity: 1}]}\n");
  CHECK(detailAt(local, "nodes[0].localVolumes[0].mountPath").message == "\"mnt\" must be an absolute path");
}

TEST_CASE("manifest error: unknown comparator, protocol and health-check type") {
  auto details =
      parseErrors(planWith("    ports: [{protocol: SCTP, port: 80}]\n"
                           "    healthCheck: {type: grpc, port: 80}\n",
                           "matchingComputeCapabilities:\n"
                           "  - {capabilityType: GPU, comparator: gt, capabilityNames: [a]}\n"
                           "  - {capabilityType: GPU, comparator: Comparator_GT, capabilityNames: []}\n"));
  CHECK(detailAt(details, "matchingComputeCapabilities[0].comparator").message ==
        "unknown comparator \"gt\"; expected one of in, not_in, eq, gte, lte");
  CHECK(detailAt(details, "matchingComputeCapabilities[0].comparator").location == "m.yaml:5:39");
  CHECK(detailAt(details, "matchingComputeCapabilities[1].comparator").location == "m.yaml:6:39");
  CHECK(detailAt(details, "matchingComputeCapabilities[1].capabilityNames").message ==
        "must name at least one capability");
  CHECK(detailAt(details, "applications[0].ports[0].protocol").message ==
        "unknown protocol \"SCTP\"; expected TCP or UDP");
  CHECK(detailAt(details, "applications[0].healthCheck.type").message ==
        "unknown health check type \"grpc\"; expected http, tcp or exec");
  CHECK(detailAt(details, "applications[0].healthCheck.type").location == "m.yaml:11:25");
  CHECK(details.size() == 5);
}

TEST_CASE("manifest error: health checks must probe something real") {
  auto details = parseErrors(planWith("    ports: [{protocol: UDP, port: 53}, {port: 80}]\n"
                                      "    healthCheck: {type: http, port: 53, path: healthz}\n") +
                             "  - payloadName: b\n    resources: {cores: 1, memory: 1}\n"
                             "    healthCheck: {type: exec, command: []}\n"
                             "  - payloadName: c\n    resources: {cores: 1, memory: 1}\n"
                             "    healthCheck: {type: tcp}\n");
  CHECK(detailAt(details, "applications[0].healthCheck.port").message ==
        "must be one of the application's declared TCP ports");
  CHECK(detailAt(details, "applications[0].healthCheck.path").message == "must start with '/'");
  CHECK(detailAt(details, "applications[1].healthCheck.command").message == "must hold at least the program to run");
  CHECK(detailAt(details, "applications[2].healthCheck.port").message == "is required");
  CHECK(details.size() == 4);
}

TEST_CASE("manifest error: empty documents") {
  for (const char* text : {"", "   \n", "# nothing here\n", "---\n---\n"}) {
    auto details = parseErrors(text);
    REQUIRE(details.size() == 1);
    CHECK(details[0].location == "m.yaml:1:1");
    CHECK(details[0].message == "empty document: nothing to read");
  }
  auto lists = parseErrors("# comment\nnodes: []\nplans: []\n");
  CHECK(lists[0].location == "m.yaml:2:1");
  CHECK(lists[0].message == "the manifest defines no capabilities, clusters, nodes, plans or deployments");
  auto unknownShape = parseErrors("name: lonely\n");
  CHECK(
      contains(unknownShape[0].message, "expected a mapping with capabilities, clusters, nodes, plans or deployments"));
  CHECK(parseNode("", "request body").status().message() == "request body:1:1: empty document: nothing to read");
}

TEST_CASE("manifest error: every problem is reported, the first one leads the message") {
  auto r = parseManifest(R"(nodes:
  - name: a
    updateDomain: ud
    totalResources: {cores: -1, memory: -1}
  - name: a
    updateDomain: ud
    totalResources: {cores: 1, memory: 1}
    colour: blue
)",
                         "nodes.yaml");
  REQUIRE_FALSE(r.isOk());
  CHECK(r.status().code() == Code::kInvalidArgument);
  CHECK(r.status().message() ==
        "nodes.yaml:4:29: nodes[0].totalResources.cores: must be between 0 and 100000, got -1 (and 3 more errors)");
  REQUIRE(r.status().details().size() == 4);
  CHECK(r.status().details()[1] ==
        ErrorDetail{"nodes[0].totalResources.memory", "must be between 0 and 10000000, got -1", "nodes.yaml:4:41"});
  CHECK(r.status().details()[2] ==
        ErrorDetail{"nodes[1].name", "duplicate node name \"a\" (first at nodes.yaml:2:11)", "nodes.yaml:5:11"});
  CHECK(r.status().details()[3].field == "nodes[1].colour");  // in file order, not the order they were found

  auto two = parseManifest("nodes:\n  - {name: a, updateDomain: u, totalResources: {cores: x, memory: y}}\n", "f");
  CHECK(contains(two.status().message(), "(and 1 more error)"));
}

TEST_CASE("manifest: single-record parsers take exactly one object") {
  auto node =
      parseNode(R"({"name": "n", "update_domain": "u", "total": {"cores": 2, "memory_gib": 4}, "cluster": "local"})",
                "request body");
  REQUIRE(node.isOk());
  CHECK(node->state == model::NodeState::kAllocated);
  CHECK(node->total.memory_gib == 4);

  auto bad = parseNode(
      "{\n  \"name\": \"N\",\n  \"update_domain\": \"u\",\n  \"total\": {\"cores\": 2, \"memory_gib\": \"4\"}\n}",
      "request body");
  REQUIRE_FALSE(bad.isOk());
  REQUIRE(bad.status().details().size() == 2);
  CHECK(bad.status().details()[0] == ErrorDetail{"name", "\"N\" " + nameProblem("N"), "request body:2:11"});
  CHECK(bad.status().details()[1] ==
        ErrorDetail{"total.memory_gib", "expected a number, got the string \"4\"", "request body:4:39"});

  auto two = parsePlan("name: a\n---\nname: b\n", "request body");
  REQUIRE_FALSE(two.isOk());
  CHECK(two.status().details()[0].location == "request body:3:1");
  CHECK(two.status().details()[0].message == "expected one document, got 2");

  auto list = parseDeployment(kMrdsDeployment, "d.yaml");
  REQUIRE(list.isOk());
  CHECK(list->deployment_id == "deployment-1");
  auto nodesNotOne = parseNode(kMrdsNodes, "request body");
  CHECK(contains(nodesNotOne.status().details()[0].message, "unknown key \"nodes\""));

  auto capability = parseCapability("{name: t4, type: GPU, score: 1000001}", "request body");
  CHECK(capability.status().details()[0].field == "score");
  auto cluster = parseCluster("{name: c, config: [1]}", "request body");
  CHECK(cluster.status().details()[0] == ErrorDetail{"config", "expected a mapping, got a list", "request body:1:19"});
}

TEST_CASE("manifest: a deployment posted to a plan's URL may leave the plan out") {
  auto implied = parseDeploymentForPlan(
      "{\"deployment_id\": \"d2\", \"instance_count\": 2,\n"
      " \"payload_coordinates\": [{\"payload_name\": \"a\", \"coordinates\": {\"image\": \"x\"}}]}",
      "request body", "nginx-deployment-plan");
  INFO(implied.status().toString());
  REQUIRE(implied.isOk());
  CHECK(implied->plan == "nginx-deployment-plan");
  CHECK(implied->deployment_id == "d2");

  auto same = parseDeploymentForPlan(kMrdsDeployment, "request body", "nginx-deployment-plan");
  REQUIRE(same.isOk());
  CHECK(same->plan == "nginx-deployment-plan");

  auto other = parseDeploymentForPlan(kMrdsDeployment, "request body", "other-plan");
  REQUIRE_FALSE(other.isOk());
  REQUIRE(other.status().details().size() == 1);
  CHECK(other.status().details()[0] ==
        ErrorDetail{"deployment_plan_name", "is \"nginx-deployment-plan\" but the request is for plan \"other-plan\"",
                    "request body:1:23"});
  CHECK(parseDeployment(
            "{deployment_id: d, instance_count: 1, payload_coordinates: [{payload_name: a, coordinates: {image: x}}]}",
            "request body")
            .status()
            .details()[0]
            .field == "deployment_plan_name");
}

TEST_CASE("manifest: hostile input is an error, never a crash or an exception") {
  CHECK_FALSE(parseManifest("a: &a [*a]\n", "x").isOk());  // recursive alias
  CHECK_FALSE(parseManifest(std::string(200, '[') + std::string(200, ']'), "x").isOk());
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'h'; ++c) {  // each level aliases the previous one ten times
    std::string_view self(&c, 1);
    char p = static_cast<char>(c - 1);
    std::string_view prev(&p, 1);
    laughs.append(joined({self, ": &", self, " ["}));
    for (int i = 0; i < 10; ++i) laughs.append(joined({i == 0 ? "*" : ", *", prev}));
    laughs.append("]\n");
  }
  auto r = parseManifest(laughs, "x");
  REQUIRE_FALSE(r.isOk());
  CHECK(contains(r.status().message(), "too large"));
  CHECK_FALSE(parseManifest(std::string("\0\xff\xfe{", 4), "x").isOk());
  CHECK_FALSE(parseManifest("{a: 1, a: 2}", "x").isOk());
  CHECK_FALSE(parseManifest("? [complex]\n: key\n", "x").isOk());
}

// yaml-cpp 0.7 reads a token no rule takes at the top of a document as an endless run of
// empty documents (found by tests/fuzz/manifest_fuzz); each must end as a syntax error.
TEST_CASE("manifest: a stray token where a document begins is an error, not an endless loop") {
  for (const char* text : {"\n,\x8b", ",", "nodes: []\n---\n,\n", "]", "}"}) {
    CAPTURE(text);
    auto r = parseManifest(text, "body");
    REQUIRE_FALSE(r.isOk());
    CHECK(r.status().code() == Code::kInvalidArgument);
  }
  auto r = parseManifest("\n,", "body");
  REQUIRE_FALSE(r.isOk());
  CHECK(contains(r.status().message(), "body:2:1: YAML syntax error: unexpected ','"));
}

TEST_CASE("manifest: a node may leave total out, for its agent to report") {
  auto node = parseNode(R"({"name": "n1", "update_domain": "u", "cluster": "edge"})", "body");
  REQUIRE(node.isOk());
  CHECK(node->total.cores == 0);
  CHECK(node->total.memory_gib == 0);
}

TEST_CASE("manifest error: a plan's approval.min_approvals is a whole number from 1 to 20") {
  for (const std::string bad : {"0", "21", "two"}) {
    CAPTURE(bad);
    auto details = parseErrors(R"(plans:
  - name: p
    namespace: ns
    service_name: svc
    applications: [{payload_name: app, resources: {cores: 1, memory_gib: 1}}]
    approval: {min_approvals: )" + bad + "}\n");
    REQUIRE(details.size() == 1);
    CHECK(details[0].field == "plans[0].approval.min_approvals");
  }
}

TEST_CASE("manifest error: every problem names the line and the column of the key or value at fault, in file order") {
  auto details = parseErrors(
      "nodes:\n"
      "  - name: n1\n"
      "    colour: blue\n"
      "    updateDomain: ud\n"
      "    totalResources: {cores: lots, memory: 1}\n"
      "  - name: Bad_Name\n"
      "    updateDomain: ud\n");
  REQUIRE(details.size() == 3);
  CHECK(details[0] == ErrorDetail{"nodes[0].colour", details[0].message, "m.yaml:3:5"});  // the key
  CHECK(details[1].location == "m.yaml:5:29");                                            // the value "lots"
  CHECK(details[1].field == "nodes[0].totalResources.cores");
  CHECK(details[2].location == "m.yaml:6:11");  // "Bad_Name"
  // A required key left out: where its mapping begins.
  CHECK(detailAt(parseErrors("nodes:\n  - name: n1\n    totalResources: {cores: 1, memory: 1}\n"),
                 "nodes[0].updateDomain")
            .location == "m.yaml:2:5");
  // JSON bodies too.
  CHECK(detailAt(parseErrors("{\"nodes\": [{\"name\": \"n1\",\n  \"update_domain\": 7, \"colour\": 1}]}"),
                 "nodes[0].colour")
            .location == "m.yaml:2:23");
  // The first in file order is the message, however the parser came to it.
  CHECK(parseManifest("nodes:\n  - name: n1\n    colour: blue\n    updateDomain: ud\n", "m.yaml")
            .status()
            .message()
            .starts_with("m.yaml:3:5: nodes[0].colour: unknown key"));
}

TEST_CASE("manifest error: a YAML syntax error names its line and column") {
  auto details = parseErrors("nodes:\n  - name: a\n    labels: {zone: b\n  - name: b\n");
  REQUIRE(details.size() == 1);
  CHECK(details[0].location == "m.yaml:4:9");  // where yaml-cpp finds the flow mapping unclosed
  CHECK(parseManifest("a: [1, 2\nb: 3\n", "body").status().message().starts_with("body:2:2: YAML syntax error"));
}

TEST_CASE("manifest: each record knows where its fields were written, by their canonical path") {
  Manifest m = parseOk(std::string(kMrdsPlan) + "    strategy: {script: rolling, params: {max_surge: 1}}\n");
  REQUIRE(m.plans.size() == 1);
  const auto& plan = m.plans[0];
  CHECK(plan.path == "plans[0]");
  CHECK(plan.location == "m.yaml:2:5");
  const model::FieldPlace& service = plan.fields.at("service_name");
  CHECK(service.field == "plans[0].serviceName");
  CHECK(service.key == "m.yaml:4:5");
  CHECK(service.value == "m.yaml:4:18");
  CHECK(plan.fields.at("matching_capabilities").field == "plans[0].matchingComputeCapabilities");
  const model::FieldPlace& surge = plan.fields.at("strategy.params.max_surge");
  CHECK(surge.field == "plans[0].strategy.params.max_surge");
  CHECK(surge.key == "m.yaml:15:42");
  CHECK(surge.value == "m.yaml:15:53");
  // A document that is the record: paths below it have no prefix.
  Manifest single = parseOk(kMrdsDeployment);
  CHECK(single.deployments[0].path.empty());
  CHECK(single.deployments[0].fields.at("payload_coordinates").field == "payload_coordinates");
}

TEST_CASE("manifest: an application's depends_on names the plan's other applications") {
  const model::Plan plan =
      parseOk(planWith("    dependsOn: [web]\n") + "  - payloadName: web\n    resources: {cores: 1, memory: 1}\n")
          .plans.at(0)
          .value;
  CHECK(plan.applications[0].depends_on == std::vector<std::string>{"web"});
  // Started after what it depends on; otherwise as declared.
  std::vector<std::string> order;
  for (const model::Application* app : model::startOrder(plan)) order.push_back(app->payload_name);
  CHECK(order == std::vector<std::string>{"web", "app"});
  // The wire shape keeps it.
  CHECK(model::Json(plan.applications[0])["depends_on"] == model::Json::array({"web"}));
}

TEST_CASE("manifest error: depends_on of an unknown application, of itself, twice, or in a cycle") {
  SUBCASE("unknown, itself, twice") {
    auto details = parseErrors(planWith("    dependsOn: [app, db]\n") +
                               "  - payloadName: b\n    resources: {cores: 1, memory: 1}\n"
                               "    depends_on: [app, app]\n");
    CHECK(detailAt(details, "applications[0].dependsOn[0]").message == "an application cannot depend on itself");
    CHECK(detailAt(details, "applications[0].dependsOn[1]").message == "'db' is not an application of this plan");
    CHECK(detailAt(details, "applications[1].depends_on[1]").message == "'app' is named twice");
    CHECK(details.size() == 3);
  }
  SUBCASE("a cycle") {
    auto details = parseErrors(planWith("    dependsOn: [b]\n") +
                               "  - payloadName: b\n    resources: {cores: 1, memory: 1}\n    dependsOn: [c]\n"
                               "  - payloadName: c\n    resources: {cores: 1, memory: 1}\n    dependsOn: [app]\n");
    REQUIRE(details.size() == 1);
    CHECK(details[0].field == "applications[2].dependsOn");
    CHECK(details[0].message == "depends on itself through app → b → c → app");
  }
}

TEST_CASE("manifest error: traffic.port must be a TCP port one of the plan's applications declares") {
  const std::string traffic = "traffic: {listen: \"127.0.0.1:18080\", port: 9100}\n";
  SUBCASE("declared by the second application") {
    const model::Plan plan =
        parseOk(joined({planWith("    ports: [{port: 80}]\n", traffic),
                        "  - payloadName: b\n    resources: {cores: 1, memory: 1}\n", "    ports: [{port: 9100}]\n"}))
            .plans.at(0)
            .value;
    CHECK(plan.traffic.port == 9100);
    CHECK(model::Json(plan.traffic)["port"] == 9100);
  }
  SUBCASE("declared by none, or only as UDP") {
    auto details = parseErrors(planWith("    ports: [{port: 80}, {protocol: UDP, port: 9100}]\n", traffic));
    CHECK(detailAt(details, "traffic.port").message == "must be a TCP port one of the plan's applications declares");
  }
}

TEST_CASE("manifest error: pod names another application of the plan, which joins no pod itself") {
  SUBCASE("a sidecar in web's pod") {
    const model::Plan plan =
        parseOk(planWith("") + "  - payloadName: sidecar\n    resources: {cores: 1, memory: 1}\n    pod: app\n")
            .plans.at(0)
            .value;
    CHECK(plan.applications[1].pod == "app");
    CHECK(model::Json(plan.applications[1])["pod"] == "app");
    CHECK_FALSE(model::Json(plan.applications[0]).contains("pod"));  // none: no key, which reads back
  }
  SUBCASE("itself, unknown, a chain") {
    auto details = parseErrors(planWith("    pod: app\n") +
                               "  - payloadName: b\n    resources: {cores: 1, memory: 1}\n    pod: db\n"
                               "  - payloadName: c\n    resources: {cores: 1, memory: 1}\n    pod: d\n"
                               "  - payloadName: d\n    resources: {cores: 1, memory: 1}\n    pod: c\n");
    CHECK(detailAt(details, "applications[0].pod").message == "an application cannot join its own pod");
    CHECK(detailAt(details, "applications[1].pod").message == "'db' is not an application of this plan");
    CHECK(detailAt(details, "applications[2].pod").message == "'d' joins the pod of 'c': name that one instead");
    CHECK(detailAt(details, "applications[3].pod").message == "'c' joins the pod of 'd': name that one instead");
    CHECK(details.size() == 4);
  }
}
