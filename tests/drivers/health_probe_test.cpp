#include "drivers/health/health_probe.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <httplib.h>
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/drivers/driver_test_support.h"
#include "tests/support/text.h"

using namespace tide;
using namespace tide::drivers;
using namespace tide::testing;

namespace {

// A real `tide workload` on a free loopback port, SIGKILLed when the test ends.
class Workload {
 public:
  explicit Workload(const std::vector<std::string>& flags = {}) : port_(freePort()) {
    std::vector<std::string> args = {"tide", "workload", "--listen", "127.0.0.1:" + std::to_string(port_)};
    args.insert(args.end(), flags.begin(), flags.end());
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    int spawned = posix_spawn(&pid_, TIDE_BINARY, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE(spawned == 0);
    REQUIRE(eventually([&] {
      httplib::Client client("127.0.0.1", port_);
      client.set_connection_timeout(1);
      return static_cast<bool>(client.Get("/version"));
    }));
  }
  ~Workload() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  // The instance declares TCP 80; the workload serves it on its host port.
  ProbeTarget target() const {
    ProbeTarget target;
    target.ports = {{"tcp/80", port_}};
    return target;
  }

 private:
  int port_;
  pid_t pid_ = 0;
};

model::HealthCheck httpCheck(const std::string& path = "/healthz") {
  model::HealthCheck check;
  check.type = "http";
  check.port = 80;
  check.path = path;
  check.timeout_seconds = 2;
  return check;
}

model::HealthCheck tcpCheck() {
  model::HealthCheck check = httpCheck();
  check.type = "tcp";
  return check;
}

model::HealthCheck execCheck(std::vector<std::string> command, double timeout_seconds = 5) {
  model::HealthCheck check;
  check.type = "exec";
  check.command = std::move(command);
  check.timeout_seconds = timeout_seconds;
  return check;
}

ProbeTarget closedPortTarget() {
  ProbeTarget target;
  target.ports = {{"tcp/80", freePort()}};
  return target;
}

bool startsWith(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }
// A loopback listener that nobody serves: the kernel completes connections, and nothing
// replies on them.
class SilentServer {
 public:
  SilentServer() : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
    REQUIRE(listen(fd_, 4) == 0);
    socklen_t length = sizeof(address);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~SilentServer() { close(fd_); }
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;

  int fd() const { return fd_; }
  ProbeTarget target() const {
    ProbeTarget target;
    target.ports = {{"tcp/80", port_}};
    return target;
  }

