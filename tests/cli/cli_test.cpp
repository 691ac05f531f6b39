// The `tide` CLI end to end: run() in-process against a real API server on an ephemeral
// port, with stdout and stderr captured; and the `tide` binary against `tide serve`, both
// as processes. The in-process server has no control loop, so what the CLI shows after a
// deployment is added is exactly what the API recorded.

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "host/api/server.h"
#include "host/cli/cli.h"
#include "host/cli/commands.h"
#include "host/core/clock.h"
#include "host/ledger/ledger.h"
#include "tests/cli/cli_test_support.h"
#include "tests/cli/serve_process.h"
#include "tests/support/env.h"
#include "tests/support/eventually.h"
#include "tests/support/self_signed.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using tide::testing::CliRun;
using tide::testing::contains;
using tide::testing::eventually;
using tide::testing::example;
using tide::testing::freePort;
using tide::testing::LineLimitedBuffer;
using tide::testing::LiveServer;
using tide::testing::runCli;
using tide::testing::ServeProcess;
using tide::testing::kSourceDir;
using tide::testing::ScopedEnv;
using tide::testing::TempDir;

std::string fixture(const std::string& name) { return kSourceDir + "/tests/cli/fixtures/" + name; }

}  // namespace

TEST_CASE("cli: node create, list and show against a live server") {
  LiveServer live;
  CliRun created = live.run({"node", "create", "-m", example("nodes.yaml")});
  REQUIRE_MESSAGE(created.code == 0, created.err);
  CHECK(contains(created.out, "Compute Capabilities\n"));
  CHECK(contains(created.out, "Clusters\n"));
  CHECK(contains(created.out, "Nodes\n"));
  CHECK(contains(created.out, "| kind-worker4 |"));

  CliRun list = live.run({"node", "list"});
  REQUIRE_MESSAGE(list.code == 0, list.err);
  CHECK(contains(list.out, "|  Node Name   |  Update Domain  | Total Cores | Total Memory |"));
  CHECK(contains(list.out, "| kind-worker  | update-domain-1 |     64      |     512      |"));
  CHECK(contains(list.out, "Total: 4\n"));

  CliRun show = live.run({"node", "show", "kind-worker2"});
  REQUIRE_MESSAGE(show.code == 0, show.err);
  CHECK(show.out.starts_with("Node Info\nName:                     kind-worker2\n"));
  CHECK(contains(show.out, "Capability Names:     nvidia-a100, intel-xeon\n"));
  CHECK(contains(show.out, "| /mnt/u002  |      HDD      |      2048      |"));

  CliRun missing = live.run({"node", "show", "no-such-node"});
  CHECK(missing.code == 1);
  CHECK(missing.err.starts_with("error: "));
  CHECK(contains(missing.err, "no-such-node"));

  CliRun cordoned = live.run({"node", "cordon", "kind-worker"});
  CHECK(cordoned.out == "Node kind-worker: CORDONED\n");
  CHECK(live.run({"node", "uncordon", "kind-worker"}).out == "Node kind-worker: ALLOCATED\n");
  CHECK(live.run({"node", "delete", "kind-worker4"}).out == "Node kind-worker4 deleted\n");
  CHECK(contains(live.run({"node", "list"}).out, "Total: 3\n"));

  CliRun capabilities = live.run({"capability", "list"});
  CHECK(contains(capabilities.out, "Total: 6\n"));
  CliRun clusters = live.run({"cluster", "list"});
  CHECK(contains(clusters.out, "|    local     | process |"));
}

TEST_CASE("cli: -o json prints the server's JSON for lists and shows") {
  LiveServer live;
  REQUIRE(live.run({"node", "create", "-m", example("nodes.yaml")}).code == 0);

  CliRun list = live.run({"node", "list", "-o", "json"});
  REQUIRE_MESSAGE(list.code == 0, list.err);
  Json nodes = Json::parse(list.out);
  REQUIRE(nodes["items"].size() == 4);
  CHECK(nodes["items"][0]["remaining"]["cores"] == 60);

  CliRun show = live.run({"node", "show", "kind-worker", "-o", "json"});
  CHECK(Json::parse(show.out)["update_domain"] == "update-domain-1");

  CliRun bad = live.run({"node", "list", "-o", "yaml"});
  CHECK(bad.code == 2);
  CHECK(contains(bad.err, "--output"));
}

