// tide_soak (docs/architecture.md#the-soak): a control loop under concurrent antagonists and
// injected driver faults for a set duration, refereed all along; then a settle window in
// which everything must come to rest. Prints one JSON line (the summary) on stdout and exits
// 0 only with no violation, no stuck operation or deployment and no unexpected answer.
//
//   tide_soak [--duration 120s] [--seed N] [--no-process] [--keep] [--data-dir DIR]
//
// Durations are <n>s, <n>m or <n>h. Progress and violations go to stderr as they happen; the
// host's own stderr (access log, loop errors) to <data dir>/host.log. The data dir is a new
// temp dir unless given, removed after a passed soak unless --keep, kept after a failed one.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "drivers/fault/fault_driver.h"
#include "host/model/transitions.h"
#include "tests/soak/soak_checker.h"
#include "tests/soak/soak_host.h"

namespace tide::soak {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

struct SoakOptions {
  seconds duration{120};
  uint64_t seed = 1;
  bool with_process = true;
  bool keep = false;
  std::filesystem::path data_dir;
};

std::optional<seconds> parseDuration(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char unit = text.back();
  std::string digits = std::isdigit(static_cast<unsigned char>(unit)) ? text : text.substr(0, text.size() - 1);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const long n = std::stol(digits);
  switch (unit) {
    case 'h': return seconds(n * 3600);
    case 'm': return seconds(n * 60);
    case 's': return seconds(n);
    default: return std::isdigit(static_cast<unsigned char>(unit)) ? std::optional(seconds(n)) : std::nullopt;
  }
}

// The control loop's settings: fast enough that two minutes hold many rollouts, with
// deadlines the referee's allowances are derived from.
engine::EngineOptions soakEngineOptions() {
  engine::EngineOptions o;
  o.interval = milliseconds(200);
  o.min_interval = milliseconds(20);
  o.rate_per_second = 200;
  o.chunk = 32;
  o.executor.workers = 4;
  o.executor.operation_deadline = seconds(15);
  o.executor.max_attempts = 5;
  o.executor.backoff_base = milliseconds(100);
  o.executor.backoff_max = seconds(2);
  o.executor.poll_interval = milliseconds(50);
  o.observer.orphan_grace = seconds(3);
  o.lua_limits.deadline = milliseconds(1000);
  return o;
}

constexpr milliseconds kHang{1500};  // the fault driver's hangs, below every deadline

// Longer than anything the loop may legitimately take, and no more: an attempt's deadline,
// the longest backoff, one hang, an orphan's grace period, plus slack for a loaded 2-core
// machine.
CheckerLimits checkerLimits(const engine::EngineOptions& o) {
  const milliseconds slack = seconds(30);
  CheckerLimits limits;
  limits.stuck_after = o.executor.operation_deadline + o.executor.backoff_max + kHang + slack;
  limits.disagreement_allowance = o.observer.orphan_grace + o.executor.operation_deadline + kHang + slack;
  return limits;
}

// The fleet: a sim cluster and a smaller process cluster, each behind a fault driver; a plan
// in a dev namespace (approved by policy) and one in a prod namespace (a person decides) on
// the sim nodes, and a dev plan of real `tide workload` processes.
json fleetManifest(uint64_t seed, bool with_process) {
  const json volumes = json::array({{{"mount_path", "/mnt/ssd"}, {"storage_class", "SSD"}, {"capacity_gib", 100}}});
  json nodes = json::array();
  for (int i = 1; i <= 8; ++i) {
    nodes.push_back({{"name", "sim-" + std::to_string(i)}, {"cluster", "sim"},
                     {"update_domain", "ud-" + std::to_string(i % 2 + 1)},
                     {"total", {{"cores", 4}, {"memory_gib", 8}}}, {"capabilities", {"soak-sim"}},
                     {"local_volumes", volumes}});
  }
  json clusters = json::array();
  clusters.push_back(
      {{"name", "sim"},
       {"driver", "fault"},
       {"driver_config",
        {{"inner", "sim"},
         {"inner_config",
          {{"seed", seed}, {"start_latency_ms", 200}, {"stop_latency_ms", 100}, {"start_failure_rate", 0.02},
           {"crash_rate_per_hour", 6}}},
         {"seed", seed},
         {"error_rate", 0.05},
         {"lost_reply_rate", 0.03},
         {"hang_rate", 0.005},
         {"hang_ms", kHang.count()},
         {"latency_ms", {0, 30}}}}});
  auto plan = [&](const std::string& name, const std::string& ns, const std::string& capability) {
    json application = {{"payload_name", "web"},
                        {"resources", {{"cores", 1}, {"memory_gib", 1}}},
                        {"ports", {{{"protocol", "TCP"}, {"port", 80}}}},
                        {"persistent_volumes", {{{"storage_class", "SSD"}, {"capacity_gib", 1}, {"mount_path", "/data"}}}}};
    if (capability == "soak-proc") {
      application["health_check"] = {{"type", "http"}, {"port", 80}, {"path", "/healthz"},
                                     {"interval_seconds", 0.5}, {"timeout_seconds", 2}};
    }
    // Room on each node for a surge and a relocation beside what the plan runs.
    return json{{"name", name},
                {"placement", {{"max_per_node", capability == "soak-proc" ? 2 : 4}}},
                {"namespace", ns},
                {"service_name", name},
                {"matching_capabilities", {{{"type", "CPU"}, {"comparator", "EQ"}, {"names", {capability}}}}},
                {"applications", json::array({application})}};
  };
  json plans = json::array({plan("devweb", "dev-soak", "soak-sim"), plan("prodweb", "prod-soak", "soak-sim")});
  json capabilities = json::array({{{"name", "soak-sim"}, {"type", "CPU"}, {"score", 10}}});
  if (with_process) {
    capabilities.push_back({{"name", "soak-proc"}, {"type", "CPU"}, {"score", 10}});
    clusters.push_back({{"name", "proc"},
                        {"driver", "fault"},
                        {"driver_config",
                         {{"inner", "process"},
                          {"inner_config", {{"stop_grace_seconds", 2}}},
                          {"seed", seed + 1},
                          {"error_rate", 0.03},
                          {"lost_reply_rate", 0.02},
                          {"latency_ms", {0, 20}}}}});
    for (int i = 1; i <= 3; ++i) {
      nodes.push_back({{"name", "proc-" + std::to_string(i)}, {"cluster", "proc"}, {"update_domain", "ud-1"},
                       {"total", {{"cores", 2}, {"memory_gib", 4}}}, {"capabilities", {"soak-proc"}},
                       {"local_volumes", volumes}});
    }
    plans.push_back(plan("procweb", "dev-proc", "soak-proc"));
  }
  return {{"capabilities", capabilities}, {"clusters", clusters}, {"nodes", nodes}, {"plans", plans}};
}

// What the antagonists asked and how the host answered, by action and HTTP status; answers
// no correct host gives (5xx, no answer, 400/401/403) are kept as examples.
class Tally {
 public:
  void record(const std::string& action, int status, const std::string& body) {
    std::lock_guard<std::mutex> lock(mu_);
    ++answers_[action][std::to_string(status)];
    if (expected(status)) return;
    ++unexpected_;
    if (examples_.size() < 10) examples_.push_back(action + " -> " + std::to_string(status) + " " + body.substr(0, 300));
  }
  int64_t unexpected() const {
    std::lock_guard<std::mutex> lock(mu_);
    return unexpected_;
  }
  json toJson() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {{"answers", answers_}, {"unexpected", unexpected_}, {"unexpected_examples", examples_}};
  }

