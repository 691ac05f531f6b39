#include <doctest/doctest.h>
#include <spawn.h>
#include <sys/inotify.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "host/core/failpoint.h"
#include "tests/drivers/driver_test_support.h"
#include "tests/support/workloads.h"

using namespace tide;
using namespace tide::drivers;
using namespace tide::testing;

namespace fs = std::filesystem;

namespace {

// What happens to the files of one directory, from inotify: "open <name>", "write <name>", ...
class DirectoryWatch {
 public:
  explicit DirectoryWatch(const std::string& dir) : fd_(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    REQUIRE(fd_ >= 0);
    REQUIRE(inotify_add_watch(fd_, dir.c_str(), IN_OPEN | IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_TO) >= 0);
  }
  ~DirectoryWatch() { close(fd_); }
  DirectoryWatch(const DirectoryWatch&) = delete;
  DirectoryWatch& operator=(const DirectoryWatch&) = delete;

  // The events since the last call.
  std::vector<std::string> events() {
    std::vector<std::string> out;
    alignas(inotify_event) char buffer[8192];
    ssize_t n = 0;
    while ((n = read(fd_, buffer, sizeof buffer)) > 0) {
      for (ssize_t at = 0; at < n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        const std::string name = event->len > 0 ? event->name : "";
        const char* what = (event->mask & IN_OPEN) ? "open" : (event->mask & IN_MODIFY) ? "write" : "change";
        out.push_back(std::string(what) + " " + name);
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
    }
    return out;
  }

 private:
  int fd_;
};

}  // namespace

TEST_CASE("driver: process ensure starts a command with its host ports in argv and env") {
  ProcessDriverFixture f;
  std::string out = f.dir.file("out");
  RuntimeSpec spec = f.command(
      "1", "echo {{port.tcp.80}} $TIDE_PORT_TCP_80 $TIDE_INSTANCE $TIDE_NODE $GREETING > " + out + "; exec sleep 300");
  spec.coordinates["env"] = {{"GREETING", "hi"}};
  spec.ports = {{"TCP", 80}};

  auto started = f.driver->ensure(spec);
  REQUIRE_MESSAGE(started.isOk(), started.status().toString());
  CHECK(started->state == model::WorkloadState::kRunning);
  CHECK(started->handle.rfind("pid:", 0) == 0);
  int host_port = started->ports.at("tcp/80").get<int>();
  CHECK(host_port >= f.options.port_range_start);
  CHECK(host_port <= f.options.port_range_end);

  std::string port = std::to_string(host_port);
  CHECK(awaitLine(out) == port + " " + port + " web-1 node-a hi\n");
  CHECK(processAlive(parseHandle(started->handle).pid));
}

TEST_CASE("driver: process ensure twice keeps one process") {
  ProcessDriverFixture f;
  RuntimeSpec spec = f.command("1", "exec sleep 300");
  spec.ports = {{"TCP", 80}};
  auto first = f.driver->ensure(spec);
  REQUIRE(first.isOk());
  auto second = f.driver->ensure(spec);
  REQUIRE(second.isOk());
  CHECK(second->state == model::WorkloadState::kRunning);
  CHECK(second->handle == first->handle);
  CHECK(second->ports == first->ports);
  CHECK(f.driver->list()->size() == 1);
}

TEST_CASE("driver: process stop terminates the whole process group, grandchildren included") {
  ProcessDriverFixture f;
  std::string child_pid_file = f.dir.file("child.pid");
  auto started = f.driver->ensure(f.command("1", "sleep 300 & echo $! > " + child_pid_file + "; wait"));
  REQUIRE(started.isOk());
  pid_t leader = parseHandle(started->handle).pid;
  pid_t grandchild = std::stoi(awaitLine(child_pid_file));
  REQUIRE(processAlive(grandchild));

  REQUIRE(f.driver->stop({"1", "node-a", started->handle}).isOk());
  CHECK(eventually([&] { return !processAlive(leader) && !processAlive(grandchild); }));
  auto stopped = f.driver->status({"1", "node-a", ""});
  REQUIRE(stopped.isOk());
  CHECK(stopped->state == model::WorkloadState::kStopped);
  CHECK(f.driver->stop({"1", "node-a", ""}).isOk());  // idempotent
}

TEST_CASE("driver: process stop escalates to SIGKILL after the grace period") {
  ProcessDriverFixture f;
  f.options.stop_grace = std::chrono::milliseconds(200);
  f.reopen();
  std::string ready = f.dir.file("ready");
  auto started =
      f.driver->ensure(f.command("1", "trap '' TERM; echo ready > " + ready + "; while :; do sleep 1; done"));
  REQUIRE(started.isOk());
  REQUIRE(awaitLine(ready) == "ready\n");
  REQUIRE(f.driver->stop({"1", "node-a", ""}).isOk());
  CHECK_FALSE(processAlive(parseHandle(started->handle).pid));
  auto stopped = f.driver->status({"1", "node-a", ""});
  REQUIRE(stopped.isOk());
  CHECK(stopped->state == model::WorkloadState::kStopped);
  CHECK(stopped->exit_code == 128 + SIGKILL);
}

TEST_CASE("driver: process remove frees the host port for reuse") {
  ProcessDriverFixture f(0, 1);
  RuntimeSpec a = f.command("a", "exec sleep 300");
  a.ports = {{"TCP", 8080}};
  RuntimeSpec b = f.command("b", "exec sleep 300");
  b.ports = {{"TCP", 8080}};

  auto first = f.driver->ensure(a);
  REQUIRE_MESSAGE(first.isOk(), first.status().toString());
  CHECK(first->ports.at("tcp/8080") == f.options.port_range_start);
  CHECK(f.driver->ensure(b).status().code() == Code::kResourceExhausted);
  CHECK(f.driver->list()->size() == 1);  // the refused instance left no record

  REQUIRE(f.driver->remove({"a", "node-a", ""}).isOk());
  CHECK_FALSE(processAlive(parseHandle(first->handle).pid));
  CHECK(f.driver->status({"a", "node-a", ""}).status().code() == Code::kNotFound);
  CHECK(f.driver->remove({"a", "node-a", ""}).isOk());  // idempotent

  auto second = f.driver->ensure(b);
  REQUIRE_MESSAGE(second.isOk(), second.status().toString());
  CHECK(second->ports.at("tcp/8080") == f.options.port_range_start);
}

TEST_CASE("driver: process ports skip host ports something else is bound to") {
  ProcessDriverFixture f(0, 20);
  int busy_fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(f.options.port_range_start));
  REQUIRE(bind(busy_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  REQUIRE(listen(busy_fd, 1) == 0);

  RuntimeSpec spec = f.command("1", "exec sleep 300");
  spec.ports = {{"TCP", 80}, {"UDP", 53}};
  auto started = f.driver->ensure(spec);
  close(busy_fd);
  REQUIRE_MESSAGE(started.isOk(), started.status().toString());
  int tcp = started->ports.at("tcp/80").get<int>();
  int udp = started->ports.at("udp/53").get<int>();
  CHECK(tcp != f.options.port_range_start);
  CHECK(tcp != udp);  // host ports are unique across protocols too
}

TEST_CASE("driver: a new process driver over the same state dir re-adopts its instances") {
  ProcessDriverFixture f;
  auto running = f.driver->ensure(f.command("run", "exec sleep 300"));
  REQUIRE(running.isOk());
  auto exiting = f.driver->ensure(f.command("exit", "exit 7"));
  REQUIRE(exiting.isOk());
  REQUIRE(eventually([&] { return f.stateOf("exit") == "EXITED"; }));

  std::unique_ptr<ProcessDriver> restarted = f.another();
  auto adopted = restarted->status({"run", "node-a", ""});
  REQUIRE(adopted.isOk());
  CHECK(adopted->state == model::WorkloadState::kRunning);
  CHECK(adopted->handle == running->handle);
  auto exited = restarted->status({"exit", "node-a", ""});
  REQUIRE(exited.isOk());
  CHECK(exited->state == model::WorkloadState::kExited);
  CHECK(exited->exit_code == 7);

  auto refs = restarted->list();
  REQUIRE(refs.isOk());
  REQUIRE(refs->size() == 2);
  CHECK(refs->at(0).id == "exit");
  CHECK(refs->at(1).id == "run");
  CHECK(refs->at(1).node == "node-a");
  CHECK(refs->at(1).handle == running->handle);

  // Ensure through the new driver adopts rather than starting a second copy.
  auto again = restarted->ensure(f.command("run", "exec sleep 300"));
  REQUIRE(again.isOk());
  CHECK(again->handle == running->handle);
}

TEST_CASE("driver: process ensure restarts an exited instance on the same host ports") {
  ProcessDriverFixture f;
  std::string marker = f.dir.file("marker");
  RuntimeSpec spec = f.command("1", "if [ -e " + marker + " ]; then exec sleep 300; fi; touch " + marker + "; exit 4");
  spec.ports = {{"TCP", 80}};
  auto first = f.driver->ensure(spec);
  REQUIRE(first.isOk());
  REQUIRE(eventually([&] { return f.stateOf("1") == "EXITED"; }));
  CHECK(f.driver->status({"1", "node-a", ""})->exit_code == 4);

  auto second = f.driver->ensure(spec);
  REQUIRE_MESSAGE(second.isOk(), second.status().toString());
  CHECK(second->state == model::WorkloadState::kRunning);
  CHECK(second->handle != first->handle);
  CHECK(second->ports == first->ports);
}

TEST_CASE("driver: a restart whose start was never recorded leaves one process once ensured again") {
  // The host dies (here: fails) between starting the new run and recording its pid; a new
  // driver over the same state dir must end that unrecorded run, not start a second copy.
  struct Disarm {
    ~Disarm() { (void)failpoint::arm(""); }
  } disarm;
  ProcessDriverFixture f;
  WorkloadsReaper reaper{f.options.state_dir};
  std::string marker = f.dir.file("marker");
  RuntimeSpec spec = f.command("1", "if [ -e " + marker + " ]; then exec sleep 300; fi; touch " + marker + "; exit 4");
  REQUIRE(f.driver->ensure(spec).isOk());
  REQUIRE(eventually([&] { return f.stateOf("1") == "EXITED"; }));

  REQUIRE(failpoint::arm("process.spawned=error@1").isOk());
  CHECK_FALSE(f.driver->ensure(spec).isOk());
  REQUIRE(eventually([&] { return workloadsOf(f.options.state_dir).size() == 1; }));
  REQUIRE(failpoint::arm("").isOk());

  std::unique_ptr<ProcessDriver> restarted = f.another();
  auto again = restarted->ensure(spec);
  REQUIRE_MESSAGE(again.isOk(), again.status().toString());
  CHECK(again->state == model::WorkloadState::kRunning);
  CHECK(eventually([&] { return workloadsOf(f.options.state_dir).size() == 1; }));
  const std::vector<pid_t> running = workloadsOf(f.options.state_dir);
  REQUIRE(running.size() == 1);
  CHECK(again->handle.starts_with("pid:" + std::to_string(running.front()) + ":"));
}

TEST_CASE("driver: process records whose start time does not match are not ours (pid reuse)") {
  ProcessDriverFixture f;
  // A live process the driver must never signal: it merely holds the recorded pid.
  pid_t stranger = 0;
  char arg0[] = "sleep";
  char arg1[] = "300";
  char* argv[] = {arg0, arg1, nullptr};
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);  // its own group, pgid == pid
  REQUIRE(posix_spawnp(&stranger, "sleep", nullptr, &attributes, argv, environ) == 0);
  posix_spawnattr_destroy(&attributes);
  REQUIRE(eventually([&] { return readProcStat(stranger) && readProcStat(stranger)->pgrp == stranger; }));
  uint64_t start = readProcStat(stranger)->start_time;

  std::ofstream(f.options.state_dir + "/instances/stale.json")
      << Json{{"id", "stale"}, {"node", "node-a"}, {"pid", stranger}, {"start_time", start + 1}}.dump();
  std::unique_ptr<ProcessDriver> driver = f.another();
  auto status = driver->status({"stale", "node-a", ""});
  REQUIRE(status.isOk());
  CHECK(status->state == model::WorkloadState::kExited);
  CHECK(status->exit_code == -1);
  CHECK(driver->stop({"stale", "node-a", ""}).isOk());
  CHECK(driver->remove({"stale", "node-a", ""}).isOk());
  CHECK(processAlive(stranger));

  kill(stranger, SIGKILL);
  waitpid(stranger, nullptr, 0);
}

TEST_CASE("driver: process maps images through the catalog and rejects unknown ones") {
  ProcessDriverFixture f;
  std::string out = f.dir.file("out");
  f.options.image_catalog = {
      {"echo:*", {"/bin/sh", "-c", "echo {{image}} {{image.tag}} {{instance}} > " + out + "; exec sleep 300"}}};
  f.reopen();
  RuntimeSpec spec = f.command("1", "");
  spec.coordinates = {{"image", "echo:1.2"}};
  auto started = f.driver->ensure(spec);
  REQUIRE_MESSAGE(started.isOk(), started.status().toString());
  CHECK(awaitLine(out) == "echo:1.2 1.2 web-1\n");

  spec.id = "2";
  spec.coordinates = {{"image", "redis:7"}};
  auto unknown = f.driver->ensure(spec);
  CHECK(unknown.status().code() == Code::kUnprocessable);
  CHECK(unknown.status().message().find("redis:7") != std::string::npos);
  CHECK(f.driver->status({"2", "node-a", ""}).status().code() == Code::kNotFound);
}

TEST_CASE("driver: process refuses bad specs and leaves nothing behind") {
  ProcessDriverFixture f;
  RuntimeSpec placeholder = f.command("1", "echo {{nope}}");
  CHECK(f.driver->ensure(placeholder).status().code() == Code::kInvalidArgument);

  RuntimeSpec missing = f.command("2", "");
  missing.coordinates = {{"command", {"/nonexistent/tide-test-binary"}}};
  CHECK(f.driver->ensure(missing).status().code() == Code::kUnprocessable);

  RuntimeSpec not_on_path = f.command("3", "");
  not_on_path.coordinates = {{"command", {"tide-no-such-command-anywhere"}}};
  CHECK(f.driver->ensure(not_on_path).status().code() == Code::kUnprocessable);

  RuntimeSpec bad_id = f.command("../escape", "exec sleep 300");
  CHECK(f.driver->ensure(bad_id).status().code() == Code::kInvalidArgument);

  CHECK(f.driver->list()->empty());
  CHECK(f.driver->status({"nope", "node-a", ""}).status().code() == Code::kNotFound);
  CHECK(f.driver->stop({"nope", "node-a", ""}).isOk());
  CHECK(f.driver->remove({"nope", "node-a", ""}).isOk());
}

TEST_CASE("driver: process volume accounting refuses over-commit and is idempotent") {
  ProcessDriverFixture f;
  f.options.node_volumes = [](const std::string& node) {
    std::vector<model::LocalVolume> volumes;
    if (node == "node-a") volumes = {{"/mnt/ssd1", "ssd", 6}, {"/mnt/ssd2", "ssd", 4}, {"/mnt/hdd", "hdd", 100}};
    return volumes;
  };
  f.reopen();
  VolumeSpec v1{"web-1-0", "node-a", "ssd", 6, "/data"};
  REQUIRE(f.driver->ensureVolume(v1).isOk());
  fs::path v1_dir = fs::path(f.options.volume_root) / "node-a" / "ssd" / "web-1-0";
  CHECK(fs::is_directory(v1_dir));
  CHECK(f.driver->ensureVolume(v1).isOk());  // idempotent, not counted twice

  VolumeSpec v2{"web-2-0", "node-a", "ssd", 5, "/data"};
  Status refused = f.driver->ensureVolume(v2);
  CHECK(refused.code() == Code::kUnprocessable);
  CHECK(refused.message().find("node-a") != std::string::npos);
  v2.capacity_gib = 4;
  CHECK(f.driver->ensureVolume(v2).isOk());
  CHECK(f.driver->ensureVolume({"web-3-0", "node-a", "ssd", 0.5, "/data"}).code() == Code::kUnprocessable);
  CHECK(f.driver->ensureVolume({"web-3-0", "node-a", "hdd", 50, "/data"}).isOk());
  CHECK(f.driver->ensureVolume({"web-4-0", "node-b", "ssd", 1, "/data"}).code() == Code::kUnprocessable);
  CHECK(f.driver->ensureVolume({"web-1-0", "node-a", "ssd", 2, "/data"}).code() == Code::kConflict);

  std::ofstream(v1_dir / "payload") << "kept until removeVolume";
  REQUIRE(f.driver->removeVolume({"web-1-0", "node-a"}).isOk());
  CHECK_FALSE(fs::exists(v1_dir));
  CHECK(f.driver->removeVolume({"web-1-0", "node-a"}).isOk());  // idempotent
  CHECK(f.driver->ensureVolume({"web-5-0", "node-a", "ssd", 6, "/data"}).isOk());

  // A second driver over the same state dir sees the same accounting.
  std::unique_ptr<ProcessDriver> other = f.another();
  CHECK(other->ensureVolume({"web-6-0", "node-a", "ssd", 1, "/data"}).code() == Code::kUnprocessable);
}

TEST_CASE("driver: process instances see their volumes through env and {{volume}}") {
  ProcessDriverFixture f;
  std::string out = f.dir.file("out");
  RuntimeSpec spec = f.command("1", "echo $TIDE_VOLUME_DATA {{volume./data}} > " + out + "; exec sleep 300");
  spec.volumes = {{"web-1-0", "node-a", "ssd", 1, "/data"}};
  auto started = f.driver->ensure(spec);
  REQUIRE_MESSAGE(started.isOk(), started.status().toString());
  std::string dir = (fs::path(f.options.volume_root) / "node-a" / "ssd" / "web-1-0").string();
  CHECK(awaitLine(out) == dir + " " + dir + "\n");
  CHECK(fs::is_directory(dir));
}

TEST_CASE("driver: process logs capture stdout and stderr and outlive remove") {
  ProcessDriverFixture f;
  auto started = f.driver->ensure(f.command("1", "echo to-stdout; echo to-stderr >&2; exec sleep 300"));
  REQUIRE(started.isOk());
  std::string log;
  CHECK(eventually([&] {
    log = f.driver->readLog("1", 4096).value();
    return log.find("to-stdout\n") != std::string::npos && log.find("to-stderr\n") != std::string::npos;
  }));
  CHECK(f.driver->readLog("1", 4).value().size() == 4);

  REQUIRE(f.driver->remove({"1", "node-a", ""}).isOk());
  CHECK(f.driver->readLog("1", 4096).isOk());
  CHECK(f.driver->readLog("never", 4096).status().code() == Code::kNotFound);
}

TEST_CASE("driver: process logs are capped at log_max_bytes, keeping one rotated file") {
  ProcessDriverFixture f;
  f.options.log_max_bytes = 4096;
  f.reopen();
  // 2000 numbered lines, about 17 KiB: the log rotates four times.
  std::string expected;
  for (int i = 0; i < 2000; ++i) expected += "line-" + std::to_string(i) + "\n";
  auto started =
      f.driver->ensure(f.command("1", "i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done"));
  REQUIRE_MESSAGE(started.isOk(), started.status().toString());
  REQUIRE(eventually([&] { return f.stateOf("1") == "EXITED"; }));

  const std::string log_path = f.dir.file("process/logs/1.log");
  CHECK(fs::file_size(log_path) <= 4096);
  CHECK(fs::file_size(log_path + ".1") == 4096);
  // The two files hold the output's last bytes, in order, and readLog reaches across them.
  const std::string both = readText(log_path + ".1") + readText(log_path);
  CHECK(expected.ends_with(both));
  CHECK(f.driver->readLog("1", 8192).value() == both);
  CHECK(f.driver->readLog("1", 100).value() == expected.substr(expected.size() - 100));
}

TEST_CASE("driver: a log being rotated is never missing to a reader, nor read twice") {
  ProcessDriverFixture f;
  f.options.log_max_bytes = 256;
  f.reopen();
  // About 600 KiB of numbered lines: the log rotates a few thousand times while it is read.
  auto started = f.driver->ensure(
      f.command("1", "i=0; while [ $i -lt 60000 ]; do echo line-$i; i=$((i+1)); done; exec sleep 300"));
  REQUIRE_MESSAGE(started.isOk(), started.status().toString());
  size_t reads = 0;
  size_t missing = 0;
  size_t repeated = 0;
  REQUIRE(eventually(
      [&] {
        for (int i = 0; i < 200; ++i, ++reads) {
          Result<std::string> log = f.driver->readLog("1", 8192);
          if (!log.isOk()) {
            ++missing;
            continue;
          }
          // One file read under both names would show a line twice.
          std::set<std::string> lines;
          std::istringstream in(*log);
          for (std::string line; std::getline(in, line);) {
            if (!lines.insert(line).second) ++repeated;
          }
        }
        return readText(f.dir.file("process/logs/1.log")).find("line-59999\n") != std::string::npos;
      },
      std::chrono::seconds(120)));
  CHECK_MESSAGE(missing == 0, missing << " of " << reads << " reads found no log");
  CHECK_MESSAGE(repeated == 0, repeated << " lines read twice in " << reads << " reads");
  CHECK_FALSE(fs::exists(f.dir.file("process/logs/1.log.next")));
}

TEST_CASE("driver: a removed instance's log and working dir go after log_retention, by the driver's clock") {
  FakeClock clock(*parseTimestamp("2026-11-21T12:00:00Z"));  // outlives the fixture, whose end lists
  ProcessDriverFixture f;
  f.options.clock = &clock;
  f.options.log_retention = std::chrono::hours(24);
  f.reopen();
  REQUIRE(f.driver->ensure(f.command("1", "echo kept; exec sleep 300")).isOk());
  REQUIRE(eventually([&] { return f.driver->readLog("1", 4096).value() == "kept\n"; }));
  const std::string work_dir = f.dir.file("process/workloads/1");
  CHECK(fs::is_directory(work_dir));

  REQUIRE(f.driver->remove({"1", "node-a", ""}).isOk());
  clock.advance(std::chrono::hours(23));
  REQUIRE(f.driver->list().isOk());
  CHECK(f.driver->readLog("1", 4096).value() == "kept\n");
  CHECK(fs::is_directory(work_dir));

  clock.advance(std::chrono::hours(1));
  REQUIRE(f.driver->list().isOk());  // list() prunes at most once a minute; this one is due
  CHECK(f.driver->readLog("1", 4096).status().code() == Code::kNotFound);
  CHECK_FALSE(fs::exists(work_dir));
  CHECK(fs::is_empty(f.dir.file("process/logs")));
}

TEST_CASE("driver: a log no record accounts for (an older tide's) is kept for log_retention from when it is found") {
  FakeClock clock(*parseTimestamp("2026-11-21T12:00:00Z"));  // outlives the fixture, whose end lists
  ProcessDriverFixture f;
  f.options.clock = &clock;
  f.reopen();
  std::ofstream(f.dir.file("process/logs/old.log")) << "from before\n";
  REQUIRE(f.driver->ensure(f.command("live", "exec sleep 300")).isOk());

  REQUIRE(f.driver->pruneRemoved().isOk());
  clock.advance(std::chrono::hours(24) - std::chrono::seconds(1));
  REQUIRE(f.driver->pruneRemoved().isOk());
  CHECK(f.driver->readLog("old", 4096).isOk());
  clock.advance(std::chrono::seconds(1));
  REQUIRE(f.driver->pruneRemoved().isOk());
  CHECK(f.driver->readLog("old", 4096).status().code() == Code::kNotFound);
  // A recorded instance keeps its log and working dir however old they are.
  CHECK(f.driver->readLog("live", 4096).isOk());
  CHECK(fs::is_directory(f.dir.file("process/workloads/live")));
}

TEST_CASE("driver: process list is scoped to the driver's cluster") {
  ProcessDriverFixture f;
  f.options.cluster = "blue";
  f.reopen();
  REQUIRE(f.driver->ensure(f.command("b1", "exec sleep 300")).isOk());
  ProcessDriverOptions green_options = f.options;
  green_options.cluster = "green";
  auto green = ProcessDriver::create(green_options);
  REQUIRE(green.isOk());
  RuntimeSpec spec = f.command("g1", "exec sleep 300");
  spec.ports = {{"TCP", 80}};
  auto g1 = (*green)->ensure(spec);
  REQUIRE(g1.isOk());

  auto blue_refs = f.driver->list();
  REQUIRE(blue_refs->size() == 1);
  CHECK(blue_refs->front().id == "b1");
  auto green_refs = (*green)->list();
  REQUIRE(green_refs->size() == 1);
  CHECK(green_refs->front().id == "g1");
  REQUIRE((*green)->remove({"g1", "node-a", ""}).isOk());
}

TEST_CASE("driver: process status and list answer from memory, opening no state file per call") {
  ProcessDriverFixture f;
  const std::string go = f.dir.file("go");
  REQUIRE(f.driver->ensure(f.command("run", "exec sleep 300")).isOk());
  REQUIRE(f.driver->ensure(f.command("die", "while [ ! -e " + go + " ]; do sleep 0.05; done; exit 3")).isOk());
  const std::vector<RuntimeRef> both = {{"run", "node-a", ""}, {"die", "node-a", ""}};

  DirectoryWatch instances(f.options.state_dir + "/instances");
  for (int i = 0; i < 50; ++i) {
    CHECK(f.stateOf("run") == "RUNNING");
    auto answers = f.driver->statusAll(both);
    REQUIRE(answers.isOk());
    CHECK(answers->at(1)->state == model::WorkloadState::kRunning);
    CHECK(f.driver->list()->size() == 2);
  }
  CHECK(instances.events().empty());

  std::ofstream(go) << "go\n";
  // Until the waiter has written the exit file, a status reads EXITED with the code unknown
  // (on a loaded machine the waiter may take longer than status() waits for it).
  REQUIRE(eventually([&] {
    auto died = f.driver->status({"die", "node-a", ""});
    return died.isOk() && died->state == model::WorkloadState::kExited && died->exit_code == 3;
  }));
  (void)instances.events();  // the waiter wrote the exit file, the driver read it
  for (int i = 0; i < 50; ++i) {
    auto died = f.driver->status({"die", "node-a", ""});
    REQUIRE(died.isOk());
    CHECK(died->state == model::WorkloadState::kExited);
    CHECK(died->exit_code == 3);
    CHECK(f.driver->statusAll(both)->at(1)->exit_code == 3);
  }
  CHECK(instances.events().empty());

  // The journal is what a new driver reads (the watch sees it do so): it agrees.
  auto reopened = f.another();
  const std::vector<std::string> read_at_start = instances.events();
  CHECK(std::count(read_at_start.begin(), read_at_start.end(), "open die.json") == 1);
  CHECK(reopened->status({"die", "node-a", ""})->exit_code == 3);
  CHECK(reopened->status({"run", "node-a", ""})->state == model::WorkloadState::kRunning);
}

TEST_CASE("driver: process status finds what another driver over the same state dir recorded later") {
  ProcessDriverFixture f;
  std::unique_ptr<ProcessDriver> other = f.another();
  REQUIRE(other->ensure(f.command("late", "exec sleep 300")).isOk());
  CHECK(f.stateOf("late") == "RUNNING");
  auto answers = f.driver->statusAll({{"late", "node-a", ""}, {"never", "node-a", ""}});
  REQUIRE(answers.isOk());
  CHECK(answers->at(0)->state == model::WorkloadState::kRunning);
  CHECK(answers->at(1).status().code() == Code::kNotFound);
  REQUIRE(f.driver->remove({"late", "node-a", ""}).isOk());
  CHECK(f.driver->status({"late", "node-a", ""}).status().code() == Code::kNotFound);
}

TEST_CASE("driver: process ensure reads only the records that changed when it picks host ports") {
  ProcessDriverFixture f;
  for (const std::string id : {"a", "b", "c", "d"}) {
    RuntimeSpec spec = f.command(id, "exec sleep 300");
    spec.ports = {{"TCP", 80}};
    REQUIRE(f.driver->ensure(spec).isOk());
  }
  // d's start read c, the one record written since the start before; d's own is read by
  // the next start. Each start parsed every record of the state dir before: O(instances).
  DirectoryWatch instances(f.options.state_dir + "/instances");
  RuntimeSpec e0 = f.command("e0", "exec sleep 300");
  e0.ports = {{"TCP", 80}};
  REQUIRE(f.driver->ensure(e0).isOk());
  for (const std::string& event : instances.events()) {
    CHECK_MESSAGE(event.find("open a.json") == std::string::npos, event);
    CHECK_MESSAGE(event.find("open b.json") == std::string::npos, event);
    CHECK_MESSAGE(event.find("open c.json") == std::string::npos, event);
  }

  // A record another driver over the same state dir writes is read, and its port avoided.
  std::unique_ptr<ProcessDriver> other = f.another();
  RuntimeSpec e = f.command("e", "exec sleep 300");
  e.ports = {{"TCP", 80}};
  auto e_started = other->ensure(e);
  REQUIRE(e_started.isOk());
  RuntimeSpec g = f.command("g", "exec sleep 300");
  g.ports = {{"TCP", 80}};
  auto g_started = f.driver->ensure(g);
  REQUIRE(g_started.isOk());
  std::set<int> ports;
  for (const auto& id : {"a", "b", "c", "d", "e0", "e", "g"}) {
    auto status = f.driver->status({id, "node-a", ""});
    REQUIRE(status.isOk());
    ports.insert(status->ports.at("tcp/80").get<int>());
  }
  CHECK(ports.size() == 7);
}