TEST_CASE("cli: deployment create, add-deployment and show a pending rollout") {
  LiveServer live;
  REQUIRE(live.run({"node", "create", "-m", example("nodes.yaml")}).code == 0);

  CliRun created = live.run({"deployment", "create", "-m", example("nginx-plan.yaml")});
  REQUIRE_MESSAGE(created.code == 0, created.err);
  CHECK(created.out.starts_with("Deployment plan created successfully: nginx-deployment-plan\n"));
  CHECK(contains(created.out, "| Deployment Plan Name  |    Namespace    |"));
  CHECK(contains(created.out, "| nginx-deployment-plan | nginx-namespace | nginx-service |"));

  CliRun added = live.run({"deployment", "add-deployment", "-m", example("deployment-1.yaml")});
  REQUIRE_MESSAGE(added.code == 0, added.err);
  CHECK(added.out.starts_with("Deployment added successfully: deployment-1\n\nDeployment Plan Info\n"));
  CHECK(contains(added.out, "| deployment-1  |       1        | PENDING |"));
  CHECK(contains(added.out, "Coordinates: {\"image\":\"nginx:latest\"}"));

  CliRun show = live.run({"deployment", "show", "nginx-deployment-plan"});
  REQUIRE_MESSAGE(show.code == 0, show.err);
  CHECK(contains(show.out, "Name:                     nginx-deployment-plan\n"));
  CHECK(contains(show.out, "nvidia-v100,nvidia-p100"));
  CHECK(contains(show.out, "TCP:80"));
  CHECK(contains(show.out, "Storage Class: SSD, Capacity: 100 GB, Mount Path: /data"));
  CHECK(show.out.ends_with("Instance Summary\nNo instances found\n"));

  Json view = Json::parse(live.run({"deployment", "show", "nginx-deployment-plan", "-o", "json"}).out);
  CHECK(view["deployments"][0]["state"] == "PENDING");

  CliRun list = live.run({"deployment", "list"});
  CHECK(contains(list.out, "| nginx-deployment-plan | nginx-namespace | nginx-service | ACTIVE |"));
  CHECK(contains(list.out, "|       1        |       1       |"));

  CliRun cancelled = live.run({"deployment", "cancel-deployment", "nginx-deployment-plan", "-D", "deployment-1"});
  REQUIRE_MESSAGE(cancelled.code == 0, cancelled.err);
  CHECK(cancelled.out == "Deployment deployment-1 of plan nginx-deployment-plan: CANCELLED\n");

  CliRun instances = live.run({"instances", "list", "--plan", "nginx-deployment-plan"});
  CHECK(instances.code == 0);
  CHECK(contains(instances.out, "Total: 0\n"));
  CliRun operations = live.run({"operations", "list", "--state", "PENDING_APPROVAL"});
  CHECK(operations.code == 0);
  CHECK(contains(operations.out, "Total: 0\n"));
}

TEST_CASE("cli: deployment show prints a plan's placement, and -o json returns it") {
  LiveServer live;
  REQUIRE(live.run({"node", "create", "-m", example("nodes.yaml")}).code == 0);
  CliRun created = live.run({"deployment", "create", "-m", example("nginx-packed-plan.yaml")});
  REQUIRE_MESSAGE(created.code == 0, created.err);

  CliRun show = live.run({"deployment", "show", "nginx-packed"});
  REQUIRE_MESSAGE(show.code == 0, show.err);
  CHECK(contains(show.out, "Max Per Node:             3\nBin Pack:                 true\n"));
  Json view = Json::parse(live.run({"deployment", "show", "nginx-packed", "-o", "json"}).out);
  CHECK(view["plan"]["placement"] == Json{{"max_per_node", 3}, {"bin_pack", true}});

  REQUIRE(live.run({"deployment", "create", "-m", example("nginx-plan.yaml")}).code == 0);
  CHECK(contains(live.run({"deployment", "show", "nginx-deployment-plan"}).out,
                 "Max Per Node:             1\nBin Pack:                 false\n"));
}

