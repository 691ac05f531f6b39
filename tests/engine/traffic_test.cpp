// Traffic (docs/architecture.md#traffic): the manifest's `traffic:`, the ledger's checks of a
// plan's ports, the split's per-server weights, and the control loop driving a FakeRouter:
// instances join after readiness, route(...) holds the rollout until the router applies it,
// a restarted engine re-applies the persisted split, and instances drain before they stop.

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <sstream>

#include "host/cli/views.h"
#include "host/config/manifest.h"
#include "host/engine/traffic_controller.h"
#include "tests/engine/engine_test_support.h"
#include "tests/ledger/ledger_test_util.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_router.h"

using namespace tide;
using namespace tide::testing;
using tide::model::Json;

namespace {

// A socket listening on 127.0.0.1 at a port the kernel picks; closed on destruction.
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
    REQUIRE(::listen(fd, 1) == 0);
    socklen_t len = sizeof sa;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    port = ntohs(sa.sin_port);
  }
  ~Listener() { ::close(fd); }
};


std::string trafficPlanYaml(const std::string& traffic) {
  return "name: web\nnamespace: web-dev\nservice_name: web\napplications:\n"
         "  - payload_name: web\n    resources: {cores: 1, memory_gib: 1}\n    ports: [{protocol: TCP, port: 80}]\n"
         "traffic:\n" +
         traffic;
}

}  // namespace

TEST_CASE("traffic: per-server weights give each deployment its share of requests") {
  // new 10% on 1 server, old 90% on 9: the same weight for every server.
  auto w = engine::serverWeights({{"v2", 1}, {"v1", 9}}, {{"v2", 10}, {"v1", 90}});
  CHECK(w["v2"] == engine::kMaxServerWeight);
  CHECK(w["v1"] == engine::kMaxServerWeight);
  // 50/50 on 1 vs 3: the lone server weighs three times as much.
  w = engine::serverWeights({{"v2", 1}, {"v1", 3}}, {{"v2", 50}, {"v1", 50}});
  CHECK(w["v2"] == 256);
  CHECK(w["v1"] == 85);
  // No route: equal weights.
  w = engine::serverWeights({{"v2", 2}, {"v1", 5}}, {});
  CHECK(w["v2"] == w["v1"]);
  CHECK(w["v1"] > 0);
  // A small share never rounds to no traffic at all.
  w = engine::serverWeights({{"v2", 1}, {"v1", 1}}, {{"v2", 0.1}, {"v1", 99.9}});
  CHECK(w["v2"] == 1);
  // 0%: weight 0.
  w = engine::serverWeights({{"v2", 1}, {"v1", 1}}, {{"v2", 0}, {"v1", 100}});
  CHECK(w["v2"] == 0);
}

