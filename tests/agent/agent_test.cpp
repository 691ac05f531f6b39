#include "host/agent/agent.h"

#include <signal.h>

#include <doctest/doctest.h>
#include <httplib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "host/config/host_config.h"
#include "tests/agent/fake_host.h"
#include "tests/drivers/container_test_support.h"
#include "tests/support/eventually.h"
#include "tests/support/files.h"
#include "tests/support/ports.h"
#include "tests/support/workloads.h"

using namespace tide;
using namespace tide::testing;
using agent::Agent;
using agent::AgentOptions;
using agent::ApplyOutcome;
using model::Json;

namespace {

int fixtures = 0;

// An agent of node n1 over a temp data dir, its host played by a FakeHost. Kills every
// workload of the data dir when the test ends.
struct AgentFixture {
  const std::filesystem::path dir = freshDir("agent", std::to_string(++fixtures));
  FakeHost host;
  AgentOptions options;
  std::vector<std::string> log;
  std::mutex log_mu;
  std::unique_ptr<Agent> agent;

  AgentFixture() {
    const PortRange ports = nextPortRange(20);
    options.node = "n1";
    options.data_dir = (dir / "agent").string();
    options.port_range_start = ports.start;
    options.port_range_end = ports.end;
    options.image_catalog = config::defaultImageCatalog();
    options.tide_binary = TIDE_BINARY;
    options.stop_grace = std::chrono::milliseconds(2000);
    options.heartbeat = std::chrono::milliseconds(100);
    options.long_poll_wait = std::chrono::seconds(1);
    options.backoff_min = std::chrono::milliseconds(50);
    options.backoff_max = std::chrono::milliseconds(200);
    options.agent_version = "test-version";
    options.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(log_mu);
      log.push_back(line);
    };
    recreate();
  }
  ~AgentFixture() {
    agent.reset();
    killWorkloadsOf(options.data_dir);
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }

  void recreate() {
    agent.reset();
    auto created = Agent::create(options, host);
    REQUIRE_MESSAGE(created.isOk(), created.status().toString());
    agent = std::move(created).value();
  }

  ApplyOutcome apply(const Json& document) {
    auto outcome = agent->applyDocument(document);
    REQUIRE_MESSAGE(outcome.isOk(), outcome.status().toString());
    return *outcome;
  }

  std::string stateOf(const std::string& id) {
    auto status = agent->driver().status({id, "n1", ""});
    return status.isOk() ? model::toString(status->state) : std::string(codeName(status.status().code()));
  }
  std::string handleOf(const std::string& id) {
    auto status = agent->driver().status({id, "n1", ""});
    return status.isOk() ? status->handle : "";
  }
  size_t workloads() { return workloadsOf(options.data_dir).size(); }

  // The instance `id` in the last report, or null.
  Json reported(const std::string& id) {
    const std::vector<Json> reports = host.reports();
    if (reports.empty()) return nullptr;
    for (const Json& entry : reports.back()["instances"]) {
      if (entry["id"] == id) return entry;
    }
    return nullptr;
  }

  bool logged(const std::string& text) {
    std::lock_guard<std::mutex> lock(log_mu);
    for (const std::string& line : log) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }
};

Json workload(const std::string& id, const std::string& want = "running", const std::string& version = "v1") {
  return {{"id", id},
          {"meta_instance", "web-" + id},
          {"payload_name", "web"},
          {"want", want},
          {"coordinates", {{"image", "tide-workload:" + version}}},
          {"ports", {{{"protocol", "TCP"}, {"port", 80}}}},
          {"resources", {{"cores", 1}, {"memory_gib", 1}}}};
}

// A desired-state document. The lists are vectors, not Json: a braced list of one Json
// element initializes a Json parameter as that element under clang and as an array of it
// under gcc.
Json document(int64_t epoch, int64_t revision, const std::vector<Json>& instances,
              const std::vector<Json>& volumes = {}) {
  return {{"node", "n1"},
          {"epoch", epoch},
          {"revision", revision},
          {"instances", Json(instances)},
          {"volumes", Json(volumes)},
          {"logs", Json::array()}};
}

}  // namespace