TEST_CASE("cli: a broken manifest names file, line and field and leaves the ledger unchanged") {
  LiveServer live;
  REQUIRE(live.run({"node", "create", "-m", example("nodes.yaml")}).code == 0);
  std::string before = live.run({"node", "list", "-o", "json"}).out;

  CliRun broken = live.run({"node", "create", "-m", fixture("broken-nodes.yaml")});
  CHECK(broken.code == 1);
  CHECK(broken.out.empty());
  CHECK(contains(broken.err, fixture("broken-nodes.yaml") + ":13:29: nodes[1].totalResources.cores: "));
  CHECK_FALSE(contains(broken.err, "request body"));

  CHECK(live.run({"node", "list", "-o", "json"}).out == before);

  CliRun no_id = live.run({"deployment", "add-deployment", "-m", fixture("broken-deployment.yaml")});
  CHECK(no_id.code == 1);
  CHECK(contains(no_id.err, fixture("broken-deployment.yaml") + ":2:1: deployment_id: "));

  CliRun unreadable = live.run({"node", "create", "-m", fixture("no-such-file.yaml")});
  CHECK(unreadable.code == 1);
  CHECK(contains(unreadable.err, "no-such-file.yaml"));
}

TEST_CASE("cli: events list the ledger's history and -f follows it") {
  LiveServer live;
  REQUIRE(live.run({"node", "create", "-m", example("nodes.yaml")}).code == 0);

  CliRun events = live.run({"events"});
  REQUIRE_MESSAGE(events.code == 0, events.err);
  CHECK(contains(events.out, "| Seq |"));
  CHECK(contains(events.out, "node/kind-worker4"));

  Json all = Json::parse(live.run({"events", "-o", "json"}).out);
  int64_t total = static_cast<int64_t>(all["items"].size());
  REQUIRE(total > 2);
  Json later = Json::parse(live.run({"events", "--after", std::to_string(total - 2), "-o", "json"}).out);
  CHECK(later["items"].size() == 2);

  // Follow mode stops once its output is closed; each event is one JSON line.
  LineLimitedBuffer buffer(3);
  std::ostream limited(&buffer);
  CliRun followed = live.run({"events", "-f", "-o", "json"}, &limited);
  CHECK(followed.code == 0);
  std::istringstream lines(buffer.text());
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    CHECK(Json::parse(line)["seq"] == ++count);
  }
  CHECK(count == 3);
}

TEST_CASE("cli: the tide binary talks to tide serve, both as processes") {
  ServeProcess serve;
  CliRun created = serve.tide("node create -m " + example("nodes.yaml"));
  REQUIRE_MESSAGE(created.code == 0, created.err);
  CHECK(contains(created.out, "| kind-worker4 | update-domain-2 |"));

  CliRun list = serve.tide("node list -o json");
  REQUIRE_MESSAGE(list.code == 0, list.err);
  CHECK(Json::parse(list.out)["items"].size() == 4);

  CliRun broken = serve.tide("node create -m " + fixture("broken-nodes.yaml"));
  CHECK(broken.code == 1);
  CHECK(contains(broken.err, "broken-nodes.yaml:13:29: nodes[1].totalResources.cores"));
  CHECK(serve.tide("node list -o json").out == list.out);

  CHECK(serve.stop() == 0);
  CliRun gone = serve.tide("node list");
  CHECK(gone.code == 1);
  CHECK(contains(gone.err, "(is `tide serve` running?)"));
}

