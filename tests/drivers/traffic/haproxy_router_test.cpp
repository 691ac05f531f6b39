// The HAProxy router against a real haproxy (/usr/sbin/haproxy) and real HTTP backends on
// 127.0.0.1. Every test kills each haproxy it started when it ends, even after a failed
// REQUIRE (HaproxyGuard), and waits for outcomes with eventually() instead of sleeping.

#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dirent.h>
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "drivers/traffic/haproxy/haproxy_router.h"
#include "drivers/traffic/haproxy/request_log.h"
#include "host/core/fd.h"
#include "tests/drivers/driver_test_support.h"

using namespace tide;
using namespace tide::drivers::traffic;
using namespace tide::testing;

namespace {

constexpr const char* kHaproxy = "/usr/sbin/haproxy";

bool haproxyInstalled() { return ::access(kHaproxy, X_OK) == 0; }

#define SKIP_WITHOUT_HAPROXY()                                               \
  if (!haproxyInstalled()) {                                                 \
    MESSAGE("skipped: no haproxy at /usr/sbin/haproxy (apt-get install haproxy)"); \
    return;                                                                  \
  }

// The pids of live processes started with `-f <config>`.
std::vector<pid_t> haproxiesRunning(const std::string& config) {
  std::vector<pid_t> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || !processAlive(static_cast<pid_t>(pid))) continue;
    std::string cmdline = readText("/proc/" + std::to_string(pid) + "/cmdline");
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    if (cmdline.find(" -f " + config + " ") != std::string::npos) pids.push_back(static_cast<pid_t>(pid));
  }
  closedir(proc);
  return pids;
}

// SIGKILLs every haproxy running `config` when it goes out of scope.
class HaproxyGuard {
 public:
  explicit HaproxyGuard(std::string config) : config_(std::move(config)) {}
  ~HaproxyGuard() {
    for (pid_t pid : haproxiesRunning(config_)) ::kill(pid, SIGKILL);
  }
  HaproxyGuard(const HaproxyGuard&) = delete;
  HaproxyGuard& operator=(const HaproxyGuard&) = delete;

 private:
  std::string config_;
};