TEST_CASE("traffic: the manifest's traffic section") {
  auto plan = config::parsePlan(trafficPlanYaml("  listen: 127.0.0.1:8080\n  preview_listen: \"localhost:8081\"\n"
                                                "  health: {path: /healthz}\n"
                                                "  header_routes: [{header: X-Canary, value: always}]\n"
                                                "  max_connections: 8\n"),
                                "p.yaml");
  REQUIRE_MESSAGE(plan.isOk(), plan.status().toString());
  CHECK(plan->traffic.listen == "127.0.0.1:8080");
  CHECK(plan->traffic.preview_listen == "localhost:8081");
  CHECK(plan->traffic.health_path == "/healthz");
  REQUIRE(plan->traffic.header_routes.size() == 1);
  CHECK(plan->traffic.header_routes[0].header == "X-Canary");
  CHECK(plan->traffic.drain_seconds == 10);
  CHECK(plan->traffic.max_connections == 8);
  // The JSON form round-trips through the records' shape.
  Json j = Json(*plan)["traffic"];
  CHECK(j["listen"] == "127.0.0.1:8080");
  CHECK(j["health"]["path"] == "/healthz");
  CHECK(j.get<model::PlanTraffic>() == plan->traffic);

  SUBCASE("a bad address, with its line") {
    auto bad = config::parsePlan(trafficPlanYaml("  listen: 10.0.0.300:80\n"), "p.yaml");
    REQUIRE_FALSE(bad.isOk());
    REQUIRE(!bad.status().details().empty());
    CHECK(bad.status().details()[0].field == "traffic.listen");
    CHECK(bad.status().details()[0].location == "p.yaml:9:11");  // line 9: "  listen: ..."
    for (const char* address : {"8080", "web:8080", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:"}) {
      CHECK_FALSE(config::parsePlan(trafficPlanYaml(std::string("  listen: \"") + address + "\"\n"), "p.yaml").isOk());
    }
  }
  SUBCASE("listen and preview_listen on one port") {
    auto bad = config::parsePlan(trafficPlanYaml("  listen: 127.0.0.1:8080\n  preview_listen: 127.0.0.1:8080\n"),
                                 "p.yaml");
    REQUIRE_FALSE(bad.isOk());
    CHECK(bad.status().details()[0].field == "traffic.preview_listen");
    CHECK(bad.status().details()[0].location == "p.yaml:10:19");
  }
  SUBCASE("max_connections is a whole number of at least 1") {
    for (const char* value : {"0", "2.5", "-1", "many"}) {
      auto bad = config::parsePlan(
          trafficPlanYaml(std::string("  listen: 127.0.0.1:8080\n  max_connections: ") + value + "\n"), "p.yaml");
      REQUIRE_FALSE(bad.isOk());
      CHECK(bad.status().details()[0].field == "traffic.max_connections");
      CHECK(bad.status().details()[0].location == "p.yaml:10:20");
    }
  }
  SUBCASE("an unknown key") {
    auto bad = config::parsePlan(trafficPlanYaml("  listen: 127.0.0.1:8080\n  weights: {a: 1}\n"), "p.yaml");
    REQUIRE_FALSE(bad.isOk());
    CHECK(bad.status().toString().find("weights") != std::string::npos);
  }
  SUBCASE("a JSON body") {
    Json body{{"name", "web"},
              {"namespace", "web-dev"},
              {"service_name", "web"},
              {"applications", Json::array({{{"payload_name", "web"}, {"resources", {{"cores", 1}, {"memory_gib", 1}}}}})},
              {"traffic", {{"listen", "127.0.0.1:9000"}, {"drain_seconds", 3}}}};
    auto parsed = config::parsePlan(body.dump(), "body");
    REQUIRE_MESSAGE(parsed.isOk(), parsed.status().toString());
    CHECK(parsed->traffic.listen == "127.0.0.1:9000");
    CHECK(parsed->traffic.drain_seconds == 3);
  }
}

TEST_CASE("traffic: the ledger refuses a port another plan or program holds") {
  LedgerFixture f;
  f.addInventory();
  const int port = freePort();
  model::Plan web = LedgerFixture::plan("web");
  web.traffic.listen = "127.0.0.1:" + std::to_string(port);
  auto created = f.ledger->plans().createPlan(web, "alice");
  REQUIRE_MESSAGE(created.isOk(), created.status().toString());
  CHECK(created->traffic == web.traffic);
  CHECK(f.ledger->plans().getPlan("web")->traffic.listen == web.traffic.listen);

  SUBCASE("two plans on one port: 409 naming the other plan and the address") {
    model::Plan api = LedgerFixture::plan("api");
    api.traffic.listen = "localhost:" + std::to_string(port);
    auto refused = f.ledger->plans().createPlan(api, "alice");
    REQUIRE_FALSE(refused.isOk());
    CHECK(refused.status().code() == Code::kConflict);
    CHECK(refused.status().message().find("plan 'web'") != std::string::npos);
    CHECK(refused.status().message().find(web.traffic.listen) != std::string::npos);
  }
  SUBCASE("a port some program listens on") {
    Listener taken;
    model::Plan api = LedgerFixture::plan("api");
    api.traffic.listen = "127.0.0.1:" + std::to_string(taken.port);
    auto refused = f.ledger->plans().createPlan(api, "alice");
    REQUIRE_FALSE(refused.isOk());
    CHECK(refused.status().code() == Code::kUnprocessable);
    CHECK(refused.status().message().find("in use by another program") != std::string::npos);
  }
  SUBCASE("an update keeping the plan's own port is not probed (the router holds it)") {
    Listener router_holds_it;
    model::Plan moved = *created;
    moved.traffic.listen = "127.0.0.1:" + std::to_string(router_holds_it.port);
    // Moving onto a port in use is refused...
    CHECK(f.ledger->plans().updatePlan(moved, std::nullopt, "alice").status().code() == Code::kUnprocessable);
    // ...but a plan whose port its own router serves can still change other fields.
    model::Plan same = *created;
    same.traffic.drain_seconds = 5;
    auto updated = f.ledger->plans().updatePlan(same, std::nullopt, "alice");
    REQUIRE_MESSAGE(updated.isOk(), updated.status().toString());
    CHECK(updated->changed == std::vector<std::string>{"traffic"});
  }
  SUBCASE("listen and preview_listen on one port") {
    model::Plan api = LedgerFixture::plan("api");
    api.traffic.listen = "127.0.0.1:" + std::to_string(freePort());
    api.traffic.preview_listen = api.traffic.listen;
    CHECK(f.ledger->plans().createPlan(api, "alice").status().code() == Code::kInvalidArgument);
  }
  SUBCASE("the route is kept with the plan, without a new generation") {
    const int64_t generation = f.ledger->plans().getPlan("web")->meta.generation;
    const Json route{{"deployment", "v2"}, {"weights", {{"new", 10}, {"old", 90}}}};
    REQUIRE(f.ledger->plans().setPlanTrafficRoute("web", route, "engine").isOk());
    auto read = f.ledger->plans().getPlan("web");
    CHECK(read->traffic_route == route);
    CHECK(read->meta.generation == generation);
  }
}

// --- the control loop with a FakeRouter -------------------------------------------------------------------

namespace {

// drain_seconds bounds how long a leaving instance waits for a router that does not take it
// out (a lagging FakeRouter); only the drain test needs it longer than its own run.
std::string trafficPlan(const std::string& script, const std::string& params, int port, int drain_seconds = 2) {
  return R"(
plans:
  - name: web
    namespace: web-dev
    service_name: web
    matching_capabilities: [{type: CPU, comparator: EQ, names: [intel-xeon]}]
    strategy: {script: )" +
         script + ", params: " + params + R"(}
    traffic: {listen: "127.0.0.1:)" +
         std::to_string(port) + R"(", drain_seconds: )" + std::to_string(drain_seconds) + R"(}
    applications:
      - payload_name: web
        resources: {cores: 1, memory_gib: 1}
        ports: [{protocol: TCP, port: 80}]
        health_check: {type: http, port: 80, path: /healthz, interval_seconds: 0.2, timeout_seconds: 1}
)";
}

engine::EngineOptions withRouter(FakeRouter& router) {
  engine::EngineOptions options = EngineFixture::fastOptions();
  options.router = &router;
  return options;
}

struct TrafficFixture : EngineFixture {
  FakeRouter& router;
  explicit TrafficFixture(FakeRouter& r) : EngineFixture({"auto_approve_dev.lua"}, withRouter(r)), router(r) {}

  // Passes until `done` holds, polling with a deadline (workloads are real processes whose
  // readiness takes real time): a liveness bound, not a timing check.
  bool passUntil(const std::function<bool()>& done) {
    return eventually(
        [&] {
          if (done()) return true;
          engine->settle(1);  // a pass, its operations and its probes
          return done();
        },
        std::chrono::seconds(90));
  }

  std::map<std::string, int> weightsByDeployment() {
    std::map<std::string, int> out;
    for (const auto& s : router.askedFor("web").servers) {
      if (!s.drain) out[s.deployment] += s.weight;
    }
    return out;
  }
  size_t servers() { return router.askedFor("web").servers.size(); }
  std::string eventLog() {
    ledger::ListOptions o;
    o.limit = 200;
    auto page = ledger->audit().listEvents(o);
    std::string out;
    if (page.isOk()) for (const auto& e : page->items) out += e.kind + " " + e.subject + " " + e.data.dump().substr(0, 200) + "\n";
    return out;
  }
};

}  // namespace

