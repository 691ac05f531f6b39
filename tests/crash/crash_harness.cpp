// The crash harness (docs/architecture.md#crash-recovery, docs/reliability.md): a fleet of about
// 30 process-driver instances under rolling, canary and blue-green rollouts, with random scale,
// relocate, stop, restart and delete operations, whose host is killed with SIGKILL at a random
// failpoint (TIDE_FAILPOINTS=<place>=kill@N) or after a random time, then restarted. After every
// cycle it checks that:
//   - every deployment reaches a terminal state and every operation ends, within the settle
//     deadline (the host's operation deadline and a margin for its restart);
//   - the running workload processes are exactly the ledger's active RUNNING runtime instances,
//     and no runtime instance is left between states (a reservation nothing will release);
//   - `tide doctor` finds nothing: the ledger's invariants, reservations and event chain hold and
//     each driver runs what the ledger says (no duplicates, no leaks).
//
//   tide_crash [--cycles N] [--seed S] [--keep]
// CI runs 10 cycles (.ci/run); the long mode is --cycles 200. Exits 1 at the first cycle that
// breaks a check, keeping its data dir and naming it; 0 when every cycle held.

#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/clock.h"
#include "host/ledger/ledger.h"
#include "tests/support/free_port.h"
#include "tests/support/serve_child.h"
#include "tests/support/workloads.h"

