#pragma once
// What the benches that drive a real `tide serve` share: a scratch directory, the server
// as a child process started from the source tree (so the shipped policies and scripts
// run), an authenticated HTTP client, generated fleet manifests, percentiles, and the one
// JSON line each bench prints on stdout. Progress goes to stderr.

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/support/free_port.h"
#include "tests/support/serve_child.h"
#include "tests/support/source_tree.h"
#include "tests/support/workloads.h"

namespace tide::bench {

using Json = nlohmann::json;
using Steady = std::chrono::steady_clock;

inline double secondsSince(Steady::time_point start) {
  return std::chrono::duration<double>(Steady::now() - start).count();
}

// The scratch dirs alive now: fail() ends the workloads under them.
inline std::set<std::string>& liveScratchDirs() {
  static std::set<std::string> dirs;
  return dirs;
}

[[noreturn]] inline void fail(const std::string& why) {
  std::fprintf(stderr, "bench failed: %s\n", why.c_str());
  // The servers and agents end with the bench (PR_SET_PDEATHSIG); the workloads they started
  // outlive them by design, so end those here: every process whose environment names a
  // runtime instance under a scratch dir.
  for (const std::string& dir : liveScratchDirs()) testing::killWorkloadsOf(dir);
  std::exit(1);  // no destructors: with TIDE_BENCH_KEEP set the scratch dir stays for a look
}

inline void note(const std::string& text) { std::fprintf(stderr, "%s\n", text.c_str()); }

// The value at quantile `q` (0..1) of `values` (sorted here); 0 for none.
inline double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t at = std::min(values.size() - 1, static_cast<size_t>(q * static_cast<double>(values.size())));
  return values[at];
}

struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tide-bench-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) fail("mkdtemp");
    path = pattern;
    liveScratchDirs().insert(path.string());
  }
  ~ScratchDir() {
    liveScratchDirs().erase(path.string());
    if (std::getenv("TIDE_BENCH_KEEP") != nullptr) return;  // to read serve.log after a failure
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

// A free TCP port on 127.0.0.1 (good enough for a bench that runs alone).
inline int freePort() {
  const int port = testing::unusedLoopbackPort();
  if (port == 0) fail("no free port");
  return port;
}

// Forks `program` (found on PATH unless it holds a '/') with `argv` (argv[0] first), its
// stdout and stderr appended to `log`, in `cwd` when one is given. The child ends with the
// bench (PR_SET_PDEATHSIG), also when fail() exits without destructors or the bench is
// killed. Its pid.
inline pid_t spawnTied(const std::string& program, const std::vector<std::string>& argv, const std::string& log,
                       const std::string& cwd = "") {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execvp(program.c_str(), args.data());
    ::_exit(127);
  }
  return pid;
}

// `tide serve` on its own port and data dir with `config_yaml` as its tide.yaml.
class Server {
 public:
  // The shipped policies but change_freeze.lua (testing::shippedPolicies): a bench measures
  // speed on any day, and the freeze's windows deny every rollout on theirs.
  Server(const ScratchDir& dir, const std::string& config_yaml) : dir_(dir.path) {
    port_ = freePort();
    std::ofstream(dir_ / "tide.yaml") << "policies_dir: " << testing::shippedPolicies(dir_).string() << "\n"
                                      << config_yaml;
    launch();
    waitReady();
    std::ifstream(dir_ / "data" / "admin.token") >> token_;
    if (token_.empty()) fail("no admin token in " + (dir_ / "data").string());
  }
  ~Server() {
    stop();
    killWorkloads();
  }

  void stop() { testing::killAndReap(pid_, SIGTERM); }

  // The process driver's workloads outlive the host by design; a bench ends them: every
  // process whose environment names a runtime instance under this data dir.
  void killWorkloads() const { testing::killWorkloadsOf((dir_ / "data").string()); }

  // Time from exec to /readyz answering 200, in seconds.
  double waitReady() {
    const auto started = Steady::now();
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(std::chrono::milliseconds(200));
    while (secondsSince(started) < 120) {
      auto reply = client.Get("/readyz");
      if (reply && reply->status == 200) return secondsSince(started);
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) fail("tide serve exited; see " + (dir_ / "serve.log").string());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    fail("tide serve not ready after 120 s");
  }

  // Kills the server (SIGKILL) and starts it again on the same data dir; returns the
  // seconds from exec to ready.
  double restart() {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    const auto started = Steady::now();
    launch();
    waitReady();
    return secondsSince(started);
  }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& token() const { return token_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // A client carrying the admin token.
  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_bearer_token_auth(token_.c_str());
    c->set_read_timeout(std::chrono::seconds(120));
    c->set_write_timeout(std::chrono::seconds(120));
    return c;
  }

