// Node agents end to end (docs/agents.md): `tide serve` and three `tide agent` processes on
// loopback, each agent with its own data dir and port range, serving the nodes n1..n3 of a
// cluster whose driver is `agent`. The MRDS walkthrough (1 -> 3 -> 1, relocate across agents
// without a gap, stop, restart), a canary that rolls itself back, an agent SIGKILLed
// mid-rollout, an agent SIGSTOPped past its TTL and grace, and an agent token that cannot
// read another node; the host answers its API all along.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include <doctest/doctest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/cli/serve_process.h"
#include "tests/support/eventually.h"
#include "tests/support/ports.h"
#include "tests/support/workloads.h"

using namespace tide::testing;

namespace {

using Json = nlohmann::json;
constexpr std::chrono::seconds kRollout{120};

// `tide agent` for one node as a child process, with its own data dir and port range.
class AgentProcess {
 public:
  AgentProcess(std::string server, std::string node, std::string token, const std::filesystem::path& dir)
      : server_(std::move(server)), node_(std::move(node)), token_(std::move(token)), dir_(dir / ("agent-" + node_)) {
    std::filesystem::create_directories(dir_);
    const PortRange ports = nextPortRange(20);
    port_range_ = std::to_string(ports.start) + "-" + std::to_string(ports.end);
    start();
  }
  ~AgentProcess() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
    end(SIGTERM);
    killWorkloadsOf(dir_.string());
  }

  void start() {
    const std::string log = (dir_ / "agent.log").string();
    const std::string data_dir = dir_.string();
    // From a file, as examples/tide-agent.service does: a token on the command line shows in `ps`.
    const std::string token_file = (dir_ / "token").string();
    std::ofstream(token_file) << token_ << "\n";
    std::filesystem::permissions(token_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      ::execl(TIDE_BINARY, "tide", "agent", "--server", server_.c_str(), "--node", node_.c_str(), "--token-file",
              token_file.c_str(), "--data-dir", data_dir.c_str(), "--port-range", port_range_.c_str(), nullptr);
      ::_exit(127);
    }
  }
  // Sends `signal`, which ends the agent, and reaps it.
  void end(int signal) {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  void signal(int signal) const { ::kill(pid_, signal); }

  // The workloads this agent's process driver runs now.
  size_t workloads() const { return workloadsOf(dir_.string()).size(); }
  std::vector<pid_t> workloadPids() const { return workloadsOf(dir_.string()); }
  std::string log() const {
    std::stringstream text;
    text << std::ifstream(dir_ / "agent.log").rdbuf();
    return text.str();
  }

 private:
  std::string server_, node_, token_;
  std::filesystem::path dir_;
  std::string port_range_;
  pid_t pid_ = -1;
};

const char* kAgentFleet = R"(
capabilities:
  - {name: intel-xeon, type: CPU, score: 10}
clusters:
  - {name: edge, driver: agent}
nodes:
  - {name: n1, cluster: edge, update_domain: ud-1, total: {cores: 4, memory_gib: 8}, capabilities: [intel-xeon]}
  - {name: n2, cluster: edge, update_domain: ud-2, total: {cores: 4, memory_gib: 8}, capabilities: [intel-xeon]}
  - {name: n3, cluster: edge, update_domain: ud-1, total: {cores: 4, memory_gib: 8}, capabilities: [intel-xeon]}
)";

// A dev plan (the shipped auto-approve-dev policy approves it) of `tide workload` with an http
// check, at most one instance per node, rolled out by `strategy` (a YAML flow map).
std::string agentPlan(const std::string& strategy) {
  return R"(
plans:
  - name: web
    namespace: web-dev
    service_name: web
    matching_capabilities: [{type: CPU, comparator: EQ, names: [intel-xeon]}]
    placement: {max_per_node: 1}
    strategy: )" +
         strategy + R"(
    applications:
      - payload_name: web
        resources: {cores: 1, memory_gib: 1}
        ports: [{protocol: TCP, port: 80}]
        health_check: {type: http, port: 80, path: /healthz, interval_seconds: 0.2, timeout_seconds: 1,
                       unhealthy_threshold: 1}
)";
}