namespace tide::crash {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr int kOperationDeadlineSeconds = 60;
// Long enough for the restart, the recovery of every operation the kill interrupted (each
// within its deadline) and the rollouts those operations belong to.
constexpr auto kSettleDeadline = std::chrono::seconds(4 * kOperationDeadlineSeconds);
// How long a cycle waits for an armed failpoint to fire before it kills the host itself.
constexpr auto kFailpointWindow = std::chrono::seconds(8);

// The places a cycle may kill the host at (host/core/failpoint.h names them all).
const char* const kKillPlaces[] = {
    "ledger.commit.before",        "ledger.commit.after",
    "driver.ensure.before",        "driver.ensure.after",
    "driver.stop.before",          "driver.stop.after",
    "driver.remove.before",        "driver.remove.after",
    "driver.ensure_volume.before", "driver.ensure_volume.after",
    "driver.remove_volume.before", "driver.remove_volume.after",
    "driver.status.after",         "process.spawned",
};

struct PlanShape {
  const char* name;
  const char* strategy;  // the plan's strategy block
};
const PlanShape kPlans[] = {
    {"roll", "{script: rolling, params: {max_surge: 2, max_unavailable: 2}}"},
    {"canary", "{script: canary, params: {steps: [50], pause_seconds: 1, min_ready_seconds: 0.5}}"},
    {"bg",
     "{script: blue_green, params: {auto_promotion: immediate, min_ready_seconds: 0.5, "
     "scale_down_delay_seconds: 0, post_promotion_analysis_seconds: 0}}"},
};
constexpr int kPerPlanMin = 8;
constexpr int kPerPlanMax = 12;

bool isTerminalDeployment(const std::string& state) {
  return state == "COMPLETED" || state == "FAILED" || state == "CANCELLED" || state == "ROLLED_BACK";
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string format(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", seconds);
  return text;
}

// `tide serve` in its own process, killed and restarted by the cycles.
class Host {
 public:
  Host(fs::path dir, int port) : dir_(std::move(dir)), port_(port) {}
  ~Host() { kill(SIGKILL); }

  // Starts the host with `failpoints` armed (empty: none); false when it did not answer.
  bool start(const std::string& failpoints) {
    const std::string log = (dir_ / "serve.log").string();
    const std::string config = (dir_ / "tide.yaml").string();
    pid_ = testing::spawnServe(TIDE_BINARY, config, log, failpoints);
    // One connection, kept alive, for all of this run's requests: a new connection per poll
    // would hold the host's connection slots for their keep-alive time.
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_connection_timeout(std::chrono::milliseconds(500));
    client_->set_read_timeout(std::chrono::seconds(10));
    client_->set_keep_alive(true);
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < deadline && alive()) {
      auto reply = client_->Get("/healthz");
      if (reply && reply->status == 200) {
        std::string token;
        std::ifstream(dir_ / "data" / "admin.token") >> token;
        client_->set_bearer_token_auth(token);
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // Whether the host still runs; reaps it when it died (a failpoint fired).
  bool alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == 0) return true;
    pid_ = -1;
    return false;
  }

  void kill(int signal) { testing::killAndReap(pid_, signal); }

  // The reply's JSON, or null when the host did not answer 2xx.
  Json get(const std::string& path) {
    auto reply = client_->Get(path);
    if (!reply || reply->status >= 300) return nullptr;
    return Json::parse(reply->body, nullptr, false);
  }
  // The reply's status and body; status 0 and the transport's error when there was none.
  std::pair<int, std::string> post(const std::string& path, const std::string& body, const char* type) {
    auto reply = client_->Post(path, body, type);
    if (!reply) return {0, httplib::to_string(reply.error())};
    return {reply->status, reply->body};
  }

 private:
  fs::path dir_;
  int port_;
  pid_t pid_ = -1;
  std::unique_ptr<httplib::Client> client_;
};

std::string fleetManifest() {
  std::string yaml = R"(
capabilities:
  - {name: intel-xeon, type: CPU, score: 10}
clusters:
  - {name: local, driver: process}
nodes:
)";
  for (int n = 1; n <= 4; ++n) {
    yaml += "  - {name: worker-" + std::to_string(n) + ", cluster: local, update_domain: ud-" + std::to_string(n % 2) +
            ", total: {cores: 32, memory_gib: 64}, capabilities: [intel-xeon], "
            "local_volumes: [{mount_path: /mnt/ssd, storage_class: SSD, capacity_gib: 200}]}\n";
  }
  yaml += "plans:\n";
  for (const PlanShape& plan : kPlans) {
    yaml += std::string("  - name: ") + plan.name + "\n    namespace: " + plan.name + "-dev\n    service_name: " +
            plan.name + R"(
    matching_capabilities: [{type: CPU, comparator: EQ, names: [intel-xeon]}]
    placement: {max_per_node: 100}
    applications:
      - payload_name: web
        resources: {cores: 0.5, memory_gib: 0.5}
        ports: [{protocol: TCP, port: 80}]
        persistent_volumes: [{storage_class: SSD, capacity_gib: 1, mount_path: /data}]
        health_check: {type: http, port: 80, path: /healthz, interval_seconds: 0.5, timeout_seconds: 2}
    strategy: )" + plan.strategy + "\n";
  }
  return yaml;
}

std::string deploymentManifest(const std::string& plan, const std::string& id, int count, const std::string& tag) {
  return "deployments:\n  - plan: " + plan + "\n    deployment_id: " + id + "\n    instance_count: " +
         std::to_string(count) + "\n    payload_coordinates: [{payload_name: web, coordinates: {image: \"nginx:" +
         tag + "\"}}]\n";
}

struct Options {
  int cycles = 10;
  uint64_t seed = 0;
  bool keep = false;
};

struct Totals {
  int failpoint_kills = 0;  // the armed failpoint fired
  int timed_kills = 0;      // killed after a random time (or an armed failpoint that never fired)
  int operations = 0;       // user operations asked for
  int deployments = 0;
  double longest_settle = 0;
  int most_processes = 0;
};

class Harness {
 public:
  Harness(const Options& options, fs::path dir)
      : options_(options),
        dir_(std::move(dir)),
        random_(options.seed),
        port_(testing::unusedLoopbackPort()),
        host_(dir_, port_) {}

