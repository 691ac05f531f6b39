// Traffic router bench: what the HAProxy router (drivers/traffic/haproxy) adds to a request.
// One plan, one server: nginx serving a small file. wrk -t2 -c64 straight to nginx and
// through the router's endpoint, alternately (direct, router, direct, router) in the same run,
// so both see the same machine load. Prints one JSON line:
//   {"bench":"traffic_router", "direct_rps", "direct_p99_ms", "router_rps", "router_p99_ms",
//    "rps_ratio", "p99_added_ms"}
// Targets: p99 added <= 2 ms, router rps >= 80% of direct (on a machine not shared with
// other loads; wrk, nginx and haproxy compete for the same cores here).
//
//   traffic_bench [seconds-per-phase]
//
// Needs wrk, nginx and haproxy (.ci/install-deps --bench); exits 1 without.

#include <signal.h>

#include "drivers/traffic/haproxy/haproxy_router.h"
#include "tests/bench/bench_support.h"
#include "tests/bench/http_load.h"

using namespace tide::bench;
using namespace tide::drivers::traffic;

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 10;
  if (run("command -v wrk").empty() || run("command -v nginx").empty() || ::access("/usr/sbin/haproxy", X_OK) != 0) {
    fail("wrk, nginx and haproxy are needed: .ci/install-deps --bench");
  }
  ScratchDir dir;
  const std::string path = "/hello.json";
  Nginx nginx(dir, path, std::string(R"({"hello":"world","padding":")") + std::string(200, 'x') + "\"}");

  RouterContext context;
  context.data_dir = dir.path.string();
  auto made = makeHaproxyRouter(Json::object(), context);
  if (!made.isOk()) fail(made.status().toString());
  std::unique_ptr<Router> router = std::move(made).value();
  if (!router->start().isOk()) fail("router start");
  const std::string backend = nginx.url("").substr(std::string("http://").size());
  DesiredPlanTraffic plan;
  plan.plan = "bench";
  plan.endpoint.listen = "127.0.0.1:" + std::to_string(freePort());
  plan.servers = {{"nginx-1", "d1", backend, 100, false, false}};
  tide::Status applied = router->apply({plan});
  if (!applied.isOk()) fail(applied.toString());
  // Ends haproxy on every way out of main (fail() too would leave it: it calls exit()).
  struct StopRouter {
    Router& router;
    ~StopRouter() { (void)router.stop(); }
  } stop_router{*router};
  const std::string routed = "http://" + plan.endpoint.listen + path;
  httplib::Client probe("127.0.0.1", std::stoi(plan.endpoint.listen.substr(plan.endpoint.listen.rfind(':') + 1)));
  const auto started = Steady::now();
  while (true) {
    auto reply = probe.Get(path);
    if (reply && reply->status == 200) break;
    if (secondsSince(started) > 30) {
      (void)router->stop();
      fail("the router does not serve " + routed);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  note("traffic_router: wrk -t2 -c64, " + std::to_string(seconds) + " s per phase, direct and routed twice each");
  std::vector<WrkResult> direct;
  std::vector<WrkResult> through;
  for (int round = 0; round < 2; ++round) {
    direct.push_back(wrk(nginx.url(path), "", seconds));
    through.push_back(wrk(routed, "", seconds));
    std::fprintf(stderr, "  direct %9.0f req/s  p99 %7.2f ms | router %9.0f req/s  p99 %7.2f ms (errors %lld)\n",
                 direct.back().rps, direct.back().p99_ms, through.back().rps, through.back().p99_ms,
                 static_cast<long long>(through.back().errors));
  }
  auto mean = [](const std::vector<WrkResult>& results, double WrkResult::*field) {
    double sum = 0;
    for (const WrkResult& r : results) sum += r.*field;
    return sum / static_cast<double>(results.size());
  };
  const double direct_rps = mean(direct, &WrkResult::rps);
  const double router_rps = mean(through, &WrkResult::rps);
  const double direct_p99 = mean(direct, &WrkResult::p99_ms);
  const double router_p99 = mean(through, &WrkResult::p99_ms);
  const Json line = {{"bench", "traffic_router"},
                     {"seconds_per_phase", seconds},
                     {"direct_rps", direct_rps},
                     {"direct_p99_ms", direct_p99},
                     {"router_rps", router_rps},
                     {"router_p99_ms", router_p99},
                     {"rps_ratio", router_rps / direct_rps},
                     {"p99_added_ms", router_p99 - direct_p99},
                     {"router_errors", through[0].errors + through[1].errors}};
  std::printf("%s\n", line.dump().c_str());
  return 0;
}
