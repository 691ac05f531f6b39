// `tide serve` serves node agents (docs/agents.md): the hub over <data_dir>/agents, a new
// epoch at every start with the same documents, the agent routes and node views, through
// the real binary over loopback. The test plays the agent's part.

#include <doctest/doctest.h>

#include "tests/cli/serve_process.h"

using namespace tide;
using namespace tide::testing;

namespace {

const char* kAgentCluster = R"(clusters:
  - {name: edge, driver: agent}
nodes:
  - {name: n1, cluster: edge, update_domain: ud-1}
)";

}  // namespace

TEST_CASE("serve: agents pull documents under a new epoch after a restart and fill their node's resources") {
  ServeProcess serve;
  httplib::Client admin(serve.url());
  admin.set_bearer_token_auth(serve.token().c_str());
  auto applied = admin.Post("/v1/manifests", kAgentCluster, "application/yaml");
  REQUIRE(applied);
  REQUIRE(applied->status == 201);
  CliRun created = serve.tide("token create n1-agent --role agent --node n1 -o json");
  REQUIRE_MESSAGE(created.code == 0, created.err);
  const std::string secret = nlohmann::json::parse(created.out)["token"];

  auto desired = [&] {
    httplib::Client agent(serve.url());
    agent.set_bearer_token_auth(secret.c_str());
    auto reply = agent.Get("/v1/agents/n1/desired");
    REQUIRE(reply);
    REQUIRE(reply->status == 200);
    return nlohmann::json::parse(reply->body);
  };
  const int64_t first_epoch = desired()["epoch"];
  CHECK(std::filesystem::exists(serve.dataDir() / "agents" / "epoch.json"));

  httplib::Client agent(serve.url());
  agent.set_bearer_token_auth(secret.c_str());
  const std::string report = R"({"agent_version": "0.14.0", "epoch": )" + std::to_string(first_epoch) +
                             R"(, "applied_revision": 0, "resources": {"cores": 8, "memory_gib": 16}})";
  auto reported = agent.Post("/v1/agents/n1/report", report, "application/json");
  REQUIRE(reported);
  CHECK(reported->status == 200);
  CliRun nodes = serve.tide("node list -o json");
  REQUIRE(nodes.code == 0);
  const nlohmann::json listed = nlohmann::json::parse(nodes.out)["items"];
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["total"]["cores"] == 8);
  CHECK(listed[0]["agent"]["reachable"] == true);
  CHECK(listed[0]["agent"]["version"] == "0.14.0");
  CHECK(serve.tide("node list").out.find("reachable, 0.14.0") != std::string::npos);

  REQUIRE(serve.stop() == 0);
  serve.start();
  CHECK(desired()["epoch"] == first_epoch + 1);
}