 private:
  // 404: the record went away between a list and the request; 409/422: refused for a
  // state that moved on, as documented.
  static bool expected(int status) {
    return (status >= 200 && status < 300) || status == 404 || status == 409 || status == 422;
  }
  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, int64_t>> answers_;
  std::vector<std::string> examples_;
  int64_t unexpected_ = 0;
};

// One actor's HTTP client under one token.
class Api {
 public:
  Api(const std::string& url, const std::string& token, Tally& tally) : client_(url), tally_(tally) {
    client_.set_default_headers({{"Authorization", "Bearer " + token}});
    client_.set_connection_timeout(seconds(10));
    client_.set_read_timeout(seconds(60));
  }
  // `action` names the request in the tally; the body of a 2xx answer, else null.
  json get(const std::string& action, const std::string& path) {
    return answer(action, client_.Get(path));
  }
  json post(const std::string& action, const std::string& path, const json& body = json::object()) {
    return answer(action, client_.Post(path, body.dump(), "application/json"));
  }

 private:
  json answer(const std::string& action, const httplib::Result& reply) {
    if (!reply) {
      tally_.record(action, 0, httplib::to_string(reply.error()));
      return nullptr;
    }
    tally_.record(action, reply->status, reply->body);
    if (reply->status >= 300) return nullptr;
    return json::parse(reply->body, nullptr, false);
  }
  httplib::Client client_;
  Tally& tally_;
};

