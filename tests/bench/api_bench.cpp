// API load bench: GET /v1/nodes/{name} under wrk -t2 -c64, side by side with nginx
// (Debian's nginx-light) serving the same bytes as a static file in the same run; then the
// same load while the host rolls out 1,000 sim instances, with a client reading the
// 1,000-instance plan view (GET /v1/plans/{name}) over and over meanwhile. Prints one
// JSON line:
//   {"bench":"api_load", "idle_rps", "idle_p99_ms", "nginx_rps", "nginx_p99_ms",
//    "ratio_vs_nginx", "rollout_rps", "rollout_p99_ms", "plan_p99_ms", ...}
//
//   api_bench [seconds-per-phase]
//
// Needs wrk and nginx on PATH (.ci/install-deps --bench installs them); exits 1 without.

#include <atomic>

#include "tests/bench/bench_support.h"
#include "tests/bench/http_load.h"

using namespace tide::bench;

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 10;
  if (run("command -v wrk").empty() || run("command -v nginx").empty()) {
    fail("wrk and nginx are needed: apt-get install wrk nginx-light (or .ci/install-deps --bench)");
  }
  Fleet fleet;  // 100 sim nodes, a 1,000-instance plan, max_per_node 10
  ScratchDir dir;
  Server server(dir, benchConfig());
  server.post("/v1/manifests", inventoryManifest(fleet), "application/yaml");
  server.post("/v1/manifests", planManifest(fleet), "application/yaml");

  const std::string node_path = "/v1/nodes/n00001";
  const std::string node_body = server.client()->Get(node_path.c_str())->body;
  Nginx nginx(dir, node_path, node_body);

  note("api_load: idle, GET " + node_path + " (" + std::to_string(node_body.size()) + " bytes), " +
       std::to_string(seconds) + " s each");
  const WrkResult idle = wrk(server.url() + node_path, server.token(), seconds);
  const WrkResult peer = wrk(nginx.url(node_path), "", seconds);
  std::fprintf(stderr, "  tide  %9.0f req/s  p99 %7.2f ms\n  nginx %9.0f req/s  p99 %7.2f ms\n", idle.rps, idle.p99_ms,
               peer.rps, peer.p99_ms);

  note("api_load: the same load while 1,000 sim instances roll out, plan view read meanwhile");
  std::atomic<bool> rolling{true};
  std::vector<double> plan_ms;
  double rollout_s = 0;
  std::thread reader([&] {
    auto client = server.client();
    const std::string path = "/v1/plans/" + fleet.plan;
    while (rolling) {
      const auto t = Steady::now();
      auto reply = client->Get(path.c_str());
      if (!reply || reply->status != 200) fail("GET " + path + " failed during the rollout");
      plan_ms.push_back(secondsSince(t) * 1000);
    }
  });
  std::thread rollout([&] {
    const auto started = Steady::now();
    server.post("/v1/manifests", deploymentManifest(fleet, "d1", "1"), "application/yaml");
    if (!waitRolledOut(server, fleet, "d1", 600, started, [](double, int64_t, const std::string&) {}, 1e9)) {
      fail("the rollout did not complete");
    }
    rollout_s = secondsSince(started);
  });
  const WrkResult busy = wrk(server.url() + node_path, server.token(), seconds);
  rollout.join();
  rolling = false;
  reader.join();
  std::fprintf(stderr, "  tide  %9.0f req/s  p99 %7.2f ms during a %.1f s rollout; plan view p99 %.1f ms (%zu reads)\n",
               busy.rps, busy.p99_ms, rollout_s, percentile(plan_ms, 0.99), plan_ms.size());

  Json line = {{"bench", "api_load"},
               {"connections", 64},
               {"body_bytes", node_body.size()},
               {"idle_rps", idle.rps},
               {"idle_p50_ms", idle.p50_ms},
               {"idle_p99_ms", idle.p99_ms},
               {"idle_errors", idle.errors},
               {"nginx_rps", peer.rps},
               {"nginx_p99_ms", peer.p99_ms},
               {"ratio_vs_nginx", idle.rps / peer.rps},
               {"rollout_rps", busy.rps},
               {"rollout_p99_ms", busy.p99_ms},
               {"rollout_errors", busy.errors},
               {"rollout_seconds", rollout_s},
               {"plan_reads", plan_ms.size()},
               {"plan_p50_ms", percentile(plan_ms, 0.50)},
               {"plan_p99_ms", percentile(plan_ms, 0.99)}};
  std::printf("%s\n", line.dump().c_str());
  return 0;
}