// Deployment `id` of plan web: `count` workloads answering version `version`, healthy or not.
std::string deployment(const std::string& id, int count, const std::string& version, bool healthy = true) {
  const std::string command = R"(["{{tide}}", workload, --listen, "127.0.0.1:{{port.tcp.80}}", --version, ")" +
                              version + "\"" + (healthy ? "" : R"(, --fail-health-after, "0")") + "]";
  return "deployments:\n  - plan: web\n    deployment_id: " + id + "\n    instance_count: " + std::to_string(count) +
         "\n    payload_coordinates: [{payload_name: web, coordinates: {command: " + command + "}}]\n";
}

// `tide serve` with three agents serving n1..n3.
struct AgentFleet {
  ServeProcess serve;
  httplib::Client api;
  std::map<std::string, std::string> tokens;
  std::map<std::string, std::unique_ptr<AgentProcess>> agents;

  explicit AgentFleet(const std::string& extra_config = "")
      : serve("agents: {heartbeat_ttl_s: 2, replace_after_s: 3}\n" + extra_config), api(serve.url()) {
    api.set_bearer_token_auth(serve.token());
    api.set_read_timeout(std::chrono::seconds(30));
    apply(kAgentFleet);
    for (const std::string node : {"n1", "n2", "n3"}) {
      CliRun created = serve.tide("token create " + node + "-agent --role agent --node " + node + " -o json");
      REQUIRE_MESSAGE(created.code == 0, created.err);
      tokens[node] = Json::parse(created.out)["token"].get<std::string>();
      agents[node] = std::make_unique<AgentProcess>(serve.url(), node, tokens[node], serve.dataDir());
    }
    REQUIRE_MESSAGE(eventually([&] { return reachable() == 3; }, std::chrono::seconds(60)), serve.dataDir());
  }

  void apply(const std::string& yaml) {
    auto reply = api.Post("/v1/manifests", yaml, "application/yaml");
    REQUIRE(reply);
    REQUIRE_MESSAGE(reply->status == 201, reply->body);
  }
  Json get(const std::string& path) {
    auto reply = api.Get(path);
    if (!reply || reply->status != 200) return Json();
    return Json::parse(reply->body, nullptr, false);
  }