TEST_CASE("agent: applies running, stopped and absent instances, and removes unlisted volumes") {
  AgentFixture f;
  Json volume = {{"id", "web-a-0"}, {"storage_class", "SSD"}, {"capacity_gib", 1}, {"mount_path", "/data"}};
  CHECK(f.apply(document(1, 1, {workload("1"), workload("2")}, {volume})) == ApplyOutcome::kApplied);
  CHECK(f.stateOf("1") == "RUNNING");
  CHECK(f.stateOf("2") == "RUNNING");
  CHECK(eventually([&] { return f.workloads() == 2; }));
  const auto volume_dir = std::filesystem::path(f.options.data_dir) / "volumes" / "n1" / "SSD" / "web-a-0";
  CHECK(std::filesystem::is_directory(volume_dir));

  CHECK(f.apply(document(1, 2, {workload("1", "stopped")})) == ApplyOutcome::kApplied);
  CHECK(f.stateOf("1") == "STOPPED");
  CHECK(f.stateOf("2") == "not_found");
  CHECK(eventually([&] { return f.workloads() == 0; }));
  CHECK_FALSE(std::filesystem::exists(volume_dir));
}

TEST_CASE("agent: an instance whose coordinates changed is started again with the new ones") {
  AgentFixture f;
  f.apply(document(1, 1, {workload("1", "running", "v1")}));
  const std::string first = f.handleOf("1");
  f.apply(document(1, 2, {workload("1", "running", "v1")}));
  CHECK(f.handleOf("1") == first);  // the same coordinates: nothing restarted

  f.apply(document(1, 3, {workload("1", "running", "v2")}));
  CHECK(f.stateOf("1") == "RUNNING");
  CHECK(f.handleOf("1") != first);
  CHECK(eventually([&] { return f.workloads() == 1; }));
}

TEST_CASE("agent: an instance that exited on its own is not started again by a later document") {
  // The host decides what follows an exit (a FAILED instance, then a RESTART as a new one);
  // an agent starting it again would run it twice (docs/agents.md, "Two agents on one machine").
  AgentFixture f;
  f.apply(document(1, 1, {workload("1")}));
  const std::string handle = f.handleOf("1");
  REQUIRE(handle.rfind("pid:", 0) == 0);
  const pid_t pid = std::stoi(handle.substr(4));
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  REQUIRE(eventually([&] { return f.stateOf("1") == "EXITED"; }));

  CHECK(f.apply(document(1, 2, {workload("1"), workload("2")})) == ApplyOutcome::kApplied);
  CHECK(f.stateOf("1") == "EXITED");
  CHECK(f.stateOf("2") == "RUNNING");
  f.recreate();
  CHECK(f.apply(document(2, 1, {workload("1"), workload("2")})) == ApplyOutcome::kApplied);
  CHECK(f.stateOf("1") == "EXITED");
  CHECK(eventually([&] { return f.workloads() == 1; }));

  // Stopped and then wanted running again, as a RESTART of a running instance asks: it runs.
  f.apply(document(2, 2, {workload("1", "stopped"), workload("2")}));
  CHECK(f.stateOf("1") == "STOPPED");
  f.apply(document(2, 3, {workload("1"), workload("2")}));
  CHECK(f.stateOf("1") == "RUNNING");
  CHECK(eventually([&] { return f.workloads() == 2; }));
}

TEST_CASE("agent: a document of an older epoch is refused and changes nothing") {
  AgentFixture f;
  f.apply(document(2, 1, {workload("1")}));
  const std::string handle = f.handleOf("1");
  CHECK(f.apply(document(1, 9, {})) == ApplyOutcome::kRefusedOlderEpoch);
  CHECK(f.logged("refused document of epoch 1: epoch 2 seen"));
  CHECK(f.handleOf("1") == handle);
  CHECK(f.agent->applied().epoch == 2);
  CHECK(f.agent->applied().revision == 1);
}

TEST_CASE("agent: a revision not newer than the applied one is ignored") {
  AgentFixture f;
  f.apply(document(1, 3, {workload("1")}));
  CHECK(f.apply(document(1, 2, {})) == ApplyOutcome::kAlreadyApplied);
  CHECK(f.apply(document(1, 3, {})) == ApplyOutcome::kAlreadyApplied);
  CHECK(f.stateOf("1") == "RUNNING");
  CHECK(f.agent->applied().revision == 3);
}

TEST_CASE("agent: a newer epoch is applied as it is, restarting nothing it already runs") {
  AgentFixture f;
  f.apply(document(1, 5, {workload("1")}));
  const std::string handle = f.handleOf("1");
  CHECK(f.apply(document(2, 1, {workload("1")})) == ApplyOutcome::kApplied);
  CHECK(f.handleOf("1") == handle);
  CHECK(f.agent->applied().epoch == 2);
  CHECK(f.agent->applied().revision == 1);
}