// Sleeps about `mean` (uniform in [mean/2, 3mean/2]) unless the soak ends first.
class Pacer {
 public:
  Pacer(std::atomic<bool>& stop, uint64_t seed) : stop_(stop), random_(seed) {}
  bool pause(milliseconds mean) {
    std::uniform_int_distribution<int64_t> spread(mean.count() / 2, mean.count() * 3 / 2);
    const auto until = Clock::now() + milliseconds(spread(random_));
    while (!stop_ && Clock::now() < until) std::this_thread::sleep_for(milliseconds(20));
    return !stop_;
  }
  template <class T>
  const T& pick(const std::vector<T>& from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(random_)];
  }
  bool chance(double p) { return std::bernoulli_distribution(p)(random_); }
  int between(int low, int high) { return std::uniform_int_distribution<int>(low, high)(random_); }

 private:
  std::atomic<bool>& stop_;
  std::mt19937_64 random_;
};

// The soak's own lines. The host it runs writes its access log and errors to stderr, which
// the soak sends to <data dir>/host.log; these go to the terminal the soak started on.
class Console {
 public:
  // Sends stderr to `host_log` from now on; say() writes to the stderr of before.
  explicit Console(const std::filesystem::path& host_log) : terminal_(::dup(STDERR_FILENO)) {
    const int log = ::open(host_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log >= 0) {
      ::dup2(log, STDERR_FILENO);
      ::close(log);
    }
  }
  ~Console() {
    ::dup2(terminal_, STDERR_FILENO);
    ::close(terminal_);
  }
  void say(const std::string& text) {
    const std::string line = "tide_soak: " + text + "\n";
    std::lock_guard<std::mutex> lock(mu_);
    (void)!::write(terminal_, line.data(), line.size());  // nothing to do if the terminal is gone
  }

 private:
  const int terminal_;
  std::mutex mu_;
};

std::vector<json> items(const json& page) {
  if (!page.is_object() || !page.contains("items")) return {};
  return page["items"].get<std::vector<json>>();
}

const std::vector<std::string> kUnfinishedDeployment = {"PENDING", "IN_PROGRESS", "PAUSED"};

bool isUnfinished(const json& deployment) {
  const std::string state = deployment.value("state", "");
  return std::find(kUnfinishedDeployment.begin(), kUnfinishedDeployment.end(), state) != kUnfinishedDeployment.end();
}

// A deployment of `plan` with a random strategy and size: every new one scales the plan up
// or down and supersedes the one before.
json newDeployment(Pacer& pace, const std::string& plan, int number) {
  const bool processes = plan == "procweb";
  json strategy;
  switch (processes ? 0 : pace.between(0, 2)) {
    case 0:
      strategy = {{"script", "rolling"}, {"params", {{"max_surge", pace.between(0, 2)}, {"max_unavailable", 1}}}};
      break;
    case 1:
      strategy = {{"script", "canary"},
                  {"params",
                   {{"steps", {50, 100}}, {"pause_seconds", pace.chance(0.5) ? 0 : 2}, {"min_ready_seconds", 1},
                    {"health_timeout_seconds", 60}}}};
      break;
    default:
      strategy = {{"script", "blue_green"},
                  {"params",
                   {{"auto_promotion", pace.chance(0.5) ? "never" : "immediate"}, {"min_ready_seconds", 1},
                    {"scale_down_delay_seconds", 2}, {"post_promotion_analysis_seconds", 1}}}};
  }
  const std::string version = "v" + std::to_string(number);
  return {{"deployment_id", "d" + std::to_string(number)},
          {"instance_count", processes ? pace.between(1, 2) : pace.between(1, 5)},
          {"payload_coordinates", {{{"payload_name", "web"}, {"coordinates", {{"image", "nginx:" + version}}}}}},
          {"strategy", strategy}};
}

struct Antagonists {
  Antagonists(std::string url_of_host, std::vector<std::string> plans_to_work, Tally& answers)
      : url(std::move(url_of_host)), plans(std::move(plans_to_work)), tally(answers) {}

  std::string url;
  std::vector<std::string> plans;
  Tally& tally;
  std::atomic<bool> stop{false};
  std::atomic<bool> settling{false};  // approve everything, push every rollout to its end
  std::atomic<int> deployment_number{0};
  std::vector<std::thread> threads;