// A tiny HTTP server answering every request with its name; /slow waits until release().
class Backend {
 public:
  explicit Backend(std::string name) : name_(std::move(name)) {
    server_.set_tcp_nodelay(true);  // as `tide workload` (workload.cpp says why)
    server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok", "text/plain"); });
    server_.Get("/slow", [this](const httplib::Request&, httplib::Response& res) {
      std::unique_lock<std::mutex> lock(mu_);
      ++slow_started_;
      released_cv_.wait_for(lock, std::chrono::seconds(120), [this] { return released_; });
      res.set_content(name_, "text/plain");
    });
    server_.Get("/.*", [this](const httplib::Request&, httplib::Response& res) { res.set_content(name_, "text/plain"); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    REQUIRE(port_ > 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    REQUIRE(eventually([this] { return server_.is_running(); }));
  }
  ~Backend() {
    release();
    server_.stop();
    thread_.join();
  }
  const std::string& name() const { return name_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int slowStarted() {
    std::lock_guard<std::mutex> lock(mu_);
    return slow_started_;
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    released_cv_.notify_all();
  }

 private:
  std::string name_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable released_cv_;
  bool released_ = false;
  int slow_started_ = 0;
};

// A router over a temp data dir; every haproxy it starts dies with the fixture.
struct RouterFixture {
  TempDir dir;
  std::string haproxy_dir = dir.file("traffic/haproxy");
  HaproxyGuard guard{haproxy_dir + "/haproxy.cfg"};
  std::unique_ptr<Router> router;

  explicit RouterFixture(const Json& config = Json::object()) : config_(config) { open(); }
  ~RouterFixture() {
    if (router) (void)router->stop();
  }

  void open() {
    RouterContext context;
    context.data_dir = dir.path().string();
    auto made = makeHaproxyRouter(config_, context);
    REQUIRE_MESSAGE(made.isOk(), made.status().toString());
    router = std::move(made).value();
    REQUIRE(router->start().isOk());
  }
  // A host killed with SIGKILL: the router object goes without stop(); a new one starts.
  void reopenWithoutStop() {
    router.reset();
    open();
  }

  pid_t pid() const { return static_cast<pid_t>(std::atoi(readText(haproxy_dir + "/haproxy.pid").c_str())); }
  std::string haproxyLog() const { return readText(haproxy_dir + "/haproxy.log"); }

  RouterState state() {
    auto state = router->applied();
    REQUIRE_MESSAGE(state.isOk(), state.status().toString());
    return std::move(state).value();
  }

  // True once haproxy reports every server of every plan in `plans` with the desired weight
  // and state (ready, or drain for draining servers), and nothing else.
  bool serves(const std::vector<DesiredPlanTraffic>& plans) {
    auto result = router->applied();
    if (!result.isOk() || !result->up) return false;
    for (const DesiredPlanTraffic& plan : plans) {
      const AppliedPlanTraffic* applied = nullptr;
      for (const AppliedPlanTraffic& entry : result->plans) {
        if (entry.plan == plan.plan) applied = &entry;
      }
      if (applied == nullptr || !applied->error.empty() || applied->servers.size() != plan.servers.size()) return false;
      for (const BackendServer& server : plan.servers) {
        bool found = false;
        for (const AppliedServer& got : applied->servers) {
          found = found || (got.id == server.id && got.weight == server.weight &&
                            got.state == (server.drain ? "drain" : "ready") && got.preview == server.preview);
        }
        if (!found) return false;
      }
    }
    return true;
  }

  void applyAndWait(const std::vector<DesiredPlanTraffic>& plans) {
    Status status = router->apply(plans);
    REQUIRE_MESSAGE(status.isOk(), (status.toString() + "\n" + haproxyLog()));
    REQUIRE_MESSAGE(eventually([&] { return serves(plans); }), ("haproxy does not serve the desired state\n" + haproxyLog()));
  }

 private:
  Json config_;
};

std::string listenOnFreePort() { return "127.0.0.1:" + std::to_string(freePort()); }

int portOf(const std::string& address) { return std::atoi(address.substr(address.rfind(':') + 1).c_str()); }

DesiredPlanTraffic plan(const std::string& name, std::vector<BackendServer> servers) {
  DesiredPlanTraffic desired;
  desired.plan = name;
  desired.endpoint.listen = listenOnFreePort();
  desired.endpoint.health_path = "/healthz";
  desired.servers = std::move(servers);
  return desired;
}

BackendServer server(const Backend& backend, const std::string& deployment, int weight) {
  return BackendServer{backend.name(), deployment, backend.address(), weight, false, false};
}

// The body of GET `path` at `address`, or "error: ..." / "status N".
std::string get(const std::string& address, const std::string& path = "/", const httplib::Headers& headers = {}) {
  httplib::Client client("127.0.0.1", portOf(address));
  client.set_read_timeout(60, 0);
  auto reply = client.Get(path.c_str(), headers);
  if (!reply) return "error: " + httplib::to_string(reply.error());
  if (reply->status != 200) return "status " + std::to_string(reply->status);
  return reply->body;
}

// Who answered `count` requests over one keep-alive connection.
std::map<std::string, int> tally(const std::string& address, int count, const httplib::Headers& headers = {}) {
  httplib::Client client("127.0.0.1", portOf(address));
  client.set_keep_alive(true);
  client.set_read_timeout(60, 0);
  std::map<std::string, int> seen;
  for (int i = 0; i < count; ++i) {
    auto reply = client.Get("/", headers);
    if (!reply) {
      ++seen["error: " + httplib::to_string(reply.error())];
    } else {
      ++seen[reply->status == 200 ? reply->body : "status " + std::to_string(reply->status)];
    }
  }
  return seen;
}

// A copy, not a pointer: the state is usually a temporary (fixture.state()).
std::optional<AppliedServer> findServer(const RouterState& state, const std::string& plan, const std::string& id) {
  for (const AppliedPlanTraffic& entry : state.plans) {
    if (entry.plan != plan) continue;
    for (const AppliedServer& server : entry.servers) {
      if (server.id == id) return server;
    }
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("haproxy router: bad traffic config names the field") {
  auto unknown = parseHaproxyOptions({{"check_intervall_ms", 100}});
  REQUIRE_FALSE(unknown.isOk());
  CHECK(unknown.status().code() == Code::kInvalidArgument);
  REQUIRE(unknown.status().details().size() == 1);
  CHECK(unknown.status().details()[0].field == "traffic.check_intervall_ms");
  CHECK(unknown.status().details()[0].message.find("unknown key") != std::string::npos);

  auto bad = parseHaproxyOptions(
      {{"check_fall", 0}, {"metrics_listen", "nowhere"}, {"binary", "haproxy"}, {"request_log_sample", -1}});
  REQUIRE_FALSE(bad.isOk());
  std::vector<std::string> fields;
  for (const ErrorDetail& detail : bad.status().details()) fields.push_back(detail.field);
  std::sort(fields.begin(), fields.end());
  CHECK(fields == std::vector<std::string>{"traffic.binary", "traffic.check_fall", "traffic.metrics_listen",
                                           "traffic.request_log_sample"});

  auto good = parseHaproxyOptions({{"check_interval_ms", 500},
                                   {"check_fall", 3},
                                   {"metrics_listen", "127.0.0.1:9999"},
                                   {"request_log_sample", 10}});
  REQUIRE(good.isOk());
  CHECK(good->request_log_sample == 10);
  CHECK(parseHaproxyOptions(Json::object())->request_log_sample == 1);
  CHECK(good->check.interval_ms == 500);
  CHECK(good->check.fall == 3);
  CHECK(good->metrics_listen == "127.0.0.1:9999");
  CHECK(parseHaproxyOptions(nullptr).isOk());
  CHECK_FALSE(parseHaproxyOptions(Json::array()).isOk());

  TempDir dir;
  RouterContext context;
  context.data_dir = dir.path().string();
  auto missing = makeHaproxyRouter({{"binary", "/nonexistent/haproxy"}}, context);
  REQUIRE_FALSE(missing.isOk());
  CHECK(missing.status().message().find("no executable haproxy at /nonexistent/haproxy") != std::string::npos);
  CHECK(missing.status().details().at(0).field == "traffic.binary");
}

TEST_CASE("haproxy router: bad desired traffic is refused naming the field") {
  SKIP_WITHOUT_HAPROXY();
  RouterFixture fixture;
  DesiredPlanTraffic desired;
  desired.plan = "web";
  desired.endpoint.listen = "127.0.0.1";
  desired.servers = {{"r1", "d1", "127.0.0.1:1", 300, false, false}};
  Status status = fixture.router->apply({desired});
  REQUIRE(status.code() == Code::kInvalidArgument);
  std::vector<std::string> fields;
  for (const ErrorDetail& detail : status.details()) fields.push_back(detail.field);
  CHECK(fields == std::vector<std::string>{"plans[0].endpoint.listen", "plans[0].servers[0].weight"});
  CHECK(haproxiesRunning(fixture.haproxy_dir + "/haproxy.cfg").empty());
}

TEST_CASE("haproxy router: no plan, no haproxy, the first plan starts it and the last ends it") {
  SKIP_WITHOUT_HAPROXY();
  RouterFixture fixture;
  const std::string config = fixture.haproxy_dir + "/haproxy.cfg";
  REQUIRE(fixture.router->apply({}).isOk());
  CHECK(haproxiesRunning(config).empty());
  RouterState idle = fixture.state();
  CHECK_FALSE(idle.up);
  CHECK(idle.message.find("not running") != std::string::npos);

  Backend a("a1");
  const std::vector<DesiredPlanTraffic> plans = {plan("web", {server(a, "d1", 1)})};
  fixture.applyAndWait(plans);
  CHECK(haproxiesRunning(config).size() == 1);
  CHECK(get(plans[0].endpoint.listen) == "a1");
  RouterState state = fixture.state();
  CHECK(state.up);
  CHECK(state.plans.at(0).listen == plans[0].endpoint.listen);
  // The Prometheus exporter answers on the URL the state names.
  REQUIRE(state.metrics_url.rfind("http://", 0) == 0);
  const std::string metrics_address = state.metrics_url.substr(7, state.metrics_url.find('/', 7) - 7);
  httplib::Client metrics("127.0.0.1", portOf(metrics_address));
  auto scraped = metrics.Get("/metrics");
  REQUIRE(scraped);
  CHECK(scraped->status == 200);
  CHECK(scraped->body.find("haproxy_backend_") != std::string::npos);

  REQUIRE(fixture.router->apply({}).isOk());
  CHECK(haproxiesRunning(config).empty());
}

TEST_CASE("haproxy router: splits requests by weight (A 10% of 10,000 within 2 points)") {
  SKIP_WITHOUT_HAPROXY();
  RouterFixture fixture;
  std::vector<std::unique_ptr<Backend>> backends;
  std::vector<BackendServer> servers;
  backends.push_back(std::make_unique<Backend>("a1"));
  servers.push_back(server(*backends.back(), "A", 10));
  for (int i = 1; i <= 9; ++i) {
    backends.push_back(std::make_unique<Backend>("b" + std::to_string(i)));
    servers.push_back(server(*backends.back(), "B", 10));
  }
  const std::vector<DesiredPlanTraffic> plans = {plan("web", servers)};
  fixture.applyAndWait(plans);

  constexpr int kRequests = 10000;
  std::map<std::string, int> seen = tally(plans[0].endpoint.listen, kRequests);
  int b_total = 0;
  for (const auto& [name, count] : seen) {
    if (name.rfind("b", 0) == 0) b_total += count;
  }
  INFO("replies: a1 " << seen["a1"] << ", b* " << b_total << " of " << kRequests);
  CHECK(seen["a1"] + b_total == kRequests);
  const double share = 100.0 * seen["a1"] / kRequests;
  CHECK(share >= 8.0);
  CHECK(share <= 12.0);
}

TEST_CASE("haproxy router: header routes and the preview listener reach only preview servers") {
  SKIP_WITHOUT_HAPROXY();
  RouterFixture fixture;
  Backend stable("stable1");
  Backend canary("canary1");
  DesiredPlanTraffic desired = plan("web", {server(stable, "d1", 100), server(canary, "d2", 0)});
  desired.servers[1].preview = true;
  desired.endpoint.preview_listen = listenOnFreePort();
  desired.endpoint.header_routes = {{"X-Canary", "always"}};
  fixture.applyAndWait({desired});

  CHECK(tally(desired.endpoint.listen, 50) == std::map<std::string, int>{{"stable1", 50}});
  CHECK(tally(desired.endpoint.listen, 50, {{"X-Canary", "always"}}) == std::map<std::string, int>{{"canary1", 50}});
  CHECK(tally(desired.endpoint.listen, 20, {{"X-Canary", "never"}}) == std::map<std::string, int>{{"stable1", 20}});
  CHECK(tally(desired.endpoint.preview_listen, 50) == std::map<std::string, int>{{"canary1", 50}});
}

TEST_CASE("haproxy router: a drained server finishes its request in flight, gets no new ones, then leaves") {
  SKIP_WITHOUT_HAPROXY();
  RouterFixture fixture;
  Backend old_server("old1");
  Backend new_server("new1");
  DesiredPlanTraffic desired = plan("web", {server(old_server, "d1", 1), server(new_server, "d2", 0)});
  fixture.applyAndWait({desired});

  std::string slow_reply;
  std::thread slow([&] { slow_reply = get(desired.endpoint.listen, "/slow"); });
  struct Join {
    std::thread& thread;
    Backend& backend;
    ~Join() {
      backend.release();
      if (thread.joinable()) thread.join();
    }
  } join{slow, old_server};
  REQUIRE(eventually([&] { return old_server.slowStarted() == 1; }));

  desired.servers[0].drain = true;
  desired.servers[1].weight = 1;
  fixture.applyAndWait({desired});
  const std::optional<AppliedServer> draining = findServer(fixture.state(), "web", "old1");
  REQUIRE(draining.has_value());
  CHECK(draining->state == "drain");
  CHECK(eventually([&] {
    const std::optional<AppliedServer> now = findServer(fixture.state(), "web", "old1");
    return now.has_value() && now->current_sessions == 1;
  }));
  CHECK(tally(desired.endpoint.listen, 30) == std::map<std::string, int>{{"new1", 30}});

  // The engine drops the server while its request is still in flight: it stays until done.
  desired.servers.erase(desired.servers.begin());
  REQUIRE(fixture.router->apply({desired}).isOk());
  CHECK(findServer(fixture.state(), "web", "old1").has_value());

  old_server.release();
  slow.join();
  CHECK(slow_reply == "old1");
  CHECK(eventually([&] { return !findServer(fixture.state(), "web", "old1").has_value(); }));
  CHECK(fixture.serves({desired}));
  CHECK(tally(desired.endpoint.listen, 10) == std::map<std::string, int>{{"new1", 10}});
}

TEST_CASE("haproxy router: max_connections holds requests beyond it in the router's queue, file and added servers") {
  SKIP_WITHOUT_HAPROXY();
  RouterFixture fixture;
  Backend first("first1");
  Backend added("added1");
  DesiredPlanTraffic desired = plan("web", {server(first, "d1", 1)});
  desired.endpoint.max_connections = 1;
  fixture.applyAndWait({desired});
  CHECK(readText(fixture.haproxy_dir + "/haproxy.cfg").find(" maxconn 1\n") != std::string::npos);

  // A server added over the runtime API gets the limit too: of two slow requests it sees
  // one; the other waits in haproxy's queue until the first is answered.
  desired.servers[0].weight = 0;
  desired.servers.push_back(server(added, "d2", 1));
  fixture.applyAndWait({desired});
  std::string replies[2];
  std::thread clients[2];
  struct Join {
    std::thread* threads;
    Backend& backend;
    ~Join() {
      backend.release();
      for (int i = 0; i < 2; ++i) {
        if (threads[i].joinable()) threads[i].join();
      }
    }
  } join{clients, added};
  for (int i = 0; i < 2; ++i) clients[i] = std::thread([&, i] { replies[i] = get(desired.endpoint.listen, "/slow"); });
  REQUIRE(eventually([&] { return added.slowStarted() == 1; }));
  CHECK(eventually([&] {
    const std::optional<AppliedServer> now = findServer(fixture.state(), "web", "added1");
    return now.has_value() && now->current_sessions == 1;
  }));
  CHECK(added.slowStarted() == 1);
  added.release();
  for (auto& t : clients) t.join();
  CHECK(replies[0] == "added1");
  CHECK(replies[1] == "added1");
  CHECK(added.slowStarted() == 2);
}

TEST_CASE("haproxy router: a switch between servers never leaves the backend without one") {
  // Blue-green's switch: a1 256 → 0 and b1 0 → 256 in one apply. The router raises b1 before
  // it lowers a1; the other order leaves a moment with every weight 0, when haproxy answers
  // 503 "No server is available".
  SKIP_WITHOUT_HAPROXY();
  RouterFixture fixture;
  Backend a("a1");
  Backend b("b1");
  DesiredPlanTraffic desired = plan("web", {server(a, "d1", 256), server(b, "d2", 0)});
  fixture.applyAndWait({desired});
  std::atomic<bool> done{false};
  std::map<std::string, int> seen;
  std::thread client([&] {
    httplib::Client http("127.0.0.1", portOf(desired.endpoint.listen));
    http.set_keep_alive(true);
    while (!done) {
      auto reply = http.Get("/");
      ++seen[!reply ? "error" : reply->status == 200 ? reply->body : "status " + std::to_string(reply->status)];
    }
  });
  for (int flip = 0; flip < 40; ++flip) {
    std::swap(desired.servers[0].weight, desired.servers[1].weight);
    REQUIRE(fixture.router->apply({desired}).isOk());
  }
  done = true;
  client.join();
  CHECK(seen.size() <= 2);
  CHECK(seen.count("status 503") == 0);
  CHECK(seen["a1"] + seen["b1"] > 0);
}

TEST_CASE("haproxy router: haproxy killed with SIGKILL is restarted serving the same split") {
  SKIP_WITHOUT_HAPROXY();
  RouterFixture fixture;
  Backend a("a1");
  Backend b("b1");
  DesiredPlanTraffic desired = plan("web", {server(a, "d1", 1), server(b, "d2", 3)});
  fixture.applyAndWait({desired});
  // A runtime change the file must carry too: b1 drains.
  desired.servers[1].drain = true;
  fixture.applyAndWait({desired});

  const pid_t before = fixture.pid();
  REQUIRE(before > 0);
  REQUIRE(::kill(before, SIGKILL) == 0);
  REQUIRE_MESSAGE(eventually([&] {
                    const pid_t now = fixture.pid();
                    return now != before && now > 0 && processAlive(now) && fixture.serves({desired});
                  }),
                  fixture.haproxyLog());
  CHECK(tally(desired.endpoint.listen, 20) == std::map<std::string, int>{{"a1", 20}});
}

TEST_CASE("haproxy router: a new router adopts the running haproxy without changing or reloading it") {
  SKIP_WITHOUT_HAPROXY();
  RouterFixture fixture;
  Backend a("a1");
  Backend b("b1");
  DesiredPlanTraffic desired = plan("web", {server(a, "d1", 2), server(b, "d2", 5)});
  desired.servers[1].preview = true;
  desired.endpoint.header_routes = {{"X-Canary", "always"}};
  fixture.applyAndWait({desired});
  const pid_t before = fixture.pid();
  const RouterState state_before = fixture.state();

  fixture.reopenWithoutStop();
  CHECK(fixture.pid() == before);
  const RouterState state_after = fixture.state();
  CHECK(state_after.up);
  REQUIRE(state_after.plans.size() == state_before.plans.size());
  CHECK(state_after.plans[0].listen == state_before.plans[0].listen);
  CHECK(state_after.metrics_url == state_before.metrics_url);
  CHECK(fixture.serves({desired}));

  REQUIRE(fixture.router->apply({desired}).isOk());
  CHECK(fixture.pid() == before);
  CHECK(haproxiesRunning(fixture.haproxy_dir + "/haproxy.cfg") == std::vector<pid_t>{before});
  CHECK(get(desired.endpoint.listen, "/", {{"X-Canary", "always"}}) == "b1");
}

TEST_CASE("haproxy router: weight and drain changes go over the runtime API without a restart") {
  SKIP_WITHOUT_HAPROXY();
  RouterFixture fixture;
  Backend a("a1");
  Backend b("b1");
  Backend c("c1");
  DesiredPlanTraffic desired = plan("web", {server(a, "d1", 1), server(b, "d2", 1)});
  fixture.applyAndWait({desired});
  const pid_t before = fixture.pid();

  desired.servers[0].weight = 3;
  desired.servers[1].weight = 0;
  desired.servers.push_back(server(c, "d2", 1));
  fixture.applyAndWait({desired});
  CHECK(fixture.pid() == before);
  const std::optional<AppliedServer> applied_a = findServer(fixture.state(), "web", "a1");
  REQUIRE(applied_a.has_value());
  CHECK(applied_a->weight == 3);
  std::map<std::string, int> seen = tally(desired.endpoint.listen, 40);
  CHECK(seen.size() == 2);
  CHECK(seen["a1"] > seen["c1"]);
  CHECK(seen["c1"] > 0);

  // The file carries the new split (a restarted haproxy serves it).
  const std::string config = readText(fixture.haproxy_dir + "/haproxy.cfg");
  CHECK(config.find("server a1 " + a.address() + " weight 3 ") != std::string::npos);
  CHECK(config.find("server c1 " + c.address() + " weight 1 ") != std::string::npos);

  // A new plan changes the config: haproxy reloads seamlessly (new pid, the old one leaves).
  // A client sending requests all along sees no error. (httplib reconnects when a reused
  // connection closes before replying, so this does not show `option idle-close-on-response`;
  // tests/traffic/traffic_e2e.py's Python clients do not, and count such a close as a failure.)
  std::atomic<bool> done{false};
  std::map<std::string, int> during;
  std::thread client([&] {
    httplib::Client http("127.0.0.1", portOf(desired.endpoint.listen));
    http.set_keep_alive(true);
    while (!done) {
      auto reply = http.Get("/");
      ++during[!reply ? "error: " + httplib::to_string(reply.error())
                      : reply->status == 200 ? "ok" : "status " + std::to_string(reply->status)];
    }
  });
  Backend d("d1");
  DesiredPlanTraffic other = plan("api", {server(d, "d9", 1)});
  fixture.applyAndWait({desired, other});
  CHECK(eventually([&] { return haproxiesRunning(fixture.haproxy_dir + "/haproxy.cfg").size() == 1; }));
  done = true;
  client.join();
  CHECK(during.size() == 1);
  CHECK(during["ok"] > 0);
  CHECK(fixture.pid() != before);
  CHECK(get(other.endpoint.listen) == "d1");
  CHECK(get(desired.endpoint.listen) != "");
  CHECK(eventually([&] { return haproxiesRunning(fixture.haproxy_dir + "/haproxy.cfg").size() == 1; }));
}

TEST_CASE("haproxy router: a plan whose port is taken gets an error while the others are served") {
  SKIP_WITHOUT_HAPROXY();
  RouterFixture fixture;
  Backend a("a1");
  Backend b("b1");
  // Another program holds this port.
  Fd taken(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(taken.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(::listen(taken.get(), 4) == 0);
  socklen_t length = sizeof address;
  REQUIRE(::getsockname(taken.get(), reinterpret_cast<sockaddr*>(&address), &length) == 0);
  const std::string taken_address = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));

  DesiredPlanTraffic blocked = plan("blocked", {server(a, "d1", 1)});
  blocked.endpoint.listen = taken_address;
  DesiredPlanTraffic served = plan("served", {server(b, "d2", 1)});
  REQUIRE(fixture.router->apply({blocked, served}).isOk());
  REQUIRE(eventually([&] { return fixture.serves({served}); }));
  CHECK(get(served.endpoint.listen) == "b1");

  const RouterState state = fixture.state();
  CHECK(state.up);
  const AppliedPlanTraffic* error = nullptr;
  for (const AppliedPlanTraffic& entry : state.plans) {
    if (entry.plan == "blocked") error = &entry;
  }
  REQUIRE(error != nullptr);
  CHECK(error->listen.empty());
  CHECK(error->error.find(taken_address) != std::string::npos);
  CHECK(error->error.find("in use") != std::string::npos);

  // Once the port is free, the next apply serves the plan.
  taken.reset();
  fixture.applyAndWait({blocked, served});
  CHECK(get(blocked.endpoint.listen) == "a1");
}

namespace {

// The value of the series `series` (name and labels, as rendered) in Prometheus text; -1 when absent.
double seriesValue(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(series + " ")) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

}  // namespace

TEST_CASE("haproxy router: every request's time at the router reaches its histograms, across a host restart") {
  SKIP_WITHOUT_HAPROXY();
  RouterFixture fixture;
  Backend a("a1");
  const std::vector<DesiredPlanTraffic> plans = {plan("web", {server(a, "d1", 1)})};
  fixture.applyAndWait(plans);
  const std::string labels = "{proxy=\"be_web\",server=\"a1\"";
  const std::string count = "tide_router_response_seconds_count" + labels + "}";

  // Ten quick requests, and one the backend holds for at least 0.3 s.
  CHECK(tally(plans[0].endpoint.listen, 10)["a1"] == 10);
  std::thread slow([&] { CHECK(get(plans[0].endpoint.listen, "/slow") == "a1"); });
  REQUIRE(eventually([&] { return a.slowStarted() == 1; }));
  const auto held_from = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - held_from < std::chrono::milliseconds(300)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  a.release();
  slow.join();
  REQUIRE_MESSAGE(eventually([&] { return seriesValue(fixture.router->metricsText(), count) == 11; }),
                  fixture.router->metricsText());
  const std::string text = fixture.router->metricsText();
  CHECK(seriesValue(text, "tide_router_response_seconds_bucket" + labels + ",le=\"+Inf\"}") == 11);
  CHECK(seriesValue(text, "tide_router_response_seconds_bucket" + labels + ",le=\"0.25\"}") <= 10);
  CHECK(seriesValue(text, "tide_router_response_seconds_sum" + labels + "}") >= 0.3);
  CHECK(seriesValue(text, "tide_router_log_lines_dropped_total") == 0);
  // The exporter's own scrapes are not logged: only the plan's backend has series.
  CHECK(text.find("tide_metrics") == std::string::npos);

  // A host killed and started again binds the socket anew; the haproxy it adopts keeps
  // sending to it, without a reload.
  const pid_t before = fixture.pid();
  fixture.reopenWithoutStop();
  REQUIRE(fixture.router->apply(plans).isOk());
  CHECK(fixture.pid() == before);
  CHECK(tally(plans[0].endpoint.listen, 5)["a1"] == 5);
  CHECK_MESSAGE(eventually([&] { return seriesValue(fixture.router->metricsText(), count) == 5; }),
                fixture.router->metricsText());
}

TEST_CASE("haproxy router: the request log counts what parses, skips requests without a server, drops the rest") {
  TempDir dir;
  RequestLog log(dir.file("log.sock"));
  CHECK(log.record("be_web a1 200 3"));
  CHECK(log.record("be_web a1 500 700"));
  CHECK(log.record("be_web <NOSRV> 503 0"));  // refused before a server was chosen: no series
  CHECK(log.record("be_web a1 200 -1"));      // the client left first: no time to count
  CHECK_FALSE(log.record("be_web a1 200"));
  CHECK_FALSE(log.record("be_web a1 200 fast"));
  CHECK_FALSE(log.record("be_web a\"1 200 3"));  // nothing that would need escaping in a label
  const std::string text = log.render();
  const std::string labels = "{proxy=\"be_web\",server=\"a1\"";
  CHECK(seriesValue(text, "tide_router_response_seconds_count" + labels + "}") == 2);
  CHECK(seriesValue(text, "tide_router_response_seconds_bucket" + labels + ",le=\"0.005\"}") == 1);
  CHECK(seriesValue(text, "tide_router_response_seconds_bucket" + labels + ",le=\"0.5\"}") == 1);
  CHECK(seriesValue(text, "tide_router_response_seconds_bucket" + labels + ",le=\"1\"}") == 2);
  CHECK(seriesValue(text, "tide_router_response_seconds_sum" + labels + "}") == doctest::Approx(0.703));
  CHECK(text.find("NOSRV") == std::string::npos);
}

TEST_CASE("haproxy router: the config logs every request, one in N, or none, and never the exporter's scrapes") {
  ConfigInput input{"/run/admin.sock", "127.0.0.1:9101", {}, {}, "/run/log.sock", 1};
  std::string every = renderConfig(input);
  CHECK(every.find("  log /run/log.sock len 1024 format raw local0 info\n") != std::string::npos);
  CHECK(every.find("  log-format \"%b %s %ST %Ta\"\n") != std::string::npos);
  CHECK(every.find("frontend tide_metrics\n  no log\n") != std::string::npos);
  input.log_sample = 10;
  CHECK(renderConfig(input).find("  log /run/log.sock len 1024 format raw sample 1:10 local0 info\n") !=
        std::string::npos);
  input.log_socket.clear();
  const std::string none = renderConfig(input);
  CHECK(none.find("log-format") == std::string::npos);
  CHECK(none.find("/run/log.sock") == std::string::npos);
}

TEST_CASE("haproxy router: request_log_sample 0 binds no log socket and keeps no histograms") {
  SKIP_WITHOUT_HAPROXY();
  RouterFixture fixture(Json{{"request_log_sample", 0}});
  Backend a("a1");
  const std::vector<DesiredPlanTraffic> plans = {plan("web", {server(a, "d1", 1)})};
  fixture.applyAndWait(plans);
  CHECK(tally(plans[0].endpoint.listen, 10)["a1"] == 10);
  CHECK_FALSE(std::filesystem::exists(fixture.haproxy_dir + "/log.sock"));
  CHECK(readText(fixture.haproxy_dir + "/haproxy.cfg").find("log-format") == std::string::npos);
  CHECK(fixture.router->metricsText().find("tide_router_response_seconds_count") == std::string::npos);
}