TEST_CASE("agent: a new agent over the same data dir keeps its fencing and re-adopts without duplicates") {
  AgentFixture f;
  f.apply(document(3, 4, {workload("1"), workload("2")}));
  const std::string handle = f.handleOf("1");
  REQUIRE(eventually([&] { return f.workloads() == 2; }));

  f.recreate();
  CHECK(f.agent->applied().epoch == 3);
  CHECK(f.agent->applied().revision == 4);
  CHECK(f.apply(document(2, 9, {})) == ApplyOutcome::kRefusedOlderEpoch);
  f.host.serve(document(3, 4, {workload("1"), workload("2")}));
  auto polled = f.agent->pollOnce(std::chrono::seconds(0));
  REQUIRE(polled.isOk());
  CHECK(*polled == ApplyOutcome::kAlreadyApplied);
  CHECK(f.apply(document(3, 5, {workload("1"), workload("2")})) == ApplyOutcome::kApplied);
  CHECK(f.handleOf("1") == handle);
  CHECK(f.workloads() == 2);
}

TEST_CASE("agent: a document the last agent did not finish applying is applied when a new one starts") {
  AgentFixture f;
  f.agent.reset();
  const Json unfinished = document(1, 1, {workload("1")});
  REQUIRE(agent::saveAppliedState((f.dir / "agent" / "agent.json").string(),
                                       {{1, 1}, /*complete=*/false, {}, {}, unfinished})
              .isOk());
  f.recreate();
  CHECK(f.stateOf("1") == "RUNNING");
  auto saved = agent::loadAppliedState((f.dir / "agent" / "agent.json").string());
  REQUIRE(saved.isOk());
  CHECK(saved->complete);
}

TEST_CASE("agent: one instance that cannot start is reported with why, and the others run") {
  AgentFixture f;
  Json unknown = workload("2");
  unknown["coordinates"] = {{"image", "nosuch:1"}};
  f.apply(document(1, 1, {workload("1"), unknown}));
  CHECK(f.stateOf("1") == "RUNNING");
  REQUIRE(f.agent->reportOnce().isOk());
  Json failed = f.reported("2");
  REQUIRE(failed.is_object());
  CHECK(failed["state"] == "EXITED");
  CHECK(failed["message"].get<std::string>().find("nosuch:1") != std::string::npos);
  CHECK(f.reported("1")["state"] == "RUNNING");
}

TEST_CASE("agent: reports carry the inventory, exit codes, versions and the machine's resources") {
  AgentFixture f;
  Json crashing = workload("2");
  crashing["coordinates"] = {{"command", {"/bin/sh", "-c", "exit 7"}}};
  crashing.erase("ports");
  f.apply(document(4, 2, {workload("1"), crashing}));
  REQUIRE(eventually([&] {
    REQUIRE(f.agent->reportOnce().isOk());
    return f.reported("2")["state"] == "EXITED";
  }));
  const Json report = f.host.reports().back();
  CHECK(f.reported("2")["exit_code"] == 7);
  CHECK(f.reported("1")["ports"].contains("tcp/80"));
  CHECK_FALSE(f.reported("1").contains("healthy"));  // no health check, no word on health
  CHECK(report["epoch"] == 4);
  CHECK(report["applied_revision"] == 2);
  CHECK(report["agent_version"] == "test-version");
  CHECK(report["resources"]["cores"].get<double>() >= 1);
  CHECK(report["resources"]["memory_gib"].get<double>() > 0);
}

TEST_CASE("agent: a report names as applied only a document applied to its end") {
  AgentFixture f;
  f.apply(document(1, 1, {workload("1")}));
  CHECK(f.agent->buildReport()["applied_revision"] == 1);
  // An apply cut short (here: the agent stopping half-way) has revision 2 accepted, not
  // applied: a report claiming it would tell the host that instance 2 is gone.
  f.agent->stop();
  CHECK(f.apply(document(1, 2, {workload("1"), workload("2")})) == ApplyOutcome::kApplied);
  const Json report = f.agent->buildReport();
  CHECK(report["applied_revision"] == 1);
  CHECK(report["epoch"] == 1);
}

TEST_CASE("agent: health is reported false until the agent's own http probes pass, then true") {
  AgentFixture f;
  Json checked = workload("1");
  checked["coordinates"] = {
      {"command", {"{{tide}}", "workload", "--listen", "127.0.0.1:{{port.tcp.80}}", "--healthy-after", "1"}}};
  checked["health_check"] = {{"type", "http"},           {"port", 80},          {"path", "/healthz"},
                             {"interval_seconds", 0.2},  {"timeout_seconds", 2}, {"healthy_threshold", 1},
                             {"unhealthy_threshold", 3}};
  f.host.serve(document(1, 1, {checked}));
  f.agent->start();
  CHECK(eventually([&] {
    Json entry = f.reported("1");
    return entry.is_object() && entry["state"] == "RUNNING" && entry.contains("healthy") && entry["healthy"] == false;
  }));
  CHECK(eventually([&] {
    Json entry = f.reported("1");
    return entry.is_object() && entry.value("healthy", false);
  }));
  f.agent->stop();
}

