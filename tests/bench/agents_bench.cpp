// Node agents bench (docs/agents.md): a real `tide serve` and real `tide agent` processes on
// loopback. Prints one JSON line:
//
//   agents_bench heartbeat [agents] [seconds]
//     {"bench":"agents_heartbeat", "agents", "seconds", "host_cpu_percent_of_one_core", ...}
//     N agents with the sim runtime (nothing runs) report every second; the host's CPU time
//     (utime + stime from /proc) over `seconds` once all are reachable.
//   agents_bench rollout [instances] [agents]
//     {"bench":"agents_rollout", "instances", "agents", "local_seconds", "agent_seconds", "ratio", ...}
//     The same auto-approved dev deployment of `instances` `tide workload` processes, first on
//     a process cluster of `agents` local nodes, then on an agent cluster of `agents` nodes
//     each served by a `tide agent` running processes; seconds from the deployment's POST to
//     COMPLETED (every instance RUNNING and healthy), and agent / local.
//
// Exits 1 when a rollout does not complete within 10 minutes or the agents never report.

#include <sys/prctl.h>

#include "tests/bench/bench_support.h"

using namespace tide::bench;

namespace {

// `tide agent` processes serving the nodes of `fleet` under `dir`, ended with the bench.
class Agents {
 public:
  Agents(const Server& server, const Fleet& fleet, const std::filesystem::path& dir, const std::string& runtime,
         int ports_each) {
    std::filesystem::create_directories(dir);  // for the agents' logs, opened before exec
    for (int i = 0; i < fleet.nodes; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "n%05d", i);
      const Json token = server.post("/v1/tokens",
                                     Json{{"name", std::string(name) + "-agent"}, {"role", "agent"}, {"node", name}}.dump(),
                                     "application/json");
      const std::string data_dir = (dir / name).string();
      const int first = 10000 + i * ports_each;  // below the ephemeral range, one block per agent
      const std::string ports = std::to_string(first) + "-" + std::to_string(first + ports_each - 1);
      spawn({"agent", "--server", server.url(), "--node", name, "--token", token["token"].get<std::string>(),
             "--data-dir", data_dir, "--port-range", ports, "--runtime", runtime},
            (dir / (std::string(name) + ".log")).string());
    }
  }
  ~Agents() {
    for (pid_t pid : pids_) ::kill(pid, SIGTERM);
    for (pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
  }

 private:
  void spawn(const std::vector<std::string>& args, const std::string& log) {
    std::vector<std::string> argv{"tide"};
    argv.insert(argv.end(), args.begin(), args.end());
    pids_.push_back(spawnTied(TIDE_BINARY, argv, log));
  }
  std::vector<pid_t> pids_;
};

// How many nodes of the fleet the host hears from.
int reachable(const Server& server) {
  int n = 0;
  int64_t after = 0;
  do {
    const Json page = server.get("/v1/nodes?limit=1000&after=" + std::to_string(after));
    for (const Json& node : page["items"]) n += node.contains("agent") && node["agent"].value("reachable", false);
    after = page.value("next_after", int64_t{0});
  } while (after != 0);
  return n;
}

void waitReachable(const Server& server, int agents) {
  const auto started = Steady::now();
  int last = -1;
  while (secondsSince(started) < 300) {
    const int now = reachable(server);
    if (now == agents) return;
    if (now != last) note("  " + std::to_string(now) + " of " + std::to_string(agents) + " agents reporting");
    last = now;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  fail("only " + std::to_string(last) + " of " + std::to_string(agents) + " agents report after 300 s");
}

// CPU seconds (user + system) `pid` has used, from /proc/<pid>/stat.
double cpuSeconds(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {  // field 3 is the state, after "pid (comm)"
    if (i == 14) utime = std::stoll(field);
    if (i == 15) {
      stime = std::stoll(field);
      break;
    }
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

int heartbeat(int agents, int seconds) {
  ScratchDir dir;
  Fleet fleet;
  fleet.driver = "agent";
  fleet.nodes = agents;
  Server server(dir, benchConfig() + "agents: {heartbeat_ttl_s: 10}\n");
  server.post("/v1/manifests", inventoryManifest(fleet), "application/yaml");
  Agents running(server, fleet, dir.path / "data" / "agents-bench", "sim", 10);
  waitReachable(server, agents);
  const double cpu_before = cpuSeconds(server.pid());
  const auto started = Steady::now();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const double cpu = cpuSeconds(server.pid()) - cpu_before;
  const double elapsed = secondsSince(started);
  const int still = reachable(server);
  Json line = {{"bench", "agents_heartbeat"},
               {"agents", agents},
               {"seconds", elapsed},
               {"host_cpu_seconds", cpu},
               {"host_cpu_percent_of_one_core", 100.0 * cpu / elapsed},
               {"reachable_at_end", still},
               {"host_rss_mib", server.rssMib()}};
  std::printf("%s\n", line.dump().c_str());
  return still == agents ? 0 : 1;
}

// Seconds from the deployment's POST to COMPLETED on `fleet` (agents started for an agent
// cluster).
double rollOut(Fleet fleet) {
  ScratchDir dir;
  Server server(dir, benchConfig());
  server.post("/v1/manifests", inventoryManifest(fleet), "application/yaml");
  server.post("/v1/manifests", planManifest(fleet), "application/yaml");
  std::optional<Agents> agents;
  if (fleet.driver == "agent") {
    agents.emplace(server, fleet, dir.path / "data" / "agents-bench", "process", 4 * fleet.max_per_node);
    waitReachable(server, fleet.nodes);
  }
  note("rollout on " + fleet.driver + ": " + std::to_string(fleet.instances) + " instances on " +
       std::to_string(fleet.nodes) + " nodes");
  const auto started = Steady::now();
  server.post("/v1/manifests", deploymentManifest(fleet, "d1", "1"), "application/yaml");
  const bool done = waitRolledOut(server, fleet, "d1", 600, started, [](double s, int64_t running, const std::string& state) {
    std::fprintf(stderr, "  %6.1f s  %5lld running  %s\n", s, static_cast<long long>(running), state.c_str());
  }, 5);
  const double seconds = secondsSince(started);
  if (!done) fail("deployment on " + fleet.driver + " not COMPLETED after 600 s");
  if (runningInstances(server, fleet.plan) != fleet.instances) fail("COMPLETED with missing instances");
  return seconds;
}

int rollout(int instances, int agents) {
  Fleet fleet;
  fleet.instances = instances;
  fleet.nodes = agents;
  fleet.domains = std::min(agents, 10);
  fleet.max_per_node = (instances + agents - 1) / agents;
  fleet.driver = "process";
  const double local = rollOut(fleet);
  fleet.driver = "agent";
  const double remote = rollOut(fleet);
  Json line = {{"bench", "agents_rollout"},  {"instances", instances},   {"agents", agents},
               {"local_seconds", local},     {"agent_seconds", remote}, {"ratio", remote / local}};
  std::printf("%s\n", line.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "heartbeat";
  if (mode == "heartbeat") return heartbeat(argc > 2 ? std::atoi(argv[2]) : 200, argc > 3 ? std::atoi(argv[3]) : 30);
  if (mode == "rollout") return rollout(argc > 2 ? std::atoi(argv[2]) : 1000, argc > 3 ? std::atoi(argv[3]) : 20);
  fail("mode must be heartbeat or rollout");
}