  // Adds deployments (rolling, canary, blue-green; sizes that scale up and down) and steers
  // them: promote, full promote, pause and resume, abort, rollback.
  void deployer(uint64_t seed) {
    Api api(url, kOperatorToken, tally);
    Pacer pace(stop, seed);
    while (pace.pause(milliseconds(1500))) {
      const std::string& plan = pace.pick(plans);
      const std::string base = "/v1/plans/" + plan + "/deployments";
      std::vector<json> unfinished;
      for (json& d : items(api.get("list deployments", base + "?limit=1000"))) {
        if (isUnfinished(d)) unfinished.push_back(std::move(d));
      }
      if (unfinished.empty() || pace.chance(0.15)) {
        api.post("add deployment", base, newDeployment(pace, plan, ++deployment_number));
        continue;
      }
      const std::string control = base + "/" + pace.pick(unfinished)["deployment_id"].get<std::string>();
      const int roll = pace.between(0, 99);
      if (roll < 55) api.post("promote", control + "/promote");
      else if (roll < 65) api.post("promote full", control + "/promote", {{"full", true}});
      else if (roll < 80) {
        api.post("pause", control + "/pause", {{"reason", "soak"}});
        pace.pause(milliseconds(1000));
        api.post("resume", control + "/resume");
      } else if (roll < 90) api.post("abort", control + "/abort", {{"reason", "soak"}});
      else api.post("rollback", control + "/rollback", {{"reason", "soak"}});
    }
  }

  // Asks for user operations on random instances: relocate, stop, restart, delete.
  void operatorOf(uint64_t seed) {
    Api api(url, kOperatorToken, tally);
    Pacer pace(stop, seed);
    while (pace.pause(milliseconds(700))) {
      const std::string plan = pace.pick(plans);
      std::vector<json> instances;
      for (const char* state : {"ACTIVE", "STOPPED"}) {
        const std::string query = "/v1/instances?limit=1000&plan=" + plan + "&state=" + state;
        for (json& i : items(api.get("list instances", query))) instances.push_back(std::move(i["meta_instance"]));
      }
      if (instances.empty()) continue;
      const json& instance = pace.pick(instances);
      std::string type;
      if (instance["state"] == "STOPPED") type = "RESTART";
      else type = pace.pick(std::vector<std::string>{"RELOCATE", "RELOCATE", "STOP", "RESTART", "RESTART", "DELETE"});
      api.post("operation " + type, "/v1/instances/" + instance["name"].get<std::string>() + "/operations",
               {{"type", type}, {"reason", "soak"}});
    }
  }

  // Decides what waits for a person: mostly approves, sometimes rejects (never once the
  // soak settles). Runs through the settle window.
  void approver(uint64_t seed, const std::atomic<bool>& done) {
    Api api(url, kApproverToken, tally);
    std::atomic<bool> never{false};
    Pacer pace(never, seed);
    while (!done) {
      pace.pause(milliseconds(400));
      for (const json& op : items(api.get("list pending approval", "/v1/operations?state=PENDING_APPROVAL&limit=1000"))) {
        const std::string path = "/v1/operations/" + std::to_string(op["metadata"]["id"].get<int64_t>());
        if (!settling && pace.chance(0.15)) api.post("reject", path + "/reject", {{"reason", "soak says no"}});
        else api.post("approve", path + "/approve", {{"reason", "soak says yes"}});
      }
    }
  }

  // Cordons and drains sim nodes and puts them back; at most two out at a time.
  void nodeOperator(uint64_t seed) {
    Api api(url, kOperatorToken, tally);
    Pacer pace(stop, seed);
    while (pace.pause(milliseconds(3000))) {
      std::vector<std::string> out, in;
      for (const json& node : items(api.get("list nodes", "/v1/nodes?cluster=sim&limit=1000"))) {
        (node["state"] == "ALLOCATED" ? in : out).push_back(node["name"].get<std::string>());
      }
      if (!out.empty() && (out.size() >= 2 || in.empty() || pace.chance(0.5))) {
        api.post("uncordon", "/v1/nodes/" + pace.pick(out) + "/uncordon");
      } else if (!in.empty()) {
        const bool drain = pace.chance(0.5);
        api.post(drain ? "drain" : "cordon", "/v1/nodes/" + pace.pick(in) + (drain ? "/drain" : "/cordon"));
      }
    }
  }

