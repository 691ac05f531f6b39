// Metric analysis end to end (issue 15): a real Prometheus server (Debian's `prometheus`)
// scrapes the workloads' /metrics on loopback, the control loop's canary and blue-green
// strategies judge the new version by the shipped error_rate analysis through it, and a load
// generator sends the traffic. Skipped, saying so, where /usr/bin/prometheus is absent
// (.ci/install-deps installs it, so CI runs them).

#include <doctest/doctest.h>
#include <fcntl.h>
#include <httplib.h>
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "drivers/traffic/haproxy/haproxy_router.h"
#include "tests/engine/engine_test_support.h"
#include "tests/support/ports.h"

using namespace tide;
using namespace tide::testing;
using tide::model::Json;

namespace {

const char* const kPrometheusBinary = "/usr/bin/prometheus";

bool prometheusInstalled() {
  if (std::filesystem::exists(kPrometheusBinary)) return true;
  MESSAGE("skipped: " << kPrometheusBinary << " is absent (apt-get install prometheus; .ci/install-deps does)");
  return false;
}

// A Prometheus server on a free loopback port with its own storage under `dir`, scraping every
// second the targets setTargets() writes to its file_sd file. Killed when the test ends.
class PrometheusServer {
 public:
  explicit PrometheusServer(const std::filesystem::path& dir) : dir_(dir), port_(freePort()) {
    setTargets({});
    std::ofstream(dir_ / "prometheus.yml") << "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
                                           << "scrape_configs:\n"
                                           << "  - job_name: workloads\n"
                                           << "    file_sd_configs: [{files: [\"" << (dir_ / "targets.json").string()
                                           << "\"], refresh_interval: 1s}]\n";
    std::vector<std::string> args = {"prometheus",
                                     "--config.file=" + (dir_ / "prometheus.yml").string(),
                                     "--storage.tsdb.path=" + (dir_ / "data").string(),
                                     "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                     "--log.level=warn"};
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    const std::string log = (dir_ / "prometheus.log").string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    const int spawned = posix_spawn(&pid_, kPrometheusBinary, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE(spawned == 0);
    REQUIRE_MESSAGE(eventually(
                        [&] {
                          httplib::Client client("127.0.0.1", port_);
                          client.set_connection_timeout(1);
                          auto ready = client.Get("/-/ready");
                          return ready && ready->status == 200;
                        },
                        std::chrono::seconds(60)),
                    "prometheus did not become ready; its log is " << log);
  }
  ~PrometheusServer() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Replaces the scraped targets (loopback ports), atomically: Prometheus never reads half a file.
  void setTargets(const std::set<int>& ports) {
    Json targets = Json::array();
    for (int port : ports) targets.push_back("127.0.0.1:" + std::to_string(port));
    const auto staged = dir_ / "targets.json.new";
    std::ofstream(staged) << Json::array({Json{{"targets", targets}}}).dump();
    std::filesystem::rename(staged, dir_ / "targets.json");
  }

 private:
  std::filesystem::path dir_;
  int port_;
  pid_t pid_ = -1;
};

// Sends GET / to every RUNNING workload, round after round, and keeps Prometheus's targets
// equal to them, until destroyed (or for 10 minutes at most: it stops by itself).
class TrafficAndTargets {
 public:
  TrafficAndTargets(ledger::Ledger& ledger, PrometheusServer& prometheus) {
    thread_ = std::thread([this, &ledger, &prometheus] {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
      std::set<int> ports;
      while (!stop_ && std::chrono::steady_clock::now() < deadline) {
        ledger::ListOptions o;
        o.limit = ledger::kMaxPageSize;
        o.filters["state"] = "RUNNING";
        if (auto page = ledger.instances().listRuntimeInstances(o); page.isOk()) {
          std::set<int> now;
          for (const auto& r : page->items) {
            if (hostPort(r) > 0) now.insert(hostPort(r));
          }
          if (now != ports) prometheus.setTargets(now);
          ports = now;
        }
        for (int port : ports) {
          httplib::Client client("127.0.0.1", port);
          client.set_connection_timeout(1);
          client.set_read_timeout(1);
          for (int i = 0; i < 5; ++i) {
            if (client.Get("/")) ++requests_;
          }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  ~TrafficAndTargets() {
    stop_ = true;
    thread_.join();
  }
  int requests() const { return requests_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

// A version whose workloads answer `error_rate` of their requests with 500.
std::string erroringDeployment(const std::string& id, int count, const std::string& version, double error_rate) {
  return "deployments:\n  - plan: web\n    deployment_id: " + id + "\n    instance_count: " + std::to_string(count) +
         "\n    payload_coordinates: [{payload_name: web, coordinates: {command: [\"{{tide}}\", workload, --listen, "
         "\"127.0.0.1:{{port.tcp.80}}\", --version, " +
         version + ", --error-rate, \"" + std::to_string(error_rate) + "\"]}}]\n";
}

const char* const kErrorRateParams =
    "{provider: prom, max_error_rate: 0.1, window_seconds: 5}";


struct AnalysisFixture : EngineFixture {
  AnalysisFixture() : EngineFixture({"auto_approve_dev.lua"}), prometheus_dir(dir.path() / "prometheus") {}

  // Starts Prometheus, then an engine asking it (in place of the base's, never started), then
  // the traffic.
  void start(const std::string& plan) {
    std::filesystem::create_directories(prometheus_dir);
    prometheus = std::make_unique<PrometheusServer>(prometheus_dir);
    engine::EngineOptions options = fastOptions();
    options.hooks_output_dir = hooksOutputDir();
    options.metric_providers = {{"prom", {"prometheus", prometheus->url(), 2000, ""}}};
    engine.reset();
    engine = std::make_unique<engine::Engine>(*ledger, *scripts, *drivers, clock, options);
    apply(kEngineNodes);
    apply(plan);
    engine->start();
    traffic = std::make_unique<TrafficAndTargets>(*ledger, *prometheus);
  }

  ~AnalysisFixture() {
    traffic.reset();
    if (engine) engine->stop();
  }

  bool waitFor(const std::function<bool()>& done, int seconds = 120) {
    return eventually(done, std::chrono::seconds(seconds));
  }

  bool waitState(const std::string& id, model::DeploymentState state) {
    return waitFor([&] { return deployment(id).state == state; });
  }

  // What the RUNNING instances answer on /version, counted by version.
  std::map<std::string, int> versions() {
    std::map<std::string, int> out;
    for (const auto& r : running()) {
      std::string v = httpGet(hostPort(r), "/version");
      ++out[v.empty() ? "(none)" : v];
    }
    return out;
  }

  void control(const std::string& id, const std::string& what) {
    auto done = ledger->plans().controlDeployment("web", id, what, "", "alice");
    REQUIRE_MESSAGE(done.isOk(), done.status().toString());
  }

  std::filesystem::path prometheus_dir;
  std::unique_ptr<PrometheusServer> prometheus;
  std::unique_ptr<TrafficAndTargets> traffic;
};

// The params of a canary of steps 50 and 100 whose gate at each step is `analysis`, asked
// with `analysis_params` as often as it takes (inconclusive answers never end it).
std::string canaryJudgedBy(const std::string& analysis, const std::string& analysis_params) {
  return "{steps: [50, 100], min_ready_seconds: 0, health_timeout_seconds: 60, analysis: " + analysis +
         ", analysis_inconclusive_limit: 100000, analysis_params: " + analysis_params + "}";
}

std::string stateOf(AnalysisFixture& f, const std::string& id) {
  auto d = f.ledger->plans().getDeployment("web", id);
  return d.isOk() ? model::toString(d->state) + ": " + d->message + " " + d->rollout_state.dump()
                  : d.status().toString();
}

}  // namespace

TEST_CASE("analysis: a canary's error_rate on Prometheus passes a good version and rolls back one answering 20% 5xx") {
  if (!prometheusInstalled()) return;
  AnalysisFixture f;
  f.start(rolloutPlan("canary", canaryJudgedBy("error_rate", kErrorRateParams)));
  f.apply(engineDeployment("d1", 2, "v1"));
  REQUIRE_MESSAGE(f.waitState("d1", model::DeploymentState::kCompleted), stateOf(f, "d1"));

  // The good version: the analysis passes at step 1, which then waits for a promotion.
  f.apply(engineDeployment("d2", 2, "v2"));
  REQUIRE_MESSAGE(f.waitFor([&] { return f.deployment("d2").rollout_state.value("analysis", "") == "passed"; }),
                  stateOf(f, "d2"));
  CHECK(f.deployment("d2").rollout_state.value("step", 0) == 1);
  CHECK(f.deployment("d2").rollout_state.value("analysis_failures", -1) == 0);
  f.control("d2", "promote");
  REQUIRE_MESSAGE(f.waitState("d2", model::DeploymentState::kCompleted), stateOf(f, "d2"));
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v2", 2}}; }));

  // The bad version: 20% of its answers are 500, above max_error_rate, so step 1 rolls back.
  f.apply(erroringDeployment("d3", 2, "v3", 0.2));
  REQUIRE_MESSAGE(f.waitState("d3", model::DeploymentState::kRolledBack), stateOf(f, "d3"));
  const std::string message = f.deployment("d3").message;
  CHECK_MESSAGE(message.find("step 1 of 2 (50% new): analysis 'error_rate' failed: error rate ") != std::string::npos,
                message);
  CHECK_MESSAGE(message.find("above 10.0% (max_error_rate)") != std::string::npos, message);
  REQUIRE_MESSAGE(f.waitState("d2", model::DeploymentState::kCompleted), stateOf(f, "d2"));
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v2", 2}}; }));
  CHECK(f.traffic->requests() > 0);
}

TEST_CASE("analysis: a blue-green's pre-promotion error_rate on Prometheus gates the switch") {
  if (!prometheusInstalled()) return;
  AnalysisFixture f;
  f.start(rolloutPlan("blue_green", std::string("{auto_promotion: immediate, min_ready_seconds: 0, "
                                                 "health_timeout_seconds: 60, scale_down_delay_seconds: 0, "
                                                 "pre_promotion_analysis: error_rate, "
                                                 "analysis_inconclusive_limit: 100000, analysis_params: ") +
                                         kErrorRateParams + "}"));
  f.apply(engineDeployment("d1", 2, "v1"));
  REQUIRE_MESSAGE(f.waitState("d1", model::DeploymentState::kCompleted), stateOf(f, "d1"));

  // A preview answering 20% 5xx never gets the traffic: the rollout rolls back before the switch.
  f.apply(erroringDeployment("d2", 2, "v2", 0.2));
  REQUIRE_MESSAGE(f.waitState("d2", model::DeploymentState::kRolledBack), stateOf(f, "d2"));
  const model::Deployment refused = f.deployment("d2");
  CHECK_MESSAGE(refused.message.find("pre-promotion analysis 'error_rate' failed: error rate ") != std::string::npos,
                refused.message);
  CHECK(!refused.rollout_state.contains("switched_at"));
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v1", 2}}; }));

  // A healthy preview passes the analysis and takes the traffic.
  f.apply(engineDeployment("d3", 2, "v3"));
  REQUIRE_MESSAGE(f.waitState("d3", model::DeploymentState::kCompleted), stateOf(f, "d3"));
  const model::Deployment switched = f.deployment("d3");
  CHECK(switched.rollout_state.value("pre_analysis", "") == "passed");
  CHECK(switched.rollout_state.contains("switched_at"));
  REQUIRE(f.waitFor([&] { return f.versions() == std::map<std::string, int>{{"v3", 2}}; }));
}

// --- analyses at the router (issue 31, item 6) ---------------------------------------------------
// The same control loop with a real HAProxy router in front of the plan: Prometheus scrapes the
// router's own exporter (not the workloads), a load generator sends its requests to the plan's
// endpoint, and the router_* analyses judge the new version on what the router answered.
namespace {

const char* const kHaproxyBinary = "/usr/sbin/haproxy";

// A version whose workloads take `delay` seconds over each GET /.
std::string slowDeployment(const std::string& id, int count, const std::string& version, double delay) {
  return "deployments:\n  - plan: web\n    deployment_id: " + id + "\n    instance_count: " + std::to_string(count) +
         "\n    payload_coordinates: [{payload_name: web, coordinates: {command: [\"{{tide}}\", workload, --listen, "
         "\"127.0.0.1:{{port.tcp.80}}\", --version, " +
         version + ", --delay, \"" + std::to_string(delay) + "\"]}}]\n";
}

// rolloutPlan with the plan's endpoint at `port`.
std::string routedPlan(const std::string& script, const std::string& params, int port) {
  return rolloutPlan(script, params) + "    traffic: {listen: \"127.0.0.1:" + std::to_string(port) +
         "\", health: {path: /healthz}, drain_seconds: 2}\n";
}

// Keeps `threads` clients sending GET / to `port` over keep-alive connections until destroyed
// (or for 10 minutes at most).
class EndpointLoad {
 public:
  EndpointLoad(int port, int threads) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, port] {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
        httplib::Client client("127.0.0.1", port);
        client.set_keep_alive(true);
        client.set_connection_timeout(1);
        client.set_read_timeout(5);
        while (!stop_ && std::chrono::steady_clock::now() < deadline) {
          auto reply = client.Get("/");
          if (reply) {
            ++requests_;
          } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));  // no endpoint yet
          }
        }
      });
    }
  }
  ~EndpointLoad() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  int requests() const { return requests_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::vector<std::thread> threads_;
};

struct RouterAnalysisFixture : EngineFixture {
  RouterAnalysisFixture() : EngineFixture({"auto_approve_dev.lua"}), prometheus_dir(dir.path() / "prometheus") {}

  void start(const std::string& script, const std::string& params) {
    std::filesystem::create_directories(prometheus_dir);
    prometheus = std::make_unique<PrometheusServer>(prometheus_dir);
    const int metrics_port = freePort();
    drivers::traffic::RouterContext context;
    context.data_dir = dir.path().string();
    context.clock = &clock;
    auto made = drivers::traffic::makeHaproxyRouter(
        Json{{"metrics_listen", "127.0.0.1:" + std::to_string(metrics_port)}, {"check_interval_ms", 200}}, context);
    REQUIRE_MESSAGE(made.isOk(), made.status().toString());
    router = std::move(made).value();
    // The host's /metrics, as far as the router's part of it goes (tide serve appends
    // router->metricsText() to it): the latency histograms of haproxy's request log.
    host_metrics.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(router->metricsText(), "text/plain; version=0.0.4");
    });
    const int host_metrics_port = host_metrics.bind_to_any_port("127.0.0.1");
    REQUIRE(host_metrics_port > 0);
    host_metrics_thread = std::thread([this] { host_metrics.listen_after_bind(); });
    prometheus->setTargets({metrics_port, host_metrics_port});

    engine::EngineOptions options = fastOptions();
    options.hooks_output_dir = hooksOutputDir();
    options.metric_providers = {{"prom", {"prometheus", prometheus->url(), 2000, ""}}};
    options.router = router.get();
    engine.reset();
    engine = std::make_unique<engine::Engine>(*ledger, *scripts, *drivers, clock, options);
    apply(kEngineNodes);
    endpoint_port = freePort();
    apply(routedPlan(script, params, endpoint_port));
    engine->start();
    load = std::make_unique<EndpointLoad>(endpoint_port, 4);
  }

  ~RouterAnalysisFixture() {
    load.reset();
    if (engine) engine->stop();
    engine.reset();
    if (router) (void)router->stop();
    host_metrics.stop();
    if (host_metrics_thread.joinable()) host_metrics_thread.join();
  }

  bool waitState(const std::string& id, model::DeploymentState state) {
    return eventually([&] { return deployment(id).state == state; }, std::chrono::seconds(120));
  }

  // d1 of v1 completes; d2 of v2 passes its analysis at step 1 and is promoted to the end.
  void completeTwoGoodVersions() {
    apply(engineDeployment("d1", 2, "v1"));
    REQUIRE_MESSAGE(waitState("d1", model::DeploymentState::kCompleted), stateOf("d1"));
    apply(engineDeployment("d2", 2, "v2"));
    REQUIRE_MESSAGE(eventually([&] { return deployment("d2").rollout_state.value("analysis", "") == "passed"; },
                               std::chrono::seconds(120)),
                    stateOf("d2"));
    CHECK(deployment("d2").rollout_state.value("step", 0) == 1);
    passed_reason = deployment("d2").rollout_state.value("analysis_reason", "");
    REQUIRE(ledger->plans().controlDeployment("web", "d2", "promote", "", "alice").isOk());
    REQUIRE_MESSAGE(waitState("d2", model::DeploymentState::kCompleted), stateOf("d2"));
  }

  std::string stateOf(const std::string& id) {
    auto d = ledger->plans().getDeployment("web", id);
    return d.isOk() ? model::toString(d->state) + ": " + d->message + " " + d->rollout_state.dump()
                    : d.status().toString();
  }

  std::filesystem::path prometheus_dir;
  std::unique_ptr<PrometheusServer> prometheus;
  std::unique_ptr<drivers::traffic::Router> router;
  httplib::Server host_metrics;
  std::thread host_metrics_thread;
  std::unique_ptr<EndpointLoad> load;
  int endpoint_port = 0;
  std::string passed_reason;  // d2's analysis reason when it passed
};

bool routerTestsCanRun() {
  if (!prometheusInstalled()) return false;
  if (std::filesystem::exists(kHaproxyBinary)) return true;
  MESSAGE("skipped: " << kHaproxyBinary << " is absent (apt-get install haproxy; .ci/install-deps does)");
  return false;
}

}  // namespace

TEST_CASE("analysis: router_error_rate judges a canary on the answers the router gave, and rolls back 20% 5xx") {
  if (!routerTestsCanRun()) return;
  RouterAnalysisFixture f;
  f.start("canary", canaryJudgedBy("router_error_rate", kErrorRateParams));
  // The snapshot names the plan's backend and the new instances' servers as HAProxy's
  // exporter labels them; the good version passes at step 1, judged on the router's numbers.
  f.completeTwoGoodVersions();
  CHECK_MESSAGE(f.passed_reason.starts_with("router error rate "), f.passed_reason);
  auto view = f.engine->traffic().view("web");
  REQUIRE(view);
  CHECK(view->metrics_url.starts_with("http://127.0.0.1:"));

  // 20% of the bad version's answers are 500: above max_error_rate at the router.
  f.apply(erroringDeployment("d3", 2, "v3", 0.2));
  REQUIRE_MESSAGE(f.waitState("d3", model::DeploymentState::kRolledBack), f.stateOf("d3"));
  const std::string message = f.deployment("d3").message;
  CHECK_MESSAGE(message.find("analysis 'router_error_rate' failed: router error rate ") != std::string::npos, message);
  CHECK_MESSAGE(message.find("above 10.0% (max_error_rate)") != std::string::npos, message);
  REQUIRE_MESSAGE(f.waitState("d2", model::DeploymentState::kCompleted), f.stateOf("d2"));
  CHECK(f.load->requests() > 0);
}

namespace {

// A router latency analysis (`analysis`, its bound `max_param` at 0.1 s): a version answering
// at once passes at step 1, and one answering every request in 0.3 s is rolled back.
void rollsBackASlowCanary(const std::string& analysis, const std::string& max_param, const std::string& what) {
  RouterAnalysisFixture f;
  f.start("canary",
          canaryJudgedBy(analysis, "{provider: prom, " + max_param + ": 0.1, window_seconds: 5, min_requests: 5}"));
  f.completeTwoGoodVersions();
  CHECK_MESSAGE(f.passed_reason.starts_with(what + " "), f.passed_reason);

  f.apply(slowDeployment("d3", 2, "v3", 0.3));
  REQUIRE_MESSAGE(f.waitState("d3", model::DeploymentState::kRolledBack), f.stateOf("d3"));
  const std::string message = f.deployment("d3").message;
  CHECK_MESSAGE(message.find("analysis '" + analysis + "' failed: " + what + " ") != std::string::npos, message);
  CHECK_MESSAGE(message.find("above 0.100 s (" + max_param + ")") != std::string::npos, message);
  REQUIRE_MESSAGE(f.waitState("d2", model::DeploymentState::kCompleted), f.stateOf("d2"));
}

}  // namespace

TEST_CASE("analysis: router_latency rolls back a canary the router saw answer slowly") {
  if (!routerTestsCanRun()) return;
  // The servers' mean at the router, from HAProxy's exporter.
  rollsBackASlowCanary("router_latency", "max_latency_seconds", "router latency");
}

TEST_CASE("analysis: router_latency_p95 rolls back a canary whose p95 at the router is slow") {
  if (!routerTestsCanRun()) return;
  // The 95th percentile of the requests at the router, from haproxy's request log as the
  // host's /metrics serves it.
  rollsBackASlowCanary("router_latency_p95", "max_latency_p95_seconds", "router p95 latency");
}

TEST_CASE("analysis: the router analyses are inconclusive, saying why, for a plan without traffic") {
  if (!prometheusInstalled()) return;
  AnalysisFixture f;
  f.start(rolloutPlan("canary", canaryJudgedBy("router_error_rate", kErrorRateParams)));
  f.apply(engineDeployment("d1", 2, "v1"));
  REQUIRE_MESSAGE(f.waitState("d1", model::DeploymentState::kCompleted), stateOf(f, "d1"));
  f.apply(engineDeployment("d2", 2, "v2"));
  REQUIRE_MESSAGE(f.waitFor([&] {
    return f.deployment("d2")
               .rollout_state.value("analysis_reason", "")
               .find("router error rate: the plan has no traffic router") != std::string::npos;
  }),
                  stateOf(f, "d2"));
  CHECK(f.deployment("d2").state == model::DeploymentState::kInProgress);
}
