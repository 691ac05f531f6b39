// /v1/agents over real HTTP: a test plays the node agent's part (docs/agents.md#the-protocol).

#include <doctest/doctest.h>

#include <thread>

#include "drivers/agent/agent_hub.h"
#include "tests/api/api_test_support.h"
#include "tests/support/files.h"

using namespace tide;
using namespace tide::testing;

namespace {

const char* kAgentEdgeManifest = R"(clusters:
  - {name: edge, driver: agent}
  - {name: local, driver: process}
nodes:
  - {name: n1, cluster: edge, update_domain: ud-1}
  - {name: n2, cluster: edge, update_domain: ud-2, total: {cores: 4, memory_gib: 8}}
  - {name: p1, cluster: local, update_domain: ud-1, total: {cores: 4, memory_gib: 8}}
)";

const char* kAgentGoodReport = R"({"agent_version": "0.14.0", "epoch": 1, "applied_revision": 0,
  "resources": {"cores": 8, "memory_gib": 15.5},
  "instances": [{"id": "118", "state": "RUNNING", "handle": "pid:4242:889911", "ports": {"tcp/80": 31080},
                 "exit_code": 0, "message": "", "healthy": true}],
  "volumes": []})";

struct AgentApiFixture {
  std::filesystem::path dir = freshDir("api-agents", "hub");
  FakeClock hub_clock{*parseTimestamp("2026-11-21T12:00:00Z")};
  std::unique_ptr<drivers::AgentHub> hub;
  std::unique_ptr<ApiHarness> h;
  std::string n1_token;

  explicit AgentApiFixture(int long_polls = 64) {
    auto opened = drivers::AgentHub::open(dir.string(), hub_clock);
    REQUIRE(opened.isOk());
    hub = std::move(opened).value();
    api::ServerOptions options = testServerOptions();
    options.agents = hub.get();
    options.agent_long_polls = long_polls;
    h = std::make_unique<ApiHarness>(options);
    REQUIRE(h->post("/v1/manifests", kAgentEdgeManifest, "application/yaml").status == 201);
    Reply token = h->post("/v1/tokens", R"({"name": "n1-agent", "role": "agent", "node": "n1"})");
    REQUIRE(token.status == 201);
    CHECK(token.json()["node"] == "n1");
    n1_token = token.json()["token"];
  }
  ~AgentApiFixture() { h.reset(); }
};

drivers::DesiredInstance desiredOn(const std::string& node, const std::string& id) {
  drivers::DesiredInstance instance;
  instance.spec.id = id;
  instance.spec.node = node;
  instance.spec.payload_name = "web";
  instance.spec.coordinates = Json{{"image", "nginx:1.25"}};
  return instance;
}

}  // namespace

TEST_CASE("api agents: the desired document answers at once, then long-polls for a change") {
  AgentApiFixture f;
  Reply first = f.h->get("/v1/agents/n1/desired", f.n1_token);
  REQUIRE(first.status == 200);
  const Json document = first.json();
  CHECK(document["node"] == "n1");
  CHECK(document["epoch"] == f.hub->epoch());
  CHECK(document["instances"].empty());

  const std::string since = "/v1/agents/n1/desired?epoch=" + std::to_string(document["epoch"].get<int64_t>()) +
                            "&revision=" + std::to_string(document["revision"].get<int64_t>());
  Reply unchanged = f.h->get(since + "&wait=0", f.n1_token);
  REQUIRE(unchanged.status == 200);
  CHECK(unchanged.json()["revision"] == document["revision"]);

  Reply changed;
  std::thread poller([&] { changed = f.h->get(since + "&wait=60", f.n1_token); });
  REQUIRE(f.hub->setInstance(desiredOn("n1", "118")).isOk());
  poller.join();
  REQUIRE(changed.status == 200);
  CHECK(changed.json()["revision"].get<int64_t>() == document["revision"].get<int64_t>() + 1);
  CHECK(changed.json()["instances"][0]["id"] == "118");
  CHECK(changed.json()["instances"][0]["want"] == "running");

  Reply half = f.h->get("/v1/agents/n1/desired?epoch=1", f.n1_token);
  CHECK(half.status == 400);
  CHECK(half.detailNames("revision"));
  CHECK(f.h->get("/v1/agents/nowhere/desired").status == 404);
}

TEST_CASE("api agents: with every long-poll slot held, a poll is answered at once with the document as it is") {
  AgentApiFixture f(/*long_polls=*/0);
  const Json document = f.h->get("/v1/agents/n1/desired", f.n1_token).json();
  const std::string since = "/v1/agents/n1/desired?epoch=" + std::to_string(document["epoch"].get<int64_t>()) +
                            "&revision=" + std::to_string(document["revision"].get<int64_t>());
  Reply answered = f.h->get(since + "&wait=60", f.n1_token);
  REQUIRE(answered.status == 200);
  CHECK(answered.json()["revision"] == document["revision"]);
  CHECK(answered.header("X-Tide-Long-Poll") == "unavailable");

  // A held poll says nothing of the kind.
  AgentApiFixture held(/*long_polls=*/1);
  const Json first = held.h->get("/v1/agents/n1/desired", held.n1_token).json();
  Reply waited = held.h->get("/v1/agents/n1/desired?epoch=" + std::to_string(first["epoch"].get<int64_t>()) +
                                 "&revision=" + std::to_string(first["revision"].get<int64_t>()) + "&wait=0",
                             held.n1_token);
  REQUIRE(waited.status == 200);
  CHECK(waited.header("X-Tide-Long-Poll").empty());
}

