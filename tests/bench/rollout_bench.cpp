// Rollout bench: a real `tide serve` (SQLite in a scratch dir, the shipped policies and
// rolling strategy) rolls out one auto-approved dev deployment of N instances onto a fleet,
// as a user would: manifests posted over HTTP, the deployment polled until COMPLETED (every
// instance RUNNING and healthy). Prints one JSON line:
//   {"bench":"rollout_sim"|"rollout_process", "instances", "seconds", "operations_per_s",
//    "approval_to_running_p50_ms", "approval_to_running_p99_ms", "commits", "writes",
//    "host_cpu_seconds" (user + system, from the deployment's post to COMPLETED),
//    "host_cpu_percent_of_one_core", "host_threads_peak" (sampled once a second), ...}
// and for process: the workloads' RSS, private memory and threads (mean and max), and
// their waiters' private memory, read from /proc once the rollout completed.
//
//   rollout_bench [sim|process] [instances] [nodes] [max_per_node] [applications: 1 or 2]
//
// sim: the sim driver (50 ms start latency, driver-reported health); process: real
// `tide workload` processes probed over HTTP. Exits 1 when the rollout does not complete
// within 10 minutes or ends in a wrong state.

#include <map>
#include <set>

#include "tests/bench/bench_support.h"

using namespace tide::bench;

namespace {

// Every event of `kind` (paged through /v1/events).
std::vector<Json> events(const Server& server, const std::string& kind) {
  std::vector<Json> out;
  int64_t after = 0;
  while (true) {
    const Json page = server.get("/v1/events?kind=" + kind + "&limit=1000&after=" + std::to_string(after));
    for (const Json& e : page["items"]) out.push_back(e);
    after = page.value("next_after", int64_t{0});
    if (after == 0) return out;
  }
}

// Milliseconds since the epoch of a ledger timestamp ("2026-11-24T08:10:28.123Z").
double atMs(const std::string& at) {
  std::tm tm{};
  int millis = 0;
  if (std::sscanf(at.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec, &millis) < 6) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) * 1000.0 + millis;
}

// Approval → RUNNING of each instance's CREATE: from its operation's APPROVED event to the
// first RUNNING event of its runtime instance.
std::vector<double> approvalToRunningMs(const Server& server) {
  std::map<std::string, double> approved;  // instance → at
  for (const Json& e : events(server, "operation.state")) {
    const Json& data = e["data"];
    if (data.value("to", "") == "APPROVED" && data.value("type", "") == "CREATE") {
      approved.emplace(data.value("instance", ""), atMs(e.value("at", "")));
    }
  }
  std::vector<double> out;
  std::set<std::string> seen;
  for (const Json& e : events(server, "runtime_instance.state")) {
    const Json& data = e["data"];
    if (data.value("to", "") != "RUNNING") continue;
    const std::string instance = data.value("instance", "");
    auto it = approved.find(instance);
    if (it == approved.end() || !seen.insert(instance).second) continue;
    out.push_back(atMs(e.value("at", "")) - it->second);
  }
  return out;
}

int64_t metric(const std::string& text, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const auto at = text.find(key);
  return at == std::string::npos ? 0 : std::stoll(text.substr(at + key.size()));
}

}  // namespace

int main(int argc, char** argv) {
  Fleet fleet;
  fleet.driver = argc > 1 ? argv[1] : "sim";
  if (fleet.driver != "sim" && fleet.driver != "process") fail("driver must be sim or process");
  fleet.instances = argc > 2 ? std::atoi(argv[2]) : 1000;
  fleet.nodes = argc > 3 ? std::atoi(argv[3]) : 100;
  fleet.max_per_node = argc > 4 ? std::atoi(argv[4]) : 10;
  fleet.applications = argc > 5 ? std::atoi(argv[5]) : 1;
  if (fleet.applications != 1 && fleet.applications != 2) fail("applications must be 1 or 2");
  const std::string bench = "rollout_" + fleet.driver;

  ScratchDir dir;
  Server server(dir, benchConfig());
  server.post("/v1/manifests", inventoryManifest(fleet), "application/yaml");
  server.post("/v1/manifests", planManifest(fleet), "application/yaml");
  note(bench + ": " + std::to_string(fleet.instances) + " instances on " + std::to_string(fleet.nodes) + " nodes");

  const std::string before = server.client()->Get("/metrics")->body;
  const double cpu_before = cpuSeconds(server.pid());
  int64_t threads_peak = tide::testing::procStatus(server.pid(), "Threads");
  const auto started = Steady::now();
  server.post("/v1/manifests", deploymentManifest(fleet, "d1", "1"), "application/yaml");
  const bool done =
      waitRolledOut(server, fleet, "d1", 600, started, [&](double s, int64_t running, const std::string& state) {
        threads_peak = std::max(threads_peak, tide::testing::procStatus(server.pid(), "Threads"));
        std::fprintf(stderr, "  %6.1f s  %5lld running  %s\n", s, static_cast<long long>(running), state.c_str());
      });
  const double seconds = secondsSince(started);
  const double host_cpu = cpuSeconds(server.pid()) - cpu_before;
  threads_peak = std::max(threads_peak, tide::testing::procStatus(server.pid(), "Threads"));
  if (!done) fail("deployment not COMPLETED after 600 s");
  const int64_t running = runningInstances(server, fleet.plan);
  if (running != fleet.instances) fail("COMPLETED with " + std::to_string(running) + " running instances");
  const std::string after = server.client()->Get("/metrics")->body;

  const std::vector<double> latencies = approvalToRunningMs(server);
  const int64_t operations = static_cast<int64_t>(latencies.size());
  const int64_t commits = metric(after, "tide_ledger_commits_total") - metric(before, "tide_ledger_commits_total");
  const int64_t writes = metric(after, "tide_ledger_writes_total") - metric(before, "tide_ledger_writes_total");
  Json line = {{"bench", bench},
               {"instances", fleet.instances},
               {"nodes", fleet.nodes},
               {"max_per_node", fleet.max_per_node},
               {"applications", fleet.applications},
               {"seconds", seconds},
               {"operations_per_s", static_cast<double>(operations) / seconds},
               {"approval_to_running_p50_ms", percentile(latencies, 0.50)},
               {"approval_to_running_p99_ms", percentile(latencies, 0.99)},
               {"ledger_writes", writes},
               {"ledger_commits", commits},
               {"mean_batch", commits > 0 ? static_cast<double>(writes) / static_cast<double>(commits) : 0.0},
               {"host_rss_mib", server.rssMib()},
               {"host_cpu_seconds", host_cpu},
               {"host_cpu_percent_of_one_core", 100.0 * host_cpu / seconds},
               {"host_threads_peak", threads_peak}};
  if (fleet.driver == "process") line.update(workloadFootprint(dir.path.string() + "/data"));
  std::printf("%s\n", line.dump().c_str());
  return 0;
}