  // How many of n1..n3 the host hears from.
  int reachable() {
    const Json nodes = get("/v1/nodes");
    int n = 0;
    if (!nodes.is_object()) return -1;
    for (const auto& node : nodes["items"]) n += node.contains("agent") && node["agent"].value("reachable", false);
    return n;
  }
  std::string state(const std::string& deployment) {
    const Json d = get("/v1/plans/web/deployments/" + deployment);
    return d.is_object() ? d.value("state", "") : "";
  }
  bool reaches(const std::string& deployment, const std::string& state_named) {
    return eventually([&] { return state(deployment) == state_named; }, kRollout);
  }
  // Active RUNNING and healthy runtime instances of plan web, as {meta instance → node}.
  std::map<std::string, std::string> serving() {
    std::map<std::string, std::string> out;
    const Json instances = get("/v1/instances?plan=web");
    if (!instances.is_object()) return out;
    for (const auto& meta : instances["items"]) {
      for (const auto& r : meta.value("runtime_instances", Json::array())) {
        if (r.value("is_active", false) && r.value("state", "") == "RUNNING" &&
            r.value("health", Json::object()).value("healthy", false)) {
          out[meta["meta_instance"].value("name", "")] = r.value("node", "");
        }
      }
    }
    return out;
  }
  size_t workloads() {
    size_t n = 0;
    for (const auto& [node, agent] : agents) n += agent->workloads();
    return n;
  }
  // The process ids of every agent's workloads, sorted.
  std::vector<pid_t> workloadPids() {
    std::vector<pid_t> out;
    for (const auto& [node, agent] : agents) {
      for (pid_t pid : agent->workloadPids()) out.push_back(pid);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // Every agent's log holds `line`, before the rollout deadline.
  bool agentsLogged(const std::string& line) {
    return eventually([&] {
      return std::all_of(agents.begin(), agents.end(),
                         [&](const auto& a) { return a.second->log().find(line) != std::string::npos; });
    }, kRollout);
  }
  // The workloads equal the ledger's serving instances: no duplicate, no leak.
  bool settledAt(size_t count) {
    return eventually([&] { return serving().size() == count && workloads() == count; }, kRollout);
  }
  int64_t ask(const std::string& meta, const std::string& type) {
    auto reply = api.Post("/v1/instances/" + meta + "/operations", Json{{"type", type}}.dump(), "application/json");
    REQUIRE(reply);
    REQUIRE_MESSAGE(reply->status == 201, reply->body);
    return Json::parse(reply->body)["metadata"]["id"].get<int64_t>();
  }
  std::string operationState(int64_t id) {
    const Json op = get("/v1/operations/" + std::to_string(id));
    return op.is_object() ? op.value("state", "") : "";
  }
};

// Samples GET /v1/instances/{meta} on a thread of its own, counting the answers in which no
// runtime instance of `meta` is RUNNING.
class GapWatch {
 public:
  GapWatch(const ServeProcess& serve, std::string meta) : thread_([this, url = serve.url(), token = serve.token(), meta] {
      httplib::Client api(url);
      api.set_bearer_token_auth(token);
      while (!done_) {
        auto reply = api.Get("/v1/instances/" + meta);
        if (!reply || reply->status != 200) continue;
        ++samples;
        if (reply->body.find("\"RUNNING\"") == std::string::npos) ++gaps;
      }
    }) {}
  ~GapWatch() { finish(); }
  void finish() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }

  std::atomic<int> samples{0}, gaps{0};

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace

TEST_CASE("agents: three agents run the MRDS walkthrough: 1, 3, 1 instances, relocate without a gap, stop, restart") {
  AgentFleet fleet;
  fleet.apply(agentPlan("{script: rolling}"));
  fleet.apply(deployment("d1", 1, "1"));
  REQUIRE(fleet.reaches("d1", "COMPLETED"));
  CHECK(fleet.settledAt(1));
  fleet.apply(deployment("d2", 3, "2"));
  REQUIRE(fleet.reaches("d2", "COMPLETED"));
  CHECK(fleet.settledAt(3));
  CHECK(fleet.agents["n1"]->workloads() == 1);  // max_per_node 1: one on each agent
  fleet.apply(deployment("d3", 1, "2"));
  REQUIRE(fleet.reaches("d3", "COMPLETED"));
  CHECK(fleet.settledAt(1));

  // Relocate to another agent: something serves at every moment.
  const auto serving = fleet.serving();
  REQUIRE(serving.size() == 1);
  const auto [meta, from] = *serving.begin();
  {
    GapWatch watch(fleet.serve, meta);
    const int64_t relocate = fleet.ask(meta, "RELOCATE");
    CHECK(eventually([&] { return fleet.operationState(relocate) == "SUCCEEDED"; }, kRollout));
    watch.finish();
    CHECK(watch.samples > 0);
    CHECK(watch.gaps == 0);
  }
  CHECK(fleet.serving().at(meta) != from);
  CHECK(fleet.settledAt(1));
  CHECK(fleet.agents[from]->workloads() == 0);

  const int64_t stop = fleet.ask(meta, "STOP");
  CHECK(eventually([&] { return fleet.operationState(stop) == "SUCCEEDED"; }, kRollout));
  CHECK(eventually([&] { return fleet.workloads() == 0; }));
  const int64_t restart = fleet.ask(meta, "RESTART");
  CHECK(eventually([&] { return fleet.operationState(restart) == "SUCCEEDED"; }, kRollout));
  CHECK(fleet.settledAt(1));
  CHECK(fleet.get("/healthz").is_object());
}

TEST_CASE("agents: a canary on agents rolls a version that never turns healthy back on its own") {
  AgentFleet fleet;
  fleet.apply(agentPlan("{script: canary, params: {steps: [50, 100], min_ready_seconds: 0, health_timeout_seconds: 5}}"));
  fleet.apply(deployment("v1", 2, "1"));
  REQUIRE(fleet.reaches("v1", "COMPLETED"));
  fleet.apply(deployment("v2", 2, "2", /*healthy=*/false));
  REQUIRE(fleet.reaches("v2", "ROLLED_BACK"));
  REQUIRE(fleet.reaches("v1", "COMPLETED"));
  CHECK(fleet.settledAt(2));
}

TEST_CASE("agents: an agent SIGKILLed mid-rollout comes back without a duplicate and the rollout completes") {
  AgentFleet fleet;
  fleet.apply(agentPlan("{script: rolling}"));
  fleet.apply(deployment("d1", 3, "1"));
  REQUIRE(eventually([&] { return fleet.agents["n2"]->workloads() == 1; }, kRollout));
  fleet.agents["n2"]->end(SIGKILL);
  fleet.agents["n2"]->start();
  REQUIRE(fleet.reaches("d1", "COMPLETED"));
  CHECK(fleet.settledAt(3));
  CHECK(fleet.agents["n2"]->workloads() == 1);
}

TEST_CASE("agents: a workload that dies is restarted by the host as a new instance and runs once") {
  AgentFleet fleet;
  fleet.apply(agentPlan("{script: rolling}"));
  fleet.apply(deployment("d1", 2, "1"));
  REQUIRE(fleet.reaches("d1", "COMPLETED"));
  REQUIRE(fleet.settledAt(2));
  // Named copies, not a structured binding: clang (the ASan build) cannot capture one.
  const std::pair<std::string, std::string> served = *fleet.serving().begin();
  const std::string meta = served.first;
  const std::string node = served.second;
  const std::vector<pid_t> dying = fleet.agents[node]->workloadPids();
  REQUIRE(dying.size() == 1);
  ::kill(-dying[0], SIGKILL);
  ::kill(dying[0], SIGKILL);

  // The observer marks it FAILED and a RESTART places a new runtime instance on the same node;
  // the agent runs that one only, not the dead one its document still lists.
  CHECK(eventually([&] {
    const Json instance = fleet.get("/v1/instances/" + meta);
    return instance.is_object() && instance["runtime_instances"].size() == 2;
  }, kRollout));
  CHECK(fleet.settledAt(2));
  // Its node's document wants the new one only: the dead one left it once it was FAILED.
  const Json runtimes = fleet.get("/v1/instances/" + meta)["runtime_instances"];
  std::set<std::string> of_meta;
  for (const auto& r : runtimes) of_meta.insert(std::to_string(r["metadata"]["id"].get<int64_t>()));
  const std::string serving_id = std::to_string(runtimes.back()["metadata"]["id"].get<int64_t>());
  Json document;
  CHECK_MESSAGE(eventually([&] {
    document = fleet.get("/v1/agents/" + node + "/desired");
    std::vector<std::string> listed;
    for (const auto& entry : document.value("instances", Json::array())) {
      if (of_meta.count(entry["id"].get<std::string>())) listed.push_back(entry["id"].get<std::string>());
    }
    return listed == std::vector<std::string>{serving_id};
  }, kRollout), std::string(document.dump() + " runtimes " + runtimes.dump()));
  CHECK(fleet.agents[node]->workloads() == 1);
  // A later document of that node (a log request) starts nothing either.
  CliRun logs = fleet.serve.tide("logs " + meta);
  CHECK_MESSAGE(logs.code == 0, logs.err);
  CHECK(fleet.agents[node]->workloads() == 1);
  CHECK(fleet.settledAt(2));
}

TEST_CASE("agents: a stopped agent's instances are replaced on the others, and it stops them when it comes back") {
  AgentFleet fleet;
  fleet.apply(agentPlan("{script: rolling}"));
  fleet.apply(deployment("d1", 2, "1"));
  REQUIRE(fleet.reaches("d1", "COMPLETED"));
  REQUIRE(fleet.settledAt(2));
  std::string lost;
  for (const auto& [meta, node] : fleet.serving()) lost = node;
  REQUIRE(fleet.agents[lost]->workloads() == 1);

  // Past the TTL (2 s) and the grace (3 s): replaced on the node that had none.
  fleet.agents[lost]->signal(SIGSTOP);
  CHECK(eventually([&] { return fleet.reachable() == 2; }, kRollout));
  CHECK(eventually([&] {
    const auto now = fleet.serving();
    return now.size() == 2 && std::none_of(now.begin(), now.end(), [&](const auto& s) { return s.second == lost; });
  }, kRollout));
  CHECK(fleet.get("/healthz").is_object());

  // Back: it learns its workload was replaced and stops it.
  fleet.agents[lost]->signal(SIGCONT);
  CHECK(eventually([&] { return fleet.reachable() == 3; }, kRollout));
  CHECK(eventually([&] { return fleet.agents[lost]->workloads() == 0; }, kRollout));
  CHECK(fleet.settledAt(2));
}

TEST_CASE("agents: a host killed and started again finds every workload running, and the agents follow it") {
  AgentFleet fleet;
  fleet.apply(agentPlan("{script: rolling}"));
  fleet.apply(deployment("d1", 3, "1"));
  REQUIRE(fleet.reaches("d1", "COMPLETED"));
  REQUIRE(fleet.settledAt(3));
  const std::vector<pid_t> before = fleet.workloadPids();
  REQUIRE(before.size() == 3);
  // Each workload's waiter names its instance in `ps`, not the agent's command line.
  for (pid_t workload : before) {
    const std::string waiter = commandLineOf(parentOf(workload));
    CHECK_MESSAGE(waiter.rfind("tide-waiter runtime ", 0) == 0, waiter);
    CHECK_MESSAGE(waiter.find(" of web-") != std::string::npos, waiter);
    CHECK_MESSAGE(waiter.find("agent") == std::string::npos, waiter);
  }

  // The host goes away: each agent notices and keeps its workloads.
  fleet.serve.crash();
  CHECK(fleet.agentsLogged("the workloads keep running"));
  CHECK(fleet.workloadPids() == before);

  // Back, with a new epoch: the agents answer it, nothing was started twice or stopped.
  fleet.serve.start();
  CHECK(fleet.agentsLogged("the host answers again"));
  CHECK(eventually([&] { return fleet.reachable() == 3; }, kRollout));
  CHECK(fleet.settledAt(3));
  CHECK(fleet.workloadPids() == before);

  // The new host's documents are applied: the next deployment rolls out across the agents.
  fleet.apply(deployment("d2", 3, "2"));
  REQUIRE(fleet.reaches("d2", "COMPLETED"));
  CHECK(fleet.settledAt(3));
}

TEST_CASE("agents: an agent's token reads its own node's document only") {
  AgentFleet fleet;
  httplib::Client agent(fleet.serve.url());
  agent.set_bearer_token_auth(fleet.tokens["n1"]);
  auto own = agent.Get("/v1/agents/n1/desired?wait=0");
  REQUIRE(own);
  CHECK(own->status == 200);
  auto other = agent.Get("/v1/agents/n2/desired?wait=0");
  REQUIRE(other);
  CHECK(other->status == 403);
  CHECK(other->body.find("n1") != std::string::npos);
  auto plans = agent.Get("/v1/plans");
  REQUIRE(plans);
  CHECK(plans->status == 403);
}
