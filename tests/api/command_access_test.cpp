// Raw commands and exec health checks need the admin role or process.command_allow
// (host/api/command_access.cpp); image coordinates stay open to operators.

#include <doctest/doctest.h>

#include <string>

#include "tests/api/api_test_support.h"

using namespace tide;
using namespace tide::testing;

namespace {

Json deploymentWith(const std::string& id, const Json& coordinates) {
  return {{"deployment_id", id},
          {"payload_coordinates", {{{"payload_name", "nginx-payload"}, {"coordinates", coordinates}}}},
          {"instance_count", 1}};
}

Json rawCommand(const std::vector<std::string>& argv) { return {{"command", argv}}; }

// The MRDS plan with an exec health check running `program`.
std::string planWithExecCheck(const std::string& name, const std::string& program) {
  return R"({"name":")" + name + R"(","namespace":"n","service_name":"s",
      "applications":[{"payload_name":"p","resources":{"cores":1,"memory":1},
        "health_check":{"type":"exec","command":[")" + program + R"(","-c","true"]}}]})";
}

api::ServerOptions withCommandAllow(std::vector<std::string> patterns) {
  api::ServerOptions options = testServerOptions();
  options.command_allow = std::move(patterns);
  return options;
}

}  // namespace

TEST_CASE("api: an operator's raw command deployment is refused with 403 naming the field, and nothing is written") {
  ApiHarness h;
  addInventoryAndPlan(h);
  Json before = h.everything();

  Reply refused = h.post(kMrdsDeployments, deploymentWith("d1", rawCommand({"/bin/sh", "-c", "cat .tide/admin.token"})).dump(),
                         "application/json", kOperatorToken);
  CHECK(refused.status == 403);
  CHECK(refused.errorCode() == "permission_denied");
  CHECK(refused.detailNames("payload_coordinates[0].coordinates.command"));
  CHECK(refused.body.find("admin role") != std::string::npos);
  CHECK(refused.body.find("process.command_allow") != std::string::npos);
  CHECK(h.everything() == before);
  CHECK(h.get(kMrdsDeployments).json()["items"].empty());

  SUBCASE("image coordinates stay open to operators") {
    CHECK(h.post(kMrdsDeployments, deploymentWith("d2", {{"image", "nginx:latest"}}).dump(), "application/json",
                 kOperatorToken)
              .status == 201);
  }
  SUBCASE("an admin may deploy the raw command") {
    CHECK(h.post(kMrdsDeployments, deploymentWith("d2", rawCommand({"/bin/sh", "-c", "true"})).dump()).status == 201);
  }
  SUBCASE("a manifest carrying it is refused as a whole") {
    std::string manifest = R"(plans:
  - {name: other, namespace: n, serviceName: s, applications: [{payloadName: p, resources: {cores: 1, memory: 1}}]}
deployments:
  - plan: other
    deployment_id: d3
    payload_coordinates: [{payload_name: p, coordinates: {command: ["/bin/sh", "-c", "env"]}}]
    instance_count: 1
)";
    Reply manifest_refused = h.post("/v1/manifests", manifest, "application/yaml", kOperatorToken);
    CHECK(manifest_refused.status == 403);
    CHECK(manifest_refused.detailNames("payload_coordinates[0].coordinates.command"));
    CHECK(h.everything() == before);
  }
}

TEST_CASE("api: an operator's plan with an exec health check is refused with 403 unless admin or allow-listed") {
  ApiHarness h(withCommandAllow({"/usr/bin/python3*", "/opt/checks/*"}));
  REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
  Json before = h.everything();

  Reply refused = h.post("/v1/plans", planWithExecCheck("a", "/bin/sh"), "application/json", kOperatorToken);
  CHECK(refused.status == 403);
  CHECK(refused.detailNames("applications[0].health_check.command"));
  CHECK(refused.body.find("/bin/sh") != std::string::npos);
  CHECK(h.everything() == before);

  CHECK(h.post("/v1/plans", planWithExecCheck("b", "/opt/checks/ready"), "application/json", kOperatorToken).status ==
        201);
  CHECK(h.post("/v1/plans", planWithExecCheck("c", "/bin/sh")).status == 201);  // admin
}

TEST_CASE("api: process.command_allow lets operators run the programs it matches, by argv[0]") {
  ApiHarness h(withCommandAllow({"/usr/bin/python3*"}));
  addInventoryAndPlan(h);
  CHECK(h.post(kMrdsDeployments, deploymentWith("d1", rawCommand({"/usr/bin/python3.11", "-m", "http.server"})).dump(),
               "application/json", kOperatorToken)
            .status == 201);
  // argv[0] decides: an allowed program later in argv does not make /bin/sh allowed.
  Reply refused = h.post(kMrdsDeployments, deploymentWith("d2", rawCommand({"/bin/sh", "/usr/bin/python3"})).dump(),
                         "application/json", kOperatorToken);
  CHECK(refused.status == 403);
  CHECK(refused.detailNames("payload_coordinates[0].coordinates.command"));
}