TEST_CASE("cli: everything survives a restart of tide serve") {
  ServeProcess serve;
  REQUIRE(serve.tide("node create -m " + example("nodes.yaml")).code == 0);
  REQUIRE(serve.tide("deployment create -m " + example("nginx-plan.yaml")).code == 0);
  REQUIRE(serve.tide("deployment add-deployment -m " + example("deployment-1.yaml")).code == 0);
  // The control loop places the instance and asks for approval; wait until it has.
  auto waiting = [&] {
    CliRun ops = serve.tide("operations list --state PENDING_APPROVAL -o json");
    return ops.code == 0 && Json::parse(ops.out)["items"].size() == 1;
  };
  REQUIRE(eventually(waiting));
  // /metrics carries the control loop's own series beside the ledger's counts.
  auto metrics = httplib::Client(serve.url()).Get("/metrics");
  REQUIRE(metrics);
  CHECK(contains(metrics->body, "tide_operations{type=\"CREATE\",state=\"PENDING_APPROVAL\"} 1\n"));
  CHECK(contains(metrics->body, "tide_reconcile_pass_duration_seconds_count "));
  CHECK(contains(metrics->body, "tide_driver_call_duration_seconds_count{call=\"list\"} "));
  // The loop may still be writing the strategy's state from its last pass: compare once it
  // has nothing more to do (the same view for half a second).
  CliRun show = serve.tide("deployment show nginx-deployment-plan -o json");
  auto unchanged_since = std::chrono::steady_clock::now();
  eventually(
      [&] {
        CliRun again = serve.tide("deployment show nginx-deployment-plan -o json");
        if (again.out != show.out) {
          show = again;
          unchanged_since = std::chrono::steady_clock::now();
        }
        return std::chrono::steady_clock::now() - unchanged_since >= std::chrono::milliseconds(500);
      },
      std::chrono::seconds(20));
  const CliRun nodes = serve.tide("node list -o json");
  const CliRun events = serve.tide("events -o json");
  REQUIRE(nodes.code == 0);
  REQUIRE(show.code == 0);

  CHECK(serve.stop() == 0);
  serve.start();

  CHECK(serve.tide("node list -o json").out == nodes.out);
  CHECK(serve.tide("deployment show nginx-deployment-plan -o json").out == show.out);
  // The history is kept as it was; the restarted host may only add to it.
  const Json before = Json::parse(events.out)["items"];
  const Json after = Json::parse(serve.tide("events -o json").out)["items"];
  REQUIRE(after.size() >= before.size());
  for (size_t i = 0; i < before.size(); ++i) CHECK(after[i] == before[i]);
  const CliRun shown = serve.tide("deployment show nginx-deployment-plan");
  CHECK(contains(shown.out, "| deployment-1  |       1        | IN_PROGRESS |"));
  CHECK(contains(shown.out, "PENDING_APPROVAL"));
}

TEST_CASE("cli: an unreachable server is reported with a hint") {
  std::string url = "http://127.0.0.1:" + std::to_string(freePort());
  CliRun run = runCli({"node", "list", "--server", url});
  CHECK(run.code == 1);
  CHECK(run.err == "error: cannot reach tide at " + url + " (is `tide serve` running?)\n");
}

TEST_CASE("cli: a request without a token gets the server's 401 message") {
  LiveServer live;
  ScopedEnv no_token("TIDE_TOKEN", nullptr);
  CliRun run = runCli({"node", "list", "--server", live.url});
  CHECK(run.code == 1);
  CHECK(contains(run.err, "error: missing 'Authorization: Bearer <token>' header\n"));

  CliRun wrong = runCli({"node", "list", "--server", live.url, "--token", "not-a-token"});
  CHECK(wrong.code == 1);
  CHECK(contains(wrong.err, "error: unknown token\n"));
}