  // The settle window's steering: every node back in service, every instance a person
  // stopped started again (a rollout never starts what a person stopped, so one whose new
  // instance the operator stopped last waits for it), every rollout promoted to its end.
  void finishEverything() {
    Api api(url, kOperatorToken, tally);
    for (const json& node : items(api.get("list nodes", "/v1/nodes?limit=1000"))) {
      if (node["state"] != "ALLOCATED") api.post("uncordon", "/v1/nodes/" + node["name"].get<std::string>() + "/uncordon");
    }
    for (const std::string& plan : plans) {
      for (json& i : items(api.get("list instances", "/v1/instances?limit=1000&plan=" + plan + "&state=STOPPED"))) {
        if (i["unfinished_operation"].is_object()) continue;  // its RESTART is under way already
        api.post("operation RESTART", "/v1/instances/" + i["meta_instance"]["name"].get<std::string>() + "/operations",
                 {{"type", "RESTART"}, {"reason", "soak settles"}});
      }
    }
    for (const std::string& plan : plans) {
      const std::string base = "/v1/plans/" + plan + "/deployments";
      for (const json& d : items(api.get("list deployments", base + "?limit=1000"))) {
        if (!isUnfinished(d)) continue;
        const std::string control = base + "/" + d["deployment_id"].get<std::string>();
        if (d["state"] == "PAUSED") api.post("resume", control + "/resume");
        api.post("promote full", control + "/promote", {{"full", true}});
      }
    }
  }
};

json unfinishedDeployments(ledger::Ledger& ledger) {
  json out = json::array();
  auto all = ledger::listAll(ledger.plans(), &ledger::PlanRecords::listDeployments);
  if (!all.isOk()) return out;
  for (const auto& d : *all) {
    if (!model::isRolloutOver(d.state)) out.push_back(d.plan + "/" + d.deployment_id + " " + model::toString(d.state) + ": " + d.message);
  }
  return out;
}

json summary(SoakHost& host, const SoakChecker& checker, const Tally& tally, const SoakOptions& options,
             const json& stuck_deployments, double elapsed_s) {
  json operations = json::object();
  if (auto counts = host.ledger().operations().operationCounts(); counts.isOk()) {
    for (const auto& [key, n] : *counts) operations[key.first][key.second] = n;
  }
  json deployments = json::object();
  if (auto all = ledger::listAll(host.ledger().plans(), &ledger::PlanRecords::listDeployments); all.isOk()) {
    for (const auto& d : *all) {
      const std::string& state = model::toString(d.state);
      deployments[state] = deployments.value(state, 0) + 1;
    }
  }
  json faults = json::object();
  for (auto& [cluster, driver] : host.drivers().built()) {
    if (auto* fault = dynamic_cast<drivers::FaultDriver*>(driver)) {
      const drivers::FaultCounts c = fault->counts();
      faults[cluster] = {{"calls", c.calls}, {"errors", c.errors}, {"lost_replies", c.lost_replies}, {"hangs", c.hangs}};
    }
  }
  json violations = json::array();
  int64_t stuck = 0;
  for (const Finding& f : checker.violations()) {
    violations.push_back(f.what);
    if (f.key.rfind("stuck ", 0) == 0) ++stuck;
  }
  const bool ok = checker.violations().empty() && stuck_deployments.empty() && tally.unexpected() == 0;
  return {{"soak", ok ? "passed" : "failed"},
          {"seed", options.seed},
          {"duration_s", options.duration.count()},
          {"elapsed_s", elapsed_s},
          {"operations", operations},
          {"deployments", deployments},
          {"faults", faults},
          {"invariant_checks", checker.rounds()},
          {"violations", violations.size()},
          {"stuck_operations", stuck},
          {"stuck_deployments", stuck_deployments},
          {"violation_list", violations},
          {"requests", tally.toJson()}};
}