  // 0 when every cycle held, 1 at the first that did not (its reason on stderr).
  int run() {
    writeConfig();
    if (!host_.start("")) return fail("the host did not start; see " + (dir_ / "serve.log").string());
    if (!apply(fleetManifest())) return fail("the fleet manifest was refused");
    for (const PlanShape& plan : kPlans) deploy(plan.name, 0);
    if (std::string why = settle(); !why.empty()) return fail("the first rollouts did not settle: " + why);
    host_.kill(SIGTERM);
    const auto started = Clock::now();
    for (int cycle = 1; cycle <= options_.cycles; ++cycle) {
      if (std::string why = runCycle(cycle); !why.empty()) {
        return fail("cycle " + std::to_string(cycle) + " (seed " + std::to_string(options_.seed) + "): " + why);
      }
    }
    std::cout << "crash harness: " << options_.cycles << " cycles held in " << format(secondsSince(started))
              << " (seed " << options_.seed << "): " << totals_.failpoint_kills << " kills at a failpoint, "
              << totals_.timed_kills << " at a random time; " << totals_.deployments << " deployments, "
              << totals_.operations << " user operations; longest settle " << format(totals_.longest_settle)
              << ", at most " << totals_.most_processes << " workloads; 0 violations" << std::endl;
    return 0;
  }

 private:
  void writeConfig() {
    fs::create_directories(dir_ / "policies");
    fs::copy_file(fs::path(TIDE_SOURCE_DIR) / "policies" / "auto_approve_dev.lua",
                  dir_ / "policies" / "auto_approve_dev.lua", fs::copy_options::overwrite_existing);
    // Workloads take host ports above the kernel's ephemeral range (where the host's own
    // port comes from) and the blocks the unit tests use (tests/support/ports.h).
    const int ports = 61000 + static_cast<int>(::getpid() % 8) * 500;
    std::ofstream(dir_ / "tide.yaml") << "listen: 127.0.0.1:" << port_ << "\n"
                                      << "data_dir: " << (dir_ / "data").string() << "\n"
                                      << "policies_dir: " << (dir_ / "policies").string() << "\n"
                                      << "scripts_dir: " << TIDE_SOURCE_DIR << "/scripts\n"
                                      << "process: {port_range_start: " << ports
                                      << ", port_range_end: " << ports + 499 << "}\n"
                                      << "limits: {reconcile_interval_ms: 100, lua_deadline_ms: 2000, "
                                      << "operation_deadline_s: " << kOperationDeadlineSeconds << "}\n";
  }

  // POST /v1/manifests, tried again when the request did not reach the host (a loaded machine
  // drops a connection now and then); false, said on stderr, when the host refused it.
  bool apply(const std::string& yaml) {
    std::pair<int, std::string> reply;
    for (int attempt = 0; attempt < 3 && reply.first == 0; ++attempt) {
      reply = host_.post("/v1/manifests", yaml, "application/yaml");
    }
    if (reply.first / 100 == 2) return true;
    std::cerr << "crash harness: a manifest was refused (" << reply.first << "): " << reply.second << std::endl;
    return false;
  }

  int randomInt(int low, int high) { return std::uniform_int_distribution<int>(low, high)(random_); }

  // A new deployment of `plan`: a new version and a new instance count, superseding the last.
  void deploy(const std::string& plan, int cycle) {
    const std::string id = "c" + std::to_string(cycle);
    if (apply(deploymentManifest(plan, id, randomInt(kPerPlanMin, kPerPlanMax), std::to_string(cycle + 1)))) {
      latest_[plan] = id;
      ++totals_.deployments;
    }
  }

  // Asks for a user operation on a random instance (refusals, e.g. 409 for one already busy,
  // are part of the game).
  void operate() {
    Json instances = host_.get("/v1/instances?limit=1000");
    if (!instances.is_object() || instances["items"].empty()) return;
    const Json& items = instances["items"];
    const Json instance =
        items[static_cast<size_t>(randomInt(0, static_cast<int>(items.size()) - 1))].value("meta_instance", Json());
    if (!instance.is_object()) return;
    const std::string state = instance.value("state", "");
    const char* type = nullptr;
    if (state == "STOPPED") {
      type = randomInt(0, 2) == 0 ? "DELETE" : "RESTART";
    } else if (state == "ACTIVE") {
      const char* kTypes[] = {"RELOCATE", "RELOCATE", "STOP", "RESTART", "DELETE"};
      type = kTypes[randomInt(0, 4)];
    }
    if (type == nullptr) return;
    const int status = host_.post("/v1/instances/" + instance.value("name", "") + "/operations",
                                  Json{{"type", type}, {"reason", "crash harness"}}.dump(), "application/json")
                           .first;
    totals_.operations += status == 201;
  }