TEST_CASE("traffic: instances join when ready, with equal weights without a route") {
  FakeRouter router;
  TrafficFixture f(router);
  f.apply(kEngineNodes);
  f.apply(trafficPlan("rolling", "{}", freePort()));
  CHECK(router.starts == 0);  // nothing declared traffic before the plan: the router was not started
  f.apply(engineDeployment("v1", 2, "1.25"));
  REQUIRE(
      f.passUntil([&] { return f.deployment("v1").state == model::DeploymentState::kCompleted && f.servers() == 2; }));
  CHECK(router.starts == 1);
  const auto asked = router.askedFor("web");
  CHECK(asked.endpoint.listen.starts_with("127.0.0.1:"));
  for (const auto& s : asked.servers) {
    CHECK(s.weight == engine::kMaxServerWeight);
    CHECK(s.address.starts_with("127.0.0.1:"));
    CHECK_FALSE(s.drain);
  }
  // Every server that joined was ready: the runtime instances are healthy.
  for (const auto& r : f.running()) CHECK(r.healthy);
  auto view = f.engine->traffic().view("web");
  REQUIRE(view);
  CHECK(view->router_up);
  CHECK(view->asked["v1"] == 100.0);
  CHECK(view->applied["v1"] == 100.0);
}

TEST_CASE("traffic: route(...) holds the canary until the router applies it, a restart keeps the split") {
  FakeRouter router;
  TrafficFixture f(router);
  f.apply(kEngineNodes);
  f.apply(trafficPlan("canary", "{steps: [50], pause_seconds: 3600}", freePort()));
  f.apply(engineDeployment("v1", 3, "1.25"));
  REQUIRE_MESSAGE(
      f.passUntil([&] { return f.deployment("v1").state == model::DeploymentState::kCompleted && f.servers() == 3; }),
      (model::toString(f.deployment("v1").state) + " " + f.deployment("v1").message + " servers " +
       std::to_string(f.servers()) + "\n" + f.eventLog()));

  router.set([](FakeRouter& r) { r.lagging = true; });  // keeps serving v1 only
  f.apply(engineDeployment("v2", 3, "1.26"));
  REQUIRE(f.passUntil([&] { return f.deployment("v2").message.starts_with("waiting for the router"); }));
  CHECK(f.deployment("v2").message.find("asked new 50 / old 50") != std::string::npos);
  // Held: the strategy's step state was not kept, so it asks for the route again next pass.
  for (int i = 0; i < 3; ++i) f.engine->settle(1);
  CHECK(f.deployment("v2").rollout_state.value("weights", Json()).is_null());
  CHECK(f.deployment("v2").message.starts_with("waiting for the router"));
  REQUIRE(f.engine->traffic().view("web"));
  CHECK(f.engine->traffic().view("web")->reason.starts_with("waiting for the router"));

  SUBCASE("router down holds with the reason") {
    router.set([](FakeRouter& r) { r.up = false; });
    REQUIRE(f.passUntil([&] { return f.deployment("v2").message.starts_with("router down"); }));
    CHECK(f.deployment("v2").message.find("haproxy is not running") != std::string::npos);
    CHECK(f.engine->traffic().view("web")->router_up == false);
    router.set([](FakeRouter& r) { r.up = true; });
  }

  router.set([](FakeRouter& r) { r.lagging = false; });
  REQUIRE(f.passUntil([&] { return !f.deployment("v2").rollout_state.value("weights", Json()).is_null(); }));
  CHECK(f.deployment("v2").message.find("router") == std::string::npos);
  REQUIRE(f.passUntil([&] {
    auto v = f.engine->traffic().view("web");
    return v && v->reason.empty() && v->applied.contains("v2");
  }));
  auto applied = f.engine->traffic().view("web")->applied;
  CHECK(applied["v2"].get<double>() == doctest::Approx(50).epsilon(0.03));
  const auto before = f.weightsByDeployment();
  CHECK(f.ledger->plans().getPlan("web")->traffic_route["deployment"] == "v2");

  // A new engine over the same ledger and a fresh router: the persisted 50/50 split, not an
  // equal one per server (the sides have different instance counts).
  FakeRouter fresh;
  f.engine.reset();
  f.engine = std::make_unique<engine::Engine>(*f.ledger, *f.scripts, *f.drivers, f.clock, withRouter(fresh));
  f.engine->settle(1);
  f.engine->settle(1);
  std::map<std::string, int> after;
  for (const auto& s : fresh.askedFor("web").servers) {
    if (!s.drain) after[s.deployment] += s.weight;
  }
  CHECK(after == before);
  REQUIRE(f.engine->traffic().view("web"));
  CHECK(f.engine->traffic().view("web")->asked["v2"].get<double>() == doctest::Approx(50).epsilon(0.03));
}

