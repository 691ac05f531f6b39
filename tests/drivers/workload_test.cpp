#include <doctest/doctest.h>
#include <httplib.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "drivers/process/workload.h"
#include "drivers/process/workload_metrics.h"
#include "tests/drivers/driver_test_support.h"
#include "tests/support/workloads.h"

using namespace tide;
using namespace tide::drivers;
using namespace tide::testing;

namespace {

// Runs runWorkload in a forked child (until `tide workload` is a subcommand every test can
// exec) and kills it when the test ends.
class WorkloadProcess {
 public:
  explicit WorkloadProcess(WorkloadOptions options, const std::string& instance = "") : port_(freePort()) {
    options.listen = "127.0.0.1:" + std::to_string(port_);
    std::fflush(nullptr);  // or the child flushes a copy of the parent's buffered output
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      if (!instance.empty()) setenv("TIDE_INSTANCE", instance.c_str(), 1);
      _exit(runWorkload(options));
    }
  }
  ~WorkloadProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  WorkloadProcess(const WorkloadProcess&) = delete;
  WorkloadProcess& operator=(const WorkloadProcess&) = delete;

  httplib::Client client() const {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(2);
    client.set_read_timeout(5);
    return client;
  }

  // The body of GET `path` once it answers, "" if it never does.
  std::string await(const std::string& path, int* status = nullptr) {
    std::string body;
    eventually([&] {
      httplib::Client c = client();
      auto reply = c.Get(path.c_str());
      if (!reply) return false;
      body = reply->body;
      if (status != nullptr) *status = reply->status;
      return true;
    });
    return body;
  }