TEST_CASE("agent: with the sim runtime nothing runs as a process and health is the runtime's word") {
  AgentFixture f;
  f.options.runtime = "sim";
  f.recreate();
  Json checked = workload("1");
  checked["health_check"] = {{"type", "http"}, {"port", 80}, {"path", "/healthz"}, {"interval_seconds", 0.2}};
  f.host.serve(document(1, 1, {checked}));
  f.agent->start();
  CHECK(eventually([&] {
    Json entry = f.reported("1");
    return entry.is_object() && entry["state"] == "RUNNING" && entry.value("healthy", false);
  }));
  CHECK(f.workloads() == 0);
  f.agent->stop();
}

TEST_CASE("agent: with the container runtime the document's instances run as podman containers") {
  if (TIDE_PODMAN_MISSING()) return;
  TestImage image;
  AgentFixture f;
  f.options.runtime = "container";
  f.options.driver_config = {{"pull", "never"}, {"ulimit_nofile", 1024}, {"ulimit_nproc", 512}};
  f.recreate();
  ContainerSweep sweep(std::filesystem::absolute(f.dir / "agent" / "container").lexically_normal().string());
  Json instance = workload("1");
  instance["coordinates"] = {{"image", image.ref()}, {"command", {"/bin/httpd", "-f", "-p", "80", "-h", "/www"}}};
  f.apply(document(1, 1, {instance}));
  CHECK(f.stateOf("1") == "RUNNING");
  auto status = f.agent->driver().status({"1", "n1", ""});
  REQUIRE(status.isOk());
  REQUIRE(status->ports.contains("tcp/80"));
  httplib::Client client("127.0.0.1", status->ports["tcp/80"].get<int>());
  CHECK(eventually([&] {
    auto reply = client.Get("/index.html");
    return reply && reply->body == "hello from tide-test\n";
  }));
  CHECK(f.workloads() == 0);  // no process of the agent's own

  f.apply(document(1, 2, {}));
  CHECK(f.stateOf("1") == "not_found");
}

TEST_CASE("agent: a log request is answered once with the tail of the log") {
  AgentFixture f;
  Json talking = workload("1");
  talking["coordinates"] = {{"command", {"/bin/sh", "-c", "echo hello from 1; exec sleep 300"}}};
  talking.erase("ports");
  Json doc = document(1, 1, {talking});
  f.host.serve(doc);
  REQUIRE(f.agent->pollOnce(std::chrono::seconds(0)).isOk());
  REQUIRE(eventually([&] {
    auto log = drivers::readInstanceLog(f.agent->driver(), "1", 100);
    return log.isOk() && log->find("hello") != std::string::npos; }));
  doc["revision"] = 2;
  doc["logs"] = {"1"};
  f.host.serve(doc);
  REQUIRE(f.agent->pollOnce(std::chrono::seconds(0)).isOk());
  REQUIRE(f.agent->pollOnce(std::chrono::seconds(0)).isOk());  // the request still open: not posted again
  const auto logs = f.host.logs();
  REQUIRE(logs.size() == 1);
  CHECK(logs[0].first == "1");
  CHECK(logs[0].second.find("hello from 1") != std::string::npos);
}

TEST_CASE("agent: stop ends the loops in the middle of a long poll and leaves the workloads running") {
  AgentFixture f;
  f.options.long_poll_wait = std::chrono::seconds(3600);
  f.recreate();
  f.host.serve(document(1, 1, {workload("1")}));
  f.agent->start();
  const bool polling_again = eventually([&] { return f.stateOf("1") == "RUNNING" && f.host.polls() >= 2; });
  REQUIRE_MESSAGE(polling_again, f.stateOf("1") << " after " << f.host.polls() << " polls");
  f.agent->stop();
  CHECK(f.stateOf("1") == "RUNNING");
  CHECK(f.workloads() == 1);
}

TEST_CASE("agent: a host that cannot be reached is logged once, not once per try") {
  AgentFixture f;
  f.host.setReachable(false);
  f.agent->start();
  REQUIRE(eventually([&] { return f.host.polls() >= 3; }));
  f.agent->stop();
  std::lock_guard<std::mutex> lock(f.log_mu);
  CHECK(std::count_if(f.log.begin(), f.log.end(),
                      [](const std::string& line) { return line.find("cannot reach the host") != std::string::npos; }) == 1);
}