TEST_CASE("traffic: a promote that asks for a switch the router has not applied yet is not lost") {
  // Blue-green: the promote's switch is held until the router serves it. The strategy used
  // the promote up in that pass; its state, which remembers it, is kept (only the note of the
  // weights is not), so once the router serves the switch the rollout goes on to complete.
  FakeRouter router;
  TrafficFixture f(router);
  f.apply(kEngineNodes);
  f.apply(trafficPlan("blue_green", "{auto_promotion: never, scale_down_delay_seconds: 0}", freePort()));
  f.apply(engineDeployment("v1", 2, "1.25"));
  REQUIRE(
      f.passUntil([&] { return f.deployment("v1").state == model::DeploymentState::kCompleted && f.servers() == 2; }));
  f.apply(engineDeployment("v2", 2, "1.26"));
  REQUIRE(f.passUntil([&] { return f.deployment("v2").state == model::DeploymentState::kPaused; }));

  router.set([](FakeRouter& r) { r.lagging = true; });
  REQUIRE(f.ledger->plans().controlDeployment("web", "v2", "promote", "switch", "alice").isOk());
  REQUIRE(f.passUntil([&] { return f.deployment("v2").message.starts_with("waiting for the router"); }));
  CHECK(f.deployment("v2").state == model::DeploymentState::kInProgress);  // promoted: no longer paused
  CHECK(f.deployment("v2").signals.empty());          // the promote was used up...
  CHECK(f.deployment("v2").rollout_state.value("promoted", false));  // ...and remembered

  router.set([](FakeRouter& r) { r.lagging = false; });
  REQUIRE(f.passUntil([&] { return f.deployment("v2").state == model::DeploymentState::kCompleted; }));
  CHECK(f.weightsByDeployment() == std::map<std::string, int>{{"v2", engine::kMaxServerWeight * 2}});
}