TEST_CASE("api agents: an agent token serves its own node only, admin may call any node's routes") {
  AgentApiFixture f;
  Reply other = f.h->get("/v1/agents/n2/desired", f.n1_token);
  CHECK(other.status == 403);
  CHECK(contains(other.body, "n1"));
  Reply report_other = f.h->post("/v1/agents/n2/report", kAgentGoodReport, "application/json", f.n1_token);
  CHECK(report_other.status == 403);
  CHECK_FALSE(f.hub->lastReport("n2").has_value());
  Reply plans = f.h->get("/v1/plans", f.n1_token);
  CHECK(plans.status == 403);
  CHECK(contains(plans.body, "n1"));
  CHECK(f.h->get("/v1/agents/n1/desired", kOperatorToken).status == 403);
  CHECK(f.h->get("/v1/agents/n2/desired", kAdminToken).status == 200);
}

TEST_CASE("api agents: agent tokens need an existing node, and only agent tokens take one") {
  AgentApiFixture f;
  Reply no_node = f.h->post("/v1/tokens", R"({"name": "a", "role": "agent"})");
  CHECK(no_node.status == 400);
  CHECK(no_node.detailNames("node"));
  CHECK(f.h->post("/v1/tokens", R"({"name": "b", "role": "agent", "node": "n9"})").status == 404);
  Reply viewer = f.h->post("/v1/tokens", R"({"name": "c", "role": "viewer", "node": "n1"})");
  CHECK(viewer.status == 400);
  CHECK(viewer.detailNames("node"));
  Reply list = f.h->get("/v1/tokens");
  REQUIRE(list.status == 200);
  bool listed = false;
  const Json tokens = list.json();
  for (const Json& token : tokens["items"]) listed |= token["name"] == "n1-agent" && token["node"] == "n1";
  CHECK(listed);
}

TEST_CASE("api agents: a bad report is 400 naming the field and applies nothing") {
  AgentApiFixture f;
  Reply bad = f.h->post("/v1/agents/n1/report",
                        R"({"agent_version": "0.14.0", "epoch": 1, "applied_revision": 0,
                            "resources": {"cores": 8, "memory_gib": 15.5},
                            "instances": [{"id": "118", "state": "SLEEPING"}]})",
                        "application/json", f.n1_token);
  CHECK(bad.status == 400);
  CHECK(bad.detailNames("instances[0].state"));
  CHECK_FALSE(f.hub->lastReport("n1").has_value());
  CHECK(f.h->get("/v1/nodes/n1").json()["total"]["cores"] == 0);
  CHECK(f.h->post("/v1/agents/n1/report", "{not json", "application/json", f.n1_token).status == 400);
}

TEST_CASE("api agents: a report is the node's heartbeat and fills the resources its manifest left out") {
  AgentApiFixture f;
  const int64_t events_before = f.h->lastEventSeq();
  Reply reported = f.h->post("/v1/agents/n1/report", kAgentGoodReport, "application/json", f.n1_token);
  REQUIRE(reported.status == 200);
  CHECK(reported.json() == Json{{"epoch", f.hub->epoch()}, {"revision", 0}});
  REQUIRE(f.hub->lastReport("n1").has_value());
  CHECK(f.hub->lastReport("n1")->instances.at(0).status.healthy == true);

  Reply node = f.h->get("/v1/nodes/n1");
  REQUIRE(node.status == 200);
  CHECK(node.json()["total"] == Json{{"cores", 8}, {"memory_gib", 15.5}});
  CHECK(node.json()["remaining"]["cores"] == 8);
  CHECK(node.json()["agent"]["reachable"] == true);
  CHECK(node.json()["agent"]["version"] == "0.14.0");
  // A second report with the same resources writes nothing.
  const int64_t events_after_fill = f.h->lastEventSeq();
  CHECK(events_after_fill == events_before + 1);
  REQUIRE(f.h->post("/v1/agents/n1/report", kAgentGoodReport, "application/json", f.n1_token).status == 200);
  CHECK(f.h->lastEventSeq() == events_after_fill);
  // A node whose manifest gave its total keeps it.
  REQUIRE(f.h->post("/v1/agents/n2/report", kAgentGoodReport, "application/json", kAdminToken).status == 200);
  CHECK(f.h->get("/v1/nodes/n2").json()["total"]["cores"] == 4);

  f.hub_clock.advance(std::chrono::seconds(11));
  Reply listed = f.h->get("/v1/nodes");
  REQUIRE(listed.status == 200);
  const Json nodes = listed.json();
  for (const Json& item : nodes["items"]) {
    if (item["name"] == "p1") CHECK_FALSE(item.contains("agent"));
    if (item["name"] == "n1") {
      CHECK(item["agent"]["reachable"] == false);
      CHECK(item["agent"]["last_heartbeat"] == "2026-11-21T12:00:00.000Z");
    }
  }
}

TEST_CASE("api agents: a log tail the host asks for comes back through the agent's post") {
  AgentApiFixture f;
  Result<std::string> fetched = Status::internal("not yet");
  std::thread teller([&] { fetched = f.hub->fetchLog("n1", "118", 1 << 20, std::chrono::seconds(60)); });
  Json document = Json::object();
  while (document.value("logs", Json::array()).empty()) {
    Reply polled = f.h->get("/v1/agents/n1/desired", f.n1_token);
    REQUIRE(polled.status == 200);
    document = polled.json();
  }
  CHECK(document["logs"] == Json::array({"118"}));
  Reply posted = f.h->post("/v1/agents/n1/logs/118", "hello from n1\n", "text/plain", f.n1_token);
  CHECK(posted.status == 204);
  teller.join();
  REQUIRE(fetched.isOk());
  CHECK(*fetched == "hello from n1\n");
}