TEST_CASE("cli: the token comes from the flag, then TIDE_TOKEN, then the local admin token file") {
  TempDir dir;
  std::ofstream(dir.path() / "admin.token") << "file-token\n";
  ScopedEnv data_dir("TIDE_DATA_DIR", dir.path().c_str());
  ScopedEnv no_server("TIDE_SERVER", nullptr);
  ScopedEnv no_token("TIDE_TOKEN", nullptr);

  auto resolve = [](std::string server = "", std::string token = "") {
    tide::cli::ClientFlags flags;
    flags.server = std::move(server);
    flags.token = std::move(token);
    return tide::cli::resolveEndpoint(flags);
  };
  CHECK(resolve().server == "http://127.0.0.1:7700");
  CHECK(resolve().token == "file-token");
  CHECK(resolve("", "flag-token").token == "flag-token");
  // The local admin token is never sent anywhere else.
  CHECK(resolve("http://tide.example:7700").token.empty());
  {
    ScopedEnv env_token("TIDE_TOKEN", "env-token");
    CHECK(resolve().token == "env-token");
  }
  {
    ScopedEnv env_server("TIDE_SERVER", "http://10.1.2.3:7700");
    CHECK(resolve().server == "http://10.1.2.3:7700");
    CHECK(resolve().token.empty());
  }
}

TEST_CASE("cli: an https:// server is trusted through --ca-file or TIDE_CA_FILE") {
  tide::testing::SelfSignedCertificate certificate;
  LiveServer live([&](tide::api::ServerOptions& options) { options.tls = {certificate.cert, certificate.key}; });
  const std::string url = "https://127.0.0.1:" + std::to_string(live.server->port());
  ScopedEnv no_ca("TIDE_CA_FILE", nullptr);

  CliRun untrusted = runCli({"node", "list", "--server", url, "--token", live.token});
  CHECK(untrusted.code == 1);
  CHECK(contains(untrusted.err, "is not trusted; pass the CA that signed it with --ca-file or TIDE_CA_FILE"));

  CliRun flagged = runCli({"node", "list", "--server", url, "--token", live.token, "--ca-file", certificate.cert});
  CHECK(flagged.code == 0);
  CHECK(contains(flagged.out, "Name"));
  ScopedEnv ca("TIDE_CA_FILE", certificate.cert.c_str());
  CHECK(runCli({"node", "list", "--server", url, "--token", live.token}).code == 0);
  CHECK(runCli({"node", "list", "--server", live.url, "--token", live.token}).code == 1);  // http:// to TLS
}

// `tide serve` on an ephemeral loopback port over dir/data with the config `yaml`, stdout and
// stderr going to dir/<log_name>, as its own process, not waited for (unlike ServeProcess):
// for tests of what it says at start. text() is what it said so far.
struct CapturedServe {
  pid_t pid = -1;
  fs::path log;

  CapturedServe(const TempDir& dir, const std::string& yaml, const std::string& log_name = "serve.log")
      : log(dir.path() / log_name) {
    std::ofstream(dir.path() / "tide.yaml") << yaml;
    const std::string data_dir = (dir.path() / "data").string();
    const std::string config = (dir.path() / "tide.yaml").string();
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      ::execl(TIDE_BINARY, "tide", "serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir.c_str(), "--config",
              config.c_str(), nullptr);
      ::_exit(127);
    }
  }

  std::string text() const {
    std::stringstream text;
    text << std::ifstream(log).rdbuf();
    return text.str();
  }
};

// Which exposures are warned of is api::exposureWarnings' test; this one checks that
// `tide serve` says them (on loopback: a test does not open an auth-less host to the network).
TEST_CASE("cli: tide serve warns loudly at start when auth is off") {
  TempDir dir;
  CapturedServe serve(dir, std::string("auth: {enabled: false}\npolicies_dir: ") + kSourceDir +
                              "/policies\nscripts_dir: " + kSourceDir + "/scripts\n");
  const bool listening =
      eventually([&] { return contains(serve.text(), "tide listening on"); }, std::chrono::seconds(60));
  ::kill(serve.pid, SIGTERM);
  int status = 0;
  ::waitpid(serve.pid, &status, 0);
  REQUIRE_MESSAGE(listening, serve.text());
  const std::string text = serve.text();
  CHECK(contains(text, "tide serve: WARNING: auth is off (auth.enabled: false)"));
  CHECK_FALSE(contains(text, "without TLS"));
}