  Json get(const std::string& path) const {
    auto reply = client()->Get(path.c_str());
    if (!reply) fail("GET " + path + ": no reply (" + httplib::to_string(reply.error()) + ")");
    if (reply->status != 200) fail("GET " + path + ": " + std::to_string(reply->status) + " " + reply->body);
    return Json::parse(reply->body);
  }

  Json post(const std::string& path, const std::string& body, const std::string& type) const {
    auto reply = client()->Post(path.c_str(), body, type.c_str());
    if (!reply) fail("POST " + path + ": no reply (" + httplib::to_string(reply.error()) + ")");
    if (reply->status / 100 != 2) fail("POST " + path + ": " + std::to_string(reply->status) + " " + reply->body);
    return reply->body.empty() ? Json() : Json::parse(reply->body);
  }

  // Resident set size of the server, in MiB, from /proc.
  double rssMib() const { return static_cast<double>(testing::procStatus(pid_, "VmRSS")) / 1024.0; }

 private:
  // Forks `tide serve` on port_ with the scratch dir's config, data dir and log, in the source
  // tree (its scripts are the defaults).
  void launch() {
    pid_ = spawnTied(TIDE_BINARY,
                     {"tide", "serve", "--listen", "127.0.0.1:" + std::to_string(port_), "--data-dir",
                      (dir_ / "data").string(), "--config", (dir_ / "tide.yaml").string()},
                     (dir_ / "serve.log").string(), TIDE_SOURCE_DIR);
  }


  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string token_;
};