  // One cycle: arm a kill, act, die, restart, settle, check. An empty string when it held.
  std::string runCycle(int cycle) {
    const bool at_failpoint = randomInt(0, 9) < 7;
    std::string armed;
    if (at_failpoint) {
      const std::string place = kKillPlaces[randomInt(0, std::size(kKillPlaces) - 1)];
      const bool frequent = place.starts_with("ledger.") || place == "driver.status.after";
      armed = place + "=kill@" + std::to_string(randomInt(1, frequent ? 60 : 8));
    }
    // The cycle's work is asked of an unarmed host, so the ledger holds it whatever happens
    // next; with a failpoint, that host is killed at once and an armed one takes the work
    // over, to die at the failpoint in the middle of it (or while it starts).
    if (!host_.start("")) return "the host did not start; see " + (dir_ / "serve.log").string();
    std::vector<int> plans = {0, 1, 2};
    std::shuffle(plans.begin(), plans.end(), random_);
    for (int i = randomInt(1, 2); i > 0; --i) deploy(kPlans[plans[i]].name, cycle);
    for (int i = randomInt(1, 4); i > 0; --i) operate();
    const auto cycle_started = Clock::now();
    bool fired = false;
    if (at_failpoint) {
      host_.kill(SIGKILL);
      (void)host_.start(armed);
      const auto window_end = Clock::now() + kFailpointWindow;
      while (Clock::now() < window_end && host_.alive()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      fired = !host_.alive();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(randomInt(100, 3000)));
    }
    host_.kill(SIGKILL);
    if (fired) {
      ++totals_.failpoint_kills;
    } else {
      ++totals_.timed_kills;
    }
    const double killed_after = secondsSince(cycle_started);

    if (!host_.start("")) return "the host did not restart; see " + (dir_ / "serve.log").string();
    const auto settle_started = Clock::now();
    if (std::string why = settle(); !why.empty()) return why;
    const double settled = secondsSince(settle_started);
    totals_.longest_settle = std::max(totals_.longest_settle, settled);
    host_.kill(SIGTERM);
    std::string checked = check();
    std::cout << "cycle " << cycle << "/" << options_.cycles << ": killed "
              << (fired ? "at " + armed : armed.empty() ? "at a random time" : "at a random time (" + armed + " unfired)")
              << " after " << format(killed_after) << "; settled in " << format(settled) << "; "
              << (checked.empty() ? "checks hold" : "VIOLATED") << std::endl;
    return checked;
  }