TEST_CASE("cli: tide serve refuses to start with a process.run_as it cannot use, naming the key") {
  TempDir dir;
  CapturedServe serve(dir, "process: {run_as: no-such-user-tide}\n");
  int status = 0;
  const bool exited =
      eventually([&] { return ::waitpid(serve.pid, &status, WNOHANG) == serve.pid; }, std::chrono::seconds(60));
  if (!exited) {
    ::kill(serve.pid, SIGKILL);
    ::waitpid(serve.pid, &status, 0);
  }
  const std::string text = serve.text();
  REQUIRE_MESSAGE(exited, text);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(contains(text, "process.run_as"));
  CHECK_FALSE(contains(text, "tide listening on"));
}

TEST_CASE("cli: a second tide serve on the same data dir exits, naming the dir and the first one's pid") {
  TempDir dir;
  const std::string yaml =
      std::string("policies_dir: ") + kSourceDir + "/policies\nscripts_dir: " + kSourceDir + "/scripts\n";
  CapturedServe first(dir, yaml, "first.log");
  const bool listening =
      eventually([&] { return contains(first.text(), "tide listening on"); }, std::chrono::seconds(60));
  CapturedServe second(dir, yaml, "second.log");
  int status = 0;
  const bool exited =
      eventually([&] { return ::waitpid(second.pid, &status, WNOHANG) == second.pid; }, std::chrono::seconds(60));
  if (!exited) {
    ::kill(second.pid, SIGTERM);
    ::waitpid(second.pid, nullptr, 0);
  }
  ::kill(first.pid, SIGTERM);
  ::waitpid(first.pid, nullptr, 0);
  REQUIRE_MESSAGE(listening, first.text());
  const std::string text = second.text();
  REQUIRE_MESSAGE(exited, text);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(contains(text, "the data dir " + (dir.path() / "data").string() + " is in use by another tide serve (pid " +
                           std::to_string(first.pid) + ")"));
  CHECK_FALSE(contains(text, "tide listening on"));
}

TEST_CASE("cli: tide serve stops on SIGTERM while a health probe hangs") {
  ServeProcess serve;
  const std::string probing = (serve.dataDir() / "probing").string();
  // The dev plan (approved by a shipped policy) with an exec check that never answers, a
  // day's timeout: the executor waits in it for the new instance to turn healthy.
  const std::string plan = (serve.dataDir() / "hanging-plan.yaml").string();
  std::ofstream(plan) << "name: nginx-dev-plan\nnamespace: nginx-dev\nserviceName: nginx-dev\n"
                         "matchingComputeCapabilities:\n"
                         "  - {capabilityType: CPU, comparator: eq, capabilityNames: [intel-xeon]}\n"
                         "applications:\n"
                         "  - payloadName: nginx-payload\n"
                         "    resources: {cores: 1, memory: 1}\n"
                         "    ports: [{protocol: TCP, port: 80}]\n"
                         "    healthCheck: {type: exec, command: [/bin/sh, -c, \"touch "
                      << probing << "; exec sleep 86400\"], timeoutSeconds: 86400}\n";
  REQUIRE(serve.tide("node create -m " + example("nodes.yaml")).code == 0);
  CliRun created = serve.tide("deployment create -m " + plan);
  REQUIRE_MESSAGE(created.code == 0, created.err);
  CliRun added = serve.tide("deployment add-deployment -m " + example("dev-deployment.yaml"));
  REQUIRE_MESSAGE(added.code == 0, added.err);
  REQUIRE(eventually([&] { return fs::exists(probing); }, std::chrono::seconds(60)));

  const std::optional<int> code = serve.terminate();
  REQUIRE_MESSAGE(code.has_value(), "tide serve did not exit on SIGTERM");
  CHECK(*code == 0);
}