TEST_CASE("traffic: a leaving instance drains before it is stopped") {
  FakeRouter router;
  TrafficFixture f(router);
  f.apply(kEngineNodes);
  f.apply(trafficPlan("rolling", "{}", freePort(), 30));
  f.apply(engineDeployment("v1", 2, "1.25"));
  REQUIRE(
      f.passUntil([&] { return f.deployment("v1").state == model::DeploymentState::kCompleted && f.servers() == 2; }));
  const auto servers = router.askedFor("web").servers;
  router.set([&](FakeRouter& r) {
    for (const auto& s : servers) r.sessions[s.id] = 3;
  });
  // Scale down to 1: the DELETE waits while its instance has sessions in flight.
  f.apply(engineDeployment("v2", 1, "1.25"));
  REQUIRE(f.passUntil([&] {
    for (const auto& op : f.operations("APPROVED")) {
      if (op.type == model::OperationType::kDelete && op.message.starts_with("draining")) return true;
    }
    return false;
  }));
  REQUIRE(f.passUntil([&] {
    for (const auto& s : router.askedFor("web").servers) {
      if (s.drain) return true;
    }
    return false;
  }));
  for (int i = 0; i < 3; ++i) f.engine->settle(1);
  CHECK(f.running().size() == 2);  // still running: sessions in flight
  SUBCASE("sessions end: the DELETE goes on and the instance stops") {
    router.set([](FakeRouter& r) { r.sessions.clear(); });
    REQUIRE(f.passUntil([&] { return f.running().size() == 1; }));
  }
  SUBCASE("the drain timeout passes (drain_seconds 30)") {
    f.clock.advance(std::chrono::seconds(31));
    REQUIRE(f.passUntil([&] { return f.running().size() == 1; }));
  }
}