  // Waits until every latest deployment is terminal and no operation is unfinished; the
  // reason when that does not happen by kSettleDeadline.
  std::string settle() {
    const auto deadline = Clock::now() + kSettleDeadline;
    std::string waiting;
    while (Clock::now() < deadline) {
      waiting = unsettled();
      if (waiting.empty()) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return "not settled after " + format(std::chrono::duration<double>(kSettleDeadline).count()) + ": " + waiting;
  }

  // What is still moving; empty when nothing is.
  std::string unsettled() {
    for (const auto& [plan, id] : latest_) {
      Json d = host_.get("/v1/plans/" + plan + "/deployments/" + id);
      if (!d.is_object()) return "the host does not answer";
      if (!isTerminalDeployment(d.value("state", ""))) {
        return "deployment " + plan + "/" + id + " is " + d.value("state", "") + " (" + d.value("message", "") + ")";
      }
    }
    for (const char* state : {"PENDING", "PENDING_APPROVAL", "APPROVED", "RUNNING"}) {
      Json ops = host_.get(std::string("/v1/operations?state=") + state);
      if (!ops.is_object()) return "the host does not answer";
      if (!ops["items"].empty()) {
        const Json& op = ops["items"][0];
        return std::to_string(ops["items"].size()) + " operation(s) " + state + ", e.g. " + op.value("type", "") +
               " of " + op.value("meta_instance", "");
      }
    }
    return "";
  }

  // The checks of a settled fleet, with the host stopped. Empty when they hold.
  std::string check() {
    const std::string data_dir = (dir_ / "data").string();
    // tide doctor: the ledger's invariants, reservations, event chain and the driver's inventory.
    const std::string command = std::string(TIDE_BINARY) + " doctor --config " + (dir_ / "tide.yaml").string() +
                                " -o json 2>" + (dir_ / "doctor.err").string();
    std::string text;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return "could not run tide doctor";
    char buffer[4096];
    while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) text.append(buffer, n);
    const int doctor_status = ::pclose(pipe);
    Json report = Json::parse(text, nullptr, false);
    if (!report.is_object()) return "tide doctor printed no report (exit " + std::to_string(doctor_status) + ")";
    if (!report["findings"].empty()) return "tide doctor: " + report["findings"].dump();
    if (doctor_status != 0) return "tide doctor exited " + std::to_string(doctor_status) + " with no findings";

    // The ledger, read directly: what runs is what it says runs, and nothing is between states.
    SystemClock clock;
    auto opened = ledger::Ledger::open("sqlite://" + data_dir + "/tide.db", clock);
    if (!opened.isOk()) return "the ledger does not open: " + opened.status().toString();
    auto runtimes = ledger::listAll((*opened)->instances(), &ledger::InstanceRecords::listRuntimeInstances);
    if (!runtimes.isOk()) return "the ledger does not list: " + runtimes.status().toString();
    int active_running = 0;
    for (const auto& r : *runtimes) {
      if (!model::holdsResources(r.state)) continue;  // TERMINATED or FAILED
      if (r.state != model::RuntimeState::kRunning || !r.is_active) {
        return "runtime instance " + std::to_string(r.meta.id) + " of " + r.meta_instance + " is left " +
               model::toString(r.state) +
               (r.is_active ? "" : " (passive)");
      }
      ++active_running;
    }
    const int processes = static_cast<int>(testing::workloadsOf(data_dir).size());
    totals_.most_processes = std::max(totals_.most_processes, processes);
    if (processes != active_running) {
      return std::to_string(processes) + " workload processes run, the ledger has " + std::to_string(active_running) +
             " active RUNNING runtime instances";
    }
    return "";
  }

  int fail(const std::string& why) {
    host_.kill(SIGKILL);
    std::cerr << "crash harness: VIOLATION: " << why << "\n  data dir kept: " << dir_.string() << std::endl;
    return 1;
  }

  Options options_;
  fs::path dir_;
  std::mt19937_64 random_;
  int port_;
  Host host_;
  Totals totals_;
  std::map<std::string, std::string> latest_;  // plan → its newest deployment id
};

}  // namespace
}  // namespace tide::crash

int main(int argc, char** argv) {
  tide::crash::Options options;
  options.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--cycles" && i + 1 < argc) {
      options.cycles = std::stoi(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      options.seed = std::stoull(argv[++i]);
    } else if (arg == "--keep") {
      options.keep = true;
    } else {
      std::cerr << "usage: tide_crash [--cycles N] [--seed S] [--keep]\n";
      return 2;
    }
  }
  std::string pattern = (std::filesystem::temp_directory_path() / "tide-crash-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::cerr << "tide_crash: cannot make a temp dir\n";
    return 1;
  }
  const int code = tide::crash::Harness(options, pattern).run();
  tide::testing::killWorkloadsOf(pattern);
  if (code == 0 && !options.keep) {
    std::error_code ec;
    std::filesystem::remove_all(pattern, ec);
  }
  return code;
}