// User + system CPU seconds `pid` has used (its threads, not its children).
inline double cpuSeconds(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t name_end = line.rfind(')');
  if (name_end == std::string::npos) return 0;
  std::istringstream rest(line.substr(name_end + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; rest >> field && i <= 15; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// What the workloads of a data dir (and their waiters) use, one look at each: the figures a
// rollout bench prints beside its times.
inline Json workloadFootprint(const std::string& data_dir) {
  std::vector<double> rss_mib, private_mib, threads, waiter_private_kib;
  for (pid_t pid : testing::workloadsOf(data_dir)) {
    const int64_t rss = testing::procStatus(pid, "VmRSS");
    if (rss == 0) continue;  // gone meanwhile
    rss_mib.push_back(static_cast<double>(rss) / 1024.0);
    private_mib.push_back(static_cast<double>(testing::privateKib(pid)) / 1024.0);
    threads.push_back(static_cast<double>(testing::procStatus(pid, "Threads")));
    if (const pid_t waiter = testing::parentOf(pid); waiter > 1) {
      waiter_private_kib.push_back(static_cast<double>(testing::privateKib(waiter)));
    }
  }
  const auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
  };
  const auto max = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
  return Json{{"workloads_measured", rss_mib.size()},
              {"workload_rss_mib_mean", mean(rss_mib)},
              {"workload_rss_mib_max", max(rss_mib)},
              {"workload_private_mib_mean", mean(private_mib)},
              {"workload_threads_mean", mean(threads)},
              {"workload_threads_max", max(threads)},
              {"waiter_private_kib_mean", mean(waiter_private_kib)}};
}

// tide.yaml for a bench: no hooks of note, executor sized for a fleet.
inline std::string benchConfig(int reconcile_interval_ms = 200) {
  std::ostringstream out;
  out << "limits:\n"
      << "  reconcile_interval_ms: " << reconcile_interval_ms << "\n"
      << "  executor_workers: 128\n"
      << "  executor_chunk: 1000\n"
      << "  executor_rate_per_second: 10000\n";
  return out.str();
}

struct Fleet {
  std::string driver = "sim";  // sim | process
  int nodes = 100;
  int domains = 10;
  int instances = 1000;
  int max_per_node = 10;
  std::string plan = "big";
  std::string driver_config = "{start_latency_ms: 50, seed: 7}";
  // 2: every instance also runs a second application, "shipper" (tide workload on declared
  // port 9100, with its own health check, started after web): docs/architecture.md#applications.
  int applications = 1;
};

// Capabilities, one cluster and `nodes` nodes in `domains` update domains, as manifests of at most `per_manifest` nodes each (the first also
// declares the capability and the cluster): one manifest is capped at 100,000 YAML values,
// about 7,000 of these nodes.
inline std::vector<std::string> inventoryManifests(const Fleet& fleet, int per_manifest = 2000) {
  std::vector<std::string> manifests;
  std::ostringstream out;
  out << "capabilities:\n  - {name: \"intel-xeon\", type: \"CPU\", score: 10}\n"
      << "clusters:\n  - name: \"fleet\"\n    driver: \"" << fleet.driver << "\"\n";
  if (fleet.driver == "sim") out << "    driver_config: " << fleet.driver_config << "\n";
  out << "nodes:\n";
  for (int i = 0; i < fleet.nodes; ++i) {
    if (i > 0 && i % per_manifest == 0) {
      manifests.push_back(out.str());
      out.str("");
      out << "nodes:\n";
    }
    char name[32];
    std::snprintf(name, sizeof name, "n%05d", i);
    out << "  - {name: \"" << name << "\", cluster: \"fleet\", updateDomain: \"ud-" << (i % fleet.domains)
        << "\", totalResources: {cores: 64, memory: 256}, systemReservedResources: {cores: 2, memory: 4}, "
        << "capabilityIDs: [\"intel-xeon\"]}\n";
  }
  manifests.push_back(out.str());
  return manifests;
}

// The same inventory as one manifest.
inline std::string inventoryManifest(const Fleet& fleet) { return inventoryManifests(fleet, fleet.nodes + 1).front(); }

// A dev-namespace plan (auto-approved by policies/auto_approve_dev.lua), rolling with
// max_surge 100%, with an HTTP health check on the workload's port.
inline std::string planManifest(const Fleet& fleet) {
  std::ostringstream out;
  out << "plans:\n  - name: \"" << fleet.plan << "\"\n    namespace: \"" << fleet.plan << "-dev\"\n"
      << "    serviceName: \"" << fleet.plan << "\"\n"
      << (fleet.max_per_node > 1 ? "    placement: {max_per_node: " + std::to_string(fleet.max_per_node) + "}\n" : "")
      << "    applications:\n      - payloadName: \"web\"\n        resources: {cores: 0.1, memory: 0.1}\n"
      << "        ports: [{protocol: \"TCP\", port: 80}]\n"
      << "        healthCheck: {type: http, port: 80, path: /healthz, intervalSeconds: 1}\n";
  if (fleet.applications > 1) {
    out << "      - payloadName: \"shipper\"\n        resources: {cores: 0.1, memory: 0.1}\n"
        << "        ports: [{protocol: \"TCP\", port: 9100}]\n        dependsOn: [web]\n"
        << "        healthCheck: {type: http, port: 9100, path: /healthz, intervalSeconds: 1}\n";
  }
  out << "    strategy: {script: rolling, params: {max_surge: \"100%\"}}\n";
  return out.str();
}

inline std::string deploymentManifest(const Fleet& fleet, const std::string& id, const std::string& version) {
  std::ostringstream out;
  out << "deployments:\n  - deployment_plan_name: \"" << fleet.plan << "\"\n    deployment_id: \"" << id << "\"\n"
      << "    payload_coordinates:\n      - payload_name: \"web\"\n        coordinates: {image: \"tide-workload:"
      << version << "\"}\n";
  if (fleet.applications > 1) {
    out << "      - payload_name: \"shipper\"\n        coordinates: {command: [\"{{tide}}\", \"workload\", \"--listen\", "
        << "\"127.0.0.1:{{port.tcp.9100}}\", \"--version\", \"shipper-" << version << "\"]}\n";
  }
  out << "    instance_count: " << fleet.instances << "\n";
  return out.str();
}

// The plan view's count of instances whose active runtime instance is RUNNING.
inline int64_t runningInstances(const Server& server, const std::string& plan) {
  const Json view = server.get("/v1/plans/" + plan);
  return view["instance_summary"].value("running", 0);
}

// Polls the deployment until it is COMPLETED (the rolling strategy completes only when
// every new instance is RUNNING and healthy); false after `limit_s`. Every `every_s` seconds
// or so `progress` gets (seconds, running instances, deployment state); counting them reads
// the plan view, which is not free at 10,000 instances.
template <class Progress>
bool waitRolledOut(const Server& server, const Fleet& fleet, const std::string& deployment, double limit_s,
                   Steady::time_point started, Progress&& progress, double every_s = 1) {
  double last_note = 0;
  while (secondsSince(started) < limit_s) {
    const Json d = server.get("/v1/plans/" + fleet.plan + "/deployments/" + deployment);
    const std::string state = d.value("state", "");
    if (state == "COMPLETED") return true;
    if (state == "FAILED") fail("deployment FAILED: " + d.value("message", ""));
    const double now = secondsSince(started);
    if (now - last_note >= every_s) {
      progress(now, runningInstances(server, fleet.plan), state);
      last_note = now;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace tide::bench