  // The exit status once the process ends, -1 if it does not within the bound.
  int awaitExit() {
    int status = 0;
    bool ended = eventually([&] { return waitpid(pid_, &status, WNOHANG) == pid_; });
    if (!ended) return -1;
    pid_ = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  pid_t pid() const { return pid_; }
  int port() const { return port_; }

 private:
  int port_;
  pid_t pid_ = 0;
};

// True once `tide workload` is a subcommand: a workload told to crash at once exits 3.
bool tideHasWorkloadCommand() {
  pid_t pid = 0;
  char arg0[] = "tide";
  char arg1[] = "workload";
  char arg2[] = "--listen";
  char arg3[] = "127.0.0.1:0";
  char arg4[] = "--crash-after";
  char arg5[] = "0";
  char* argv[] = {arg0, arg1, arg2, arg3, arg4, arg5, nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  int spawned = posix_spawn(&pid, TIDE_BINARY, &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return false;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 3;
}

}  // namespace

TEST_CASE("driver: workload serves /healthz, /version and / and exits 0 on SIGTERM") {
  WorkloadOptions options;
  options.version = "v2";
  options.message = "hello";
  WorkloadProcess workload(options, "web-1");
  int status = 0;
  CHECK(workload.await("/healthz", &status) == "ok");
  CHECK(status == 200);
  CHECK(workload.await("/version") == "v2");
  CHECK(workload.await("/") == "tide-workload version=v2 instance=web-1 message=hello\n");

  kill(workload.pid(), SIGTERM);
  CHECK(workload.awaitExit() == 0);
}

// Behind a router, or under a load generator, new connections come in bursts: httplib's own
// backlog of 5 dropped SYNs, each retried a second later (p99 through HAProxy was 900 ms).
TEST_CASE("workload: listens with a server's backlog, alone on its port") {
  WorkloadOptions options;
  WorkloadProcess workload(options);
  REQUIRE(workload.await("/healthz") == "ok");
  CHECK(listenBacklogOf(workload.port()) >= 128);  // the kernel caps the 1,024 asked at somaxconn
  CHECK_FALSE(portCanBeShared(workload.port()));
}

TEST_CASE("workload: answers health probes one after another on three threads") {
  WorkloadProcess workload({});
  REQUIRE(workload.await("/healthz") == "ok");
  for (int i = 0; i < 20; ++i) {
    httplib::Client c = workload.client();
    auto reply = c.Get("/healthz");
    REQUIRE(reply);
    CHECK(reply->status == 200);
  }
  // The main thread, the listener and one connection thread: httplib's own pool started 8
  // connection threads up front, 10 threads a workload (10,000 at the rollout bench's 1,000).
  // A connection that came while the last one's thread was still closing got a second
  // thread, which ends once idle (10 s).
  const auto threads = [&] { return procStatus(workload.pid(), "Threads"); };
  CHECK(threads() >= 2);
  CHECK(eventually([&] { return threads() <= 3; }));
}

TEST_CASE("driver: workload health follows --healthy-after and --fail-health-after") {
  WorkloadOptions starting;
  starting.healthy_after_seconds = 3600;
  WorkloadProcess slow(starting);
  int status = 0;
  CHECK(slow.await("/healthz", &status) == "starting");
  CHECK(status == 503);

  WorkloadOptions failing;
  failing.fail_health_after_seconds = 0;
  WorkloadProcess sick(failing);
  CHECK(sick.await("/healthz", &status) == "failing");
  CHECK(status == 500);
  CHECK(sick.await("/version") == "v1");
}

TEST_CASE("driver: workload exits 3 after --crash-after") {
  WorkloadOptions options;
  options.crash_after_seconds = 0.2;
  WorkloadProcess workload(options);
  CHECK(workload.awaitExit() == 3);
}

TEST_CASE("driver: workload command line refuses bad flags") {
  char arg0[] = "workload";
  char listen[] = "--listen";
  char bad_address[] = "no-port-here";
  char* missing_listen[] = {arg0, nullptr};
  CHECK(runWorkloadCli(1, missing_listen) != 0);
  char* malformed[] = {arg0, listen, bad_address, nullptr};
  CHECK(runWorkloadCli(3, malformed) == 1);
  char crash[] = "--crash-after";
  char negative[] = "-1";
  char address[] = "127.0.0.1:0";
  char* negative_crash[] = {arg0, listen, address, crash, negative, nullptr};
  CHECK(runWorkloadCli(5, negative_crash) != 0);
}

TEST_CASE("driver: process driver runs the built-in workload from the image catalog") {
  if (!tideHasWorkloadCommand()) {
    MESSAGE("`tide workload` is not wired into the CLI yet; skipping the end-to-end check");
    return;
  }
  ProcessDriverFixture f;
  f.options.image_catalog = {
      {"tide-workload:*",
       {"{{tide}}", "workload", "--listen", "127.0.0.1:{{port.tcp.80}}", "--version", "{{image.tag}}"}}};
  f.reopen();
  RuntimeSpec spec = f.command("1", "");
  spec.coordinates = {{"image", "tide-workload:v9"}};
  spec.ports = {{"TCP", 80}};
  auto started = f.driver->ensure(spec);
  REQUIRE_MESSAGE(started.isOk(), started.status().toString());
  httplib::Client client("127.0.0.1", started->ports.at("tcp/80").get<int>());
  client.set_connection_timeout(2);
  std::string version;
  CHECK(eventually([&] {
    auto reply = client.Get("/version");
    if (reply) version = reply->body;
    return reply && reply->status == 200;
  }));
  CHECK(version == "v9");
  auto root = client.Get("/");
  REQUIRE(root);
  CHECK(root->body.find("instance=web-1") != std::string::npos);

  REQUIRE(f.driver->stop({"1", "node-a", ""}).isOk());
  auto stopped = f.driver->status({"1", "node-a", ""});
  REQUIRE(stopped.isOk());
  CHECK(stopped->state == model::WorkloadState::kStopped);
  CHECK(stopped->exit_code == 0);
}

TEST_CASE("workload: --error-rate answers that share of / with 500, and /metrics counts them by code") {
  WorkloadOptions options;
  options.version = "v3";
  options.error_rate = 0.2;
  WorkloadProcess workload(options, "web-7");
  REQUIRE(!workload.await("/healthz").empty());
  httplib::Client client = workload.client();
  int failed = 0;
  for (int i = 0; i < 50; ++i) {
    auto reply = client.Get("/");
    REQUIRE(reply);
    if (reply->status == 500) ++failed;
  }
  CHECK(failed == 10);

  auto metrics = client.Get("/metrics");
  REQUIRE(metrics);
  const std::string& text = metrics->body;
  CHECK(text.find("tide_workload_requests_total{tide_instance=\"web-7\",version=\"v3\",code=\"200\"} 40\n") !=
        std::string::npos);
  CHECK(text.find("tide_workload_requests_total{tide_instance=\"web-7\",version=\"v3\",code=\"500\"} 10\n") !=
        std::string::npos);
  CHECK(text.find("tide_workload_request_duration_seconds_bucket{tide_instance=\"web-7\",version=\"v3\",le=\"+Inf\"} "
                  "50\n") != std::string::npos);
  CHECK(text.find("tide_workload_request_duration_seconds_count{tide_instance=\"web-7\",version=\"v3\"} 50\n") !=
        std::string::npos);
}

TEST_CASE("workload metrics: the histogram's buckets are cumulative and label values are escaped") {
  WorkloadMetrics metrics("web \"a\"", "v\\1", 0);
  metrics.record(200, 0.0001);
  metrics.record(200, 0.003);
  metrics.record(503, 7);
  const std::string text = metrics.render();
  const std::string labels = "tide_instance=\"web \\\"a\\\"\",version=\"v\\\\1\"";
  CHECK(text.find("tide_workload_requests_total{" + labels + ",code=\"503\"} 1\n") != std::string::npos);
  CHECK(text.find("tide_workload_request_duration_seconds_bucket{" + labels + ",le=\"0.0005\"} 1\n") !=
        std::string::npos);
  CHECK(text.find("tide_workload_request_duration_seconds_bucket{" + labels + ",le=\"0.005\"} 2\n") !=
        std::string::npos);
  CHECK(text.find("tide_workload_request_duration_seconds_bucket{" + labels + ",le=\"2.5\"} 2\n") !=
        std::string::npos);
  CHECK(text.find("tide_workload_request_duration_seconds_bucket{" + labels + ",le=\"+Inf\"} 3\n") !=
        std::string::npos);
  CHECK(!metrics.nextFails());
}
