// Scale bench: a real `tide serve` rolls one auto-approved deployment of 100,000 instances
// onto 5,000 sim nodes (driver-reported health, no start latency), then measures what a
// fleet that size costs at rest: the host's resident memory, the mean duration of a pass
// with nothing to do (from /metrics over a quiet window), and a restart after SIGKILL:
// seconds from exec to /readyz and to the first pass. Prints one JSON line:
//   {"bench":"scale", "nodes", "instances", "rollout_seconds", "rss_mib", "idle_pass_ms",
//    "restart_ready_s", "restart_first_pass_s", "rss_after_restart_mib"}
//
//   scale_bench [nodes] [instances]

#include "tests/bench/bench_support.h"

using namespace tide::bench;

namespace {

double metricValue(const std::string& text, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const auto at = text.find(key);
  return at == std::string::npos ? 0 : std::stod(text.substr(at + key.size()));
}

struct PassFigures {
  double count = 0;
  double sum = 0;
};

PassFigures passes(const Server& server) {
  auto reply = server.client()->Get("/metrics");
  if (!reply) fail("GET /metrics: no reply");
  return {metricValue(reply->body, "tide_reconcile_pass_duration_seconds_count"),
          metricValue(reply->body, "tide_reconcile_pass_duration_seconds_sum")};
}

}  // namespace

int main(int argc, char** argv) {
  Fleet fleet;
  fleet.nodes = argc > 1 ? std::atoi(argv[1]) : 5000;
  fleet.instances = argc > 2 ? std::atoi(argv[2]) : 100000;
  fleet.domains = 20;
  fleet.max_per_node = std::max(1, 2 * fleet.instances / fleet.nodes);
  // Runtimes that outlive the host, as real ones do: a restarted sim driver adopts what
  // the ledger says runs instead of reporting it gone.
  fleet.driver_config = "{start_latency_ms: 0, seed: 7, adopt: true}";

  // A deployment holds at most 10,000 instances: the fleet is served by as many plans
  // (services) as that takes, all rolled out at once.
  std::vector<Fleet> services;
  for (int placed = 0; placed < fleet.instances; placed += 10000) {
    Fleet service = fleet;
    service.plan = "svc" + std::to_string(services.size());
    service.instances = std::min(10000, fleet.instances - placed);
    services.push_back(service);
  }

  ScratchDir dir;
  Server server(dir, benchConfig(500));
  for (const auto& manifest : inventoryManifests(fleet)) server.post("/v1/manifests", manifest, "application/yaml");
  for (const auto& service : services) server.post("/v1/manifests", planManifest(service), "application/yaml");
  std::fprintf(stderr, "scale: %d instances in %zu plans on %d sim nodes\n", fleet.instances, services.size(),
               fleet.nodes);

  const auto started = Steady::now();
  for (const auto& service : services) {
    server.post("/v1/manifests", deploymentManifest(service, "d1", "1"), "application/yaml");
  }
  for (const auto& service : services) {
    const bool done = waitRolledOut(server, service, "d1", 3600, started,
                                    [&](double s, int64_t running, const std::string&) {
                                      std::fprintf(stderr, "  %7.1f s  %s: %7lld running\n", s, service.plan.c_str(),
                                                   static_cast<long long>(running));
                                    },
                                    10);
    if (!done) fail(service.plan + ": deployment not COMPLETED after an hour");
  }
  const double rollout_s = secondsSince(started);

  // At rest: a few passes to settle, then a quiet window, at whose end the resident size is
  // read (the loop gives freed memory back every 10 s: host/core/memory.h).
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const PassFigures before = passes(server);
  std::this_thread::sleep_for(std::chrono::seconds(10));
  const PassFigures after = passes(server);
  const double rss = server.rssMib();
  const double idle_pass_ms =
      after.count > before.count ? (after.sum - before.sum) / (after.count - before.count) * 1000 : 0;
  std::fprintf(stderr, "  at rest: %.0f MiB resident, %.0f passes, %.2f ms each\n", rss, after.count - before.count,
               idle_pass_ms);

  const auto restarted = Steady::now();
  const double ready_s = server.restart();
  while (passes(server).count < 1 && secondsSince(restarted) < 600) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double first_pass_s = secondsSince(restarted);
  int64_t running = 0;
  for (const auto& service : services) running += runningInstances(server, service.plan);
  std::fprintf(stderr, "  restart: ready in %.2f s, first pass done in %.2f s, %lld running\n", ready_s, first_pass_s,
               static_cast<long long>(running));
  if (running != fleet.instances) fail("after the restart " + std::to_string(running) + " instances run");

  Json line = {{"bench", "scale"},
               {"nodes", fleet.nodes},
               {"instances", fleet.instances},
               {"rollout_seconds", rollout_s},
               {"rss_mib", rss},
               {"idle_pass_ms", idle_pass_ms},
               {"restart_ready_s", ready_s},
               {"restart_first_pass_s", first_pass_s},
               {"rss_after_restart_mib", server.rssMib()}};
  std::printf("%s\n", line.dump().c_str());
  return 0;
}