TEST_CASE("traffic: plan show prints the endpoint and both splits") {
  Json view{{"plan", {{"name", "web"}, {"metadata", {{"id", 1}, {"generation", 1}}}}},
            {"deployments", Json::array()},
            {"instance_summary", {{"total", 0}}},
            {"traffic",
             {{"listen", "127.0.0.1:8080"},
              {"asked", {{"v2", 10}, {"v1", 90}}},
              {"applied", {{"v1", 100}}},
              {"router", "up"},
              {"metrics_url", "http://127.0.0.1:9101/metrics"},
              {"reason", "waiting for the router: asked new 10 / old 90, applied new 0 / old 100"}}}};
  std::ostringstream out;
  cli::printPlanShow(out, view, std::chrono::system_clock::now());
  const std::string text = out.str();
  CHECK(text.find("Traffic") != std::string::npos);
  CHECK(text.find("127.0.0.1:8080") != std::string::npos);
  CHECK(text.find("v2 10%, v1 90%") == std::string::npos);  // keys print in the JSON's order
  CHECK(text.find("v1 90%") != std::string::npos);
  CHECK(text.find("v1 100%") != std::string::npos);
  CHECK(text.find("waiting for the router") != std::string::npos);
  CHECK(text.find("Router Metrics:       http://127.0.0.1:9101/metrics") != std::string::npos);
}

TEST_CASE("traffic: a plan of two applications routes to the port traffic.port names, of whichever application") {
  FakeRouter router;
  TrafficFixture f(router);
  f.apply(kEngineNodes);
  f.apply(R"(
plans:
  - name: web
    namespace: web-dev
    service_name: web
    matching_capabilities: [{type: CPU, comparator: EQ, names: [intel-xeon]}]
    traffic: {listen: "127.0.0.1:)" +
          std::to_string(freePort()) + R"(", drain_seconds: 2, port: 9100}
    applications:
      - payload_name: web
        resources: {cores: 1, memory_gib: 1}
        ports: [{protocol: TCP, port: 80}]
      - payload_name: api
        resources: {cores: 1, memory_gib: 1}
        ports: [{protocol: TCP, port: 9100}]
        health_check: {type: http, port: 9100, path: /healthz, interval_seconds: 0.2, timeout_seconds: 1}
)");
  f.apply(R"(
deployments:
  - plan: web
    deployment_id: v1
    instance_count: 2
    payload_coordinates:
      - {payload_name: web, coordinates: {image: "nginx:1.25"}}
      - {payload_name: api, coordinates: {command: ["{{tide}}", workload, --listen, "127.0.0.1:{{port.tcp.9100}}"]}}
)");
  REQUIRE(
      f.passUntil([&] { return f.deployment("v1").state == model::DeploymentState::kCompleted && f.servers() == 2; }));
  std::set<std::string> api_addresses;
  for (const auto& r : f.running()) api_addresses.insert("127.0.0.1:" + std::to_string(r.ports.value("tcp/9100", 0)));
  for (const auto& s : router.askedFor("web").servers) CHECK(api_addresses.count(s.address) == 1);
}