 private:
  int fd_;
  int port_ = 0;
};

ProbeResult okResult() { return {true, "HTTP 200", 1}; }
ProbeResult failedResult() { return {false, "HTTP 500", 1}; }

}  // namespace

TEST_CASE("engine: health probe http is ok on a 2xx from a real workload") {
  Workload workload;
  ProbeResult result = probeOnce(httpCheck(), workload.target());
  CHECK(result.ok);
  CHECK(result.message == "HTTP 200: ok");
  CHECK(result.duration_us > 0);
}

TEST_CASE("engine: health probe http is not ok on a 5xx and quotes the status and body") {
  Workload failing({"--fail-health-after", "0"});
  ProbeResult result = probeOnce(httpCheck(), failing.target());
  CHECK_FALSE(result.ok);
  CHECK(result.message == "HTTP 500: failing");

  Workload starting({"--healthy-after", "3600"});
  result = probeOnce(httpCheck(), starting.target());
  CHECK_FALSE(result.ok);
  CHECK(result.message == "HTTP 503: starting");
}

TEST_CASE("engine: health probe http to a closed port is not ok and says it cannot connect") {
  ProbeTarget target = closedPortTarget();
  ProbeResult result = probeOnce(httpCheck(), target);
  CHECK_FALSE(result.ok);
  std::string url = "http://127.0.0.1:" + std::to_string(target.ports["tcp/80"].get<int>()) + "/healthz";
  CHECK_MESSAGE(result.message == "GET " + url + ": cannot connect (refused or unreachable)", result.message);
}

TEST_CASE("engine: health probe http to a server that never answers times out") {
  SilentServer silent;
  model::HealthCheck check = httpCheck();
  check.timeout_seconds = 0.2;
  ProbeResult result = probeOnce(check, silent.target());
  CHECK_FALSE(result.ok);
  CHECK_MESSAGE(contains(result.message, "no complete reply (timed out after 0.2s or closed)"), result.message);
}

TEST_CASE("engine: health probes with a day's timeout end at once when cancelled") {
  // An http server that never replies, and an exec check that never exits.
  SilentServer silent;
  model::HealthCheck http = httpCheck();
  http.timeout_seconds = 86400;

  TempDir dir;
  const std::string started = dir.file("started");
  ProbeCancel cancel;
  ProbeResult http_result, exec_result;
  std::atomic<int> done{0};
  std::thread http_probe([&] {
    http_result = probeOnce(http, silent.target(), &cancel);
    ++done;
  });
  std::thread exec_probe([&] {
    exec_result =
        probeOnce(execCheck({"/bin/sh", "-c", "touch " + started + "; exec sleep 86400"}, 86400), {}, &cancel);
    ++done;
  });
  const int connection = accept(silent.fd(), nullptr, nullptr);  // the http probe is waiting for the reply
  REQUIRE(eventually([&] { return std::filesystem::exists(started); }));
  cancel.cancel();
  const bool ended = eventually([&] { return done.load() == 2; });
  if (!ended) ::shutdown(connection, SHUT_RDWR);  // so that the test ends when cancel() does not end them
  http_probe.join();
  exec_probe.join();
  close(connection);
  CHECK(ended);
  CHECK_FALSE(http_result.ok);
  CHECK_MESSAGE(contains(http_result.message, "cancelled"), http_result.message);
  CHECK_FALSE(exec_result.ok);
  CHECK_MESSAGE(contains(exec_result.message, "cancelled; killed"), exec_result.message);

  // Cancelled, every probe ends at once; reset, they run again.
  CHECK(contains(probeOnce(execCheck({"/bin/true"}), {}, &cancel).message, "cancelled"));
  cancel.reset();
  CHECK(probeOnce(execCheck({"/bin/true"}), {}, &cancel).ok);
}

TEST_CASE("engine: health probes run concurrently from several threads without interfering") {
  Workload workload;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        ProbeResult result = t % 2 == 0 ? probeOnce(execCheck({"/bin/sh", "-c", "echo $0", std::to_string(i)}), {})
                                        : probeOnce(httpCheck(), workload.target());
        if (!result.ok) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(failures == 0);
}

TEST_CASE("engine: health probe tcp connects to a listening port and reports a refused one") {
  Workload workload;
  ProbeResult connected = probeOnce(tcpCheck(), workload.target());
  CHECK(connected.ok);
  CHECK(startsWith(connected.message, "connected to 127.0.0.1:"));

  ProbeResult refused = probeOnce(tcpCheck(), closedPortTarget());
  CHECK_FALSE(refused.ok);
  CHECK_MESSAGE(contains(refused.message, "Connection refused"), refused.message);
}

TEST_CASE("engine: health probe exec is ok on exit 0 and quotes the exit code and output otherwise") {
  ProbeResult passed = probeOnce(execCheck({"true"}), {});
  CHECK(passed.ok);
  CHECK(passed.message == "exited 0");

  ProbeResult failed = probeOnce(execCheck({"false"}), {});
  CHECK_FALSE(failed.ok);
  CHECK(failed.message == "exited 1");

  ProbeResult explained = probeOnce(execCheck({"/bin/sh", "-c", "echo 'disk full' >&2; echo more; exit 4"}), {});
  CHECK_FALSE(explained.ok);
  CHECK(explained.message == "exited 4: disk full");

  ProbeResult signalled = probeOnce(execCheck({"/bin/sh", "-c", "kill -TERM $$"}), {});
  CHECK_FALSE(signalled.ok);
  CHECK(signalled.message == "killed by SIGTERM");

  ProbeResult chatty =
      probeOnce(execCheck({"/bin/sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' x; echo; exit 3"}), {});
  CHECK_FALSE(chatty.ok);
  CHECK(chatty.message == "exited 3: " + std::string(200, 'x') + "...");

  ProbeResult missing = probeOnce(execCheck({"tide-no-such-command"}), {});
  CHECK_FALSE(missing.ok);
  CHECK(missing.message == "cannot run \"tide-no-such-command\": not found in PATH");
}

TEST_CASE("engine: health probe exec runs with the target's environment and working directory") {
  TempDir dir;
  ProbeTarget target;
  target.env = {{"TIDE_PORT_TCP_80", "31080"}};
  target.cwd = dir.path().string();
  std::string script = "test \"$TIDE_PORT_TCP_80\" = 31080 && test \"$(pwd -P)\" = \"$(cd \"$1\" && pwd -P)\"";
  ProbeResult result = probeOnce(execCheck({"/bin/sh", "-c", script, "sh", target.cwd}), target);
  CHECK_MESSAGE(result.ok, result.message);
}

TEST_CASE("engine: health probe exec that outlives its timeout is killed with its process group") {
  ProbeResult slept = probeOnce(execCheck({"sleep", "5"}, 0.2), {});
  CHECK_FALSE(slept.ok);
  CHECK(slept.message == "timed out after 0.2s; killed");

  TempDir dir;
  std::string pid_file = dir.file("child.pid");
  ProbeResult waited = probeOnce(execCheck({"/bin/sh", "-c", "sleep 5 & echo $! > " + pid_file + "; wait"}, 0.2), {});
  CHECK_FALSE(waited.ok);
  CHECK(startsWith(waited.message, "timed out after 0.2s; killed"));
  std::string pid_text = awaitLine(pid_file);
  REQUIRE_FALSE(pid_text.empty());
  pid_t grandchild = std::stoi(pid_text);
  CHECK(eventually([&] { return !processAlive(grandchild); }));
}

TEST_CASE("engine: health probe of a port the instance does not declare says so") {
  Workload workload;
  model::HealthCheck check = httpCheck();
  check.port = 8080;
  ProbeResult result = probeOnce(check, workload.target());
  CHECK_FALSE(result.ok);
  CHECK(result.message == "the instance has no port tcp/8080 (it has tcp/80)");

  check.type = "tcp";
  result = probeOnce(check, ProbeTarget{});
  CHECK_FALSE(result.ok);
  CHECK(result.message == "the instance has no port tcp/8080 (it has none)");
}

TEST_CASE("engine: health tracker turns healthy after N successes and unhealthy after M failures, once each") {
  model::HealthCheck check = httpCheck();
  check.healthy_threshold = 2;
  check.unhealthy_threshold = 3;
  HealthTracker tracker(check);
  CHECK_FALSE(tracker.healthy());
  CHECK(tracker.last().message == "not probed yet");

  CHECK_FALSE(tracker.record(failedResult()));  // already unhealthy: no change
  CHECK_FALSE(tracker.record(okResult()));
  CHECK(tracker.consecutiveSuccesses() == 1);
  CHECK(tracker.record(okResult()));
  CHECK(tracker.healthy());
  CHECK_FALSE(tracker.record(okResult()));

  CHECK_FALSE(tracker.record(failedResult()));
  CHECK_FALSE(tracker.record(failedResult()));
  CHECK(tracker.consecutiveFailures() == 2);
  CHECK(tracker.healthy());
  CHECK_FALSE(tracker.record(okResult()));  // a success resets the failure run
  CHECK(tracker.consecutiveFailures() == 0);
  CHECK_FALSE(tracker.record(failedResult()));
  CHECK_FALSE(tracker.record(failedResult()));
  CHECK(tracker.record(failedResult()));
  CHECK_FALSE(tracker.healthy());
  CHECK(tracker.last().message == "HTTP 500");
  CHECK_FALSE(tracker.record(failedResult()));

  HealthTracker resumed(check, /*initially_healthy=*/true);
  CHECK(resumed.healthy());
  CHECK_FALSE(resumed.record(failedResult()));
}

TEST_CASE("engine: waitHealthy returns ok once a slow-starting workload turns healthy") {
  Workload workload({"--healthy-after", "1"});
  model::HealthCheck check = httpCheck();
  check.interval_seconds = 0.1;
  check.healthy_threshold = 2;
  SystemClock clock;
  ProbeResult result =
      waitHealthy(check, workload.target(), clock, clock.now() + std::chrono::seconds(30), [] { return false; });
  CHECK_MESSAGE(result.ok, result.message);
  CHECK(result.message == "HTTP 200: ok");
}

// The hour-long interval makes these tests hang unless cancellation and the deadline are
// noticed while sleeping.
TEST_CASE("engine: waitHealthy stops promptly when cancelled or past the deadline") {
  Workload workload({"--healthy-after", "3600"});
  model::HealthCheck check = httpCheck();
  check.interval_seconds = 3600;
  FakeClock clock(TimePoint{} + std::chrono::hours(1000));
  TimePoint deadline = clock.now() + std::chrono::minutes(5);

  int calls = 0;
  ProbeResult cancelled = waitHealthy(check, workload.target(), clock, deadline, [&] { return ++calls > 1; });
  CHECK_FALSE(cancelled.ok);
  CHECK(cancelled.message == "cancelled; last probe: HTTP 503: starting");

  ProbeResult expired = waitHealthy(check, workload.target(), clock, deadline, [&] {
    clock.advance(std::chrono::minutes(1));
    return false;
  });
  CHECK_FALSE(expired.ok);
  CHECK(expired.message == "not healthy by the deadline; last probe: HTTP 503: starting");

  ProbeResult never = waitHealthy(check, workload.target(), clock, deadline, [] { return true; });
  CHECK_FALSE(never.ok);
  CHECK(never.message == "cancelled before the first probe");
}