int run(const SoakOptions& options) {
  const auto started = Clock::now();
  std::filesystem::path dir = options.data_dir;
  if (dir.empty()) {
    std::string pattern = (std::filesystem::temp_directory_path() / "tide-soak-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::cerr << "tide_soak: cannot create a temp dir\n";
      return 2;
    }
    dir = pattern;
  }
  std::filesystem::create_directories(dir);
  Console console(dir / "host.log");
  const engine::EngineOptions engine_options = soakEngineOptions();
  auto started_host = SoakHost::start({dir, engine_options});
  if (!started_host.isOk()) {
    console.say(started_host.status().toString());
    return 2;
  }
  SoakHost& host = **started_host;
  Tally tally;
  {
    Api admin(host.url(), kOperatorToken, tally);
    if (admin.post("apply fleet", "/v1/manifests", fleetManifest(options.seed, options.with_process)).is_null()) {
      console.say("the fleet manifest was refused: " + tally.toJson().dump());
      return 2;
    }
  }

  const CheckerLimits limits = checkerLimits(engine_options);
  SoakChecker checker(host.ledger(), [&host] { return host.inventory(); }, limits);
  std::atomic<bool> refereeing{true};
  std::thread referee([&] {
    while (refereeing) {
      for (const Finding& f : checker.check(Clock::now())) console.say("VIOLATION: " + f.what);
      std::this_thread::sleep_for(milliseconds(250));
    }
  });

  Antagonists antagonists(host.url(), {"devweb", "prodweb"}, tally);
  if (options.with_process) antagonists.plans.push_back("procweb");
  std::atomic<bool> approver_done{false};
  uint64_t seed = options.seed * 1000;
  antagonists.threads.emplace_back([&, s = ++seed] { antagonists.deployer(s); });
  antagonists.threads.emplace_back([&, s = ++seed] { antagonists.deployer(s); });
  antagonists.threads.emplace_back([&, s = ++seed] { antagonists.operatorOf(s); });
  antagonists.threads.emplace_back([&, s = ++seed] { antagonists.operatorOf(s); });
  antagonists.threads.emplace_back([&, s = ++seed] { antagonists.nodeOperator(s); });
  std::thread approver([&, s = ++seed] { antagonists.approver(s, approver_done); });

  auto progress = [&](const char* phase) {
    console.say(std::string(phase) + " " +
                std::to_string(std::chrono::duration_cast<seconds>(Clock::now() - started).count()) + " s: " +
                std::to_string(checker.rounds()) + " checks, " + std::to_string(checker.violations().size()) +
                " violations, " + std::to_string(tally.unexpected()) + " unexpected answers");
  };
  const auto end_of_antagonists = started + options.duration;
  auto next_progress = started + seconds(15);
  while (Clock::now() < end_of_antagonists) {
    std::this_thread::sleep_for(milliseconds(200));
    if (Clock::now() >= next_progress) {
      progress("soak");
      next_progress += seconds(15);
    }
  }
  antagonists.stop = true;
  for (std::thread& t : antagonists.threads) t.join();

  // Settle: long enough for any disagreement or stuck operation left to outlast its
  // allowance, and until every rollout is over (bounded by three such windows).
  antagonists.settling = true;
  const milliseconds window = std::max(limits.stuck_after, limits.disagreement_allowance) + seconds(5);
  const auto settle_started = Clock::now();
  json stuck_deployments = json::array();
  while (true) {
    antagonists.finishEverything();
    std::this_thread::sleep_for(seconds(2));
    stuck_deployments = unfinishedDeployments(host.ledger());
    const auto settled_for = Clock::now() - settle_started;
    if ((settled_for >= window && stuck_deployments.empty()) || settled_for >= 3 * window) break;
    if (Clock::now() >= next_progress) {
      progress("settling");
      next_progress += seconds(15);
    }
  }
  refereeing = false;
  referee.join();
  approver_done = true;
  approver.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
  const json result = summary(host, checker, tally, options, stuck_deployments, elapsed);
  host.stop();
  host.removeEverything();
  std::cout << result.dump() << std::endl;
  const bool passed = result["soak"] == "passed";
  // A failed soak keeps its ledger and host log for whoever looks into it.
  if (passed && !options.keep && options.data_dir.empty()) std::filesystem::remove_all(dir);
  else console.say("data and host log kept in " + dir.string());
  return passed ? 0 : 1;
}

}  // namespace
}  // namespace tide::soak

int main(int argc, char** argv) {
  tide::soak::SoakOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--duration" && has_value) {
      auto parsed = tide::soak::parseDuration(argv[++i]);
      if (!parsed) {
        std::cerr << "tide_soak: --duration: expected <n>s, <n>m or <n>h, got '" << argv[i] << "'\n";
        return 2;
      }
      options.duration = *parsed;
    } else if (arg == "--seed" && has_value) {
      options.seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--data-dir" && has_value) {
      options.data_dir = argv[++i];
    } else if (arg == "--no-process") {
      options.with_process = false;
    } else if (arg == "--keep") {
      options.keep = true;
    } else {
      std::cerr << "usage: tide_soak [--duration 120s] [--seed N] [--no-process] [--keep] [--data-dir DIR]\n";
      return 2;
    }
  }
  return tide::soak::run(options);
}
