// Container driver benchmark (docs/performance.md#container-starts): what starting N
// containers through the driver costs beyond podman itself. In one run, on the same machine
// and image: N `podman run -d` alone, then N ContainerDriver::ensure (port lease, volume and
// label work, the podman call, its reading), each N started by a handful of threads as the
// executor's workers would. Prints both wall times and the per-container difference.
//
//   build-release/container_bench [containers, default 50] [threads, default 5] [rounds, default 2]
//
// Figures are the mean of the rounds; the two sides take turns going first.

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "drivers/container/container_driver.h"
#include "tests/bench/bench_support.h"

using namespace tide;
using namespace tide::drivers;
using bench::fail;
using bench::note;
using bench::secondsSince;
using bench::Steady;

namespace {

CommandOutcome podman(const std::vector<std::string>& args) {
  CommandRequest request;
  request.argv = {"podman"};
  request.argv.insert(request.argv.end(), args.begin(), args.end());
  request.env = inheritedEnvironment();
  request.timeout = std::chrono::minutes(5);
  Result<CommandOutcome> ran = runCommand(request);
  if (!ran.isOk()) fail("podman: " + ran.status().message());
  return std::move(ran).value();
}

// Runs job(i) for i in [0, count) on `threads` threads; the wall time in seconds.
template <class Job>
double onThreads(int count, int threads, Job job) {
  std::atomic<int> next{0};
  const Steady::time_point started = Steady::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (int i = next++; i < count; i = next++) job(i);
    });
  }
  for (std::thread& worker : workers) worker.join();
  return secondsSince(started);
}

void removeLabelled(const std::string& label) {
  CommandOutcome listed = podman({"ps", "--all", "--quiet", "--filter", "label=" + label});
  std::vector<std::string> args = {"rm", "--force", "--ignore", "--time", "0"};
  std::string id;
  for (std::istringstream ids(listed.output); std::getline(ids, id);) {
    if (!id.empty()) args.push_back(id);
  }
  if (args.size() > 5) podman(args);
}

}  // namespace

int main(int argc, char** argv) {
  const int count = argc > 1 ? std::atoi(argv[1]) : 50;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 5;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 2;
  if (count < 1 || threads < 1 || rounds < 1) fail("usage: container_bench [containers] [threads] [rounds]");
  if (!podman({"info", "--format", "{{.Host.OCIRuntime.Name}}"}).succeeded()) fail("podman cannot run here");

  bench::ScratchDir dir;
  const std::string tag = "localhost/tide-bench:" + std::to_string(::getpid());
  const std::filesystem::path root = dir.path / "rootfs";
  for (const char* sub : {"usr/bin", "bin", "www", "tmp"}) std::filesystem::create_directories(root / sub);
  std::filesystem::copy_file("/usr/bin/busybox", root / "usr/bin/busybox");
  for (const char* tool : {"sh", "httpd"}) std::filesystem::create_symlink("/usr/bin/busybox", root / "bin" / tool);
  std::ofstream(root / "www/index.html") << "hello\n";
  const std::string import = "tar -C '" + root.string() + "' -c . | podman import - " + tag + " >/dev/null";
  if (std::system(import.c_str()) != 0) fail("podman import failed");

  ContainerDriverOptions options;
  options.state_dir = (dir.path / "container").string();
  options.volume_root = (dir.path / "volumes").string();
  options.port_range_start = 41000;
  options.port_range_end = 41000 + 2 * count + 100;
  options.cluster = "bench";
  options.config.pull = "never";
  options.config.stop_grace = std::chrono::seconds(0);
  auto created = ContainerDriver::create(options);
  if (!created.isOk()) fail(created.status().toString());
  ContainerDriver& driver = **created;
  const std::string home = std::filesystem::absolute(options.state_dir).lexically_normal().string();
  const std::string raw_label = "tide.bench=" + std::to_string(::getpid());
  const std::vector<std::string> serve = {"/bin/httpd", "-f", "-p", "8080", "-h", "/www"};
  // The ulimits the driver gives by default: this process's hard limits, at most 65536 and 4096.
  rlimit files{}, processes{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  ::getrlimit(RLIMIT_NPROC, &processes);
  const auto capped = [](rlim_t hard, rlim_t most) {
    return std::to_string(hard == RLIM_INFINITY ? most : std::min(hard, most));
  };
  const std::string nofile = "nofile=" + capped(files.rlim_max, 65536) + ":" + capped(files.rlim_max, 65536);
  const std::string nproc = "nproc=" + capped(processes.rlim_max, 4096) + ":" + capped(processes.rlim_max, 4096);

  // The same work podman does for the driver's containers: runtime, ulimits, a published
  // port, a k8s-file log under the scratch dir.
  std::atomic<int> failures{0};
  const auto rawRound = [&](int round) {
    note("podman run -d alone, " + std::to_string(count) + " containers on " + std::to_string(threads) + " threads");
    const double took = onThreads(count, threads, [&](int i) {
      const std::string n = std::to_string(round) + "-" + std::to_string(i);
      std::vector<std::string> args = {"run",
                                       "--detach",
                                       "--name",
                                       "tide-bench-raw-" + std::to_string(::getpid()) + "-" + n,
                                       "--runtime",
                                       "runc",
                                       "--pull",
                                       "never",
                                       "--ulimit",
                                       nofile,
                                       "--ulimit",
                                       nproc,
                                       "--label",
                                       raw_label,
                                       "--log-driver",
                                       "k8s-file",
                                       "--log-opt",
                                       "path=" + (dir.path / ("raw-" + n + ".log")).string(),
                                       "--publish",
                                       "127.0.0.1:" + std::to_string(options.port_range_end - i) + ":8080/tcp",
                                       tag};
      args.insert(args.end(), serve.begin(), serve.end());
      if (!podman(args).succeeded()) ++failures;
    });
    removeLabelled(raw_label);
    return took;
  };
  double status_all_seconds = 0;
  int running = 0;
  const auto driverRound = [&] {
    note("ContainerDriver::ensure, " + std::to_string(count) + " containers on " + std::to_string(threads) +
         " threads");
    const double took = onThreads(count, threads, [&](int i) {
      RuntimeSpec spec;
      spec.id = std::to_string(i + 1);
      spec.meta_instance = "web-" + spec.id;
      spec.node = "n1";
      spec.payload_name = "web";
      spec.coordinates = {{"image", tag}, {"command", serve}};
      spec.ports = {{"TCP", 8080}};
      Result<RuntimeStatus> started = driver.ensure(spec);
      if (!started.isOk()) {
        note("ensure " + spec.id + ": " + started.status().toString());
        ++failures;
      }
    });
    std::vector<RuntimeRef> refs;
    for (int i = 0; i < count; ++i) refs.push_back({std::to_string(i + 1), "n1", ""});
    const Steady::time_point asked = Steady::now();
    Result<std::vector<RuntimeAnswer>> answers = driver.statusAll(refs);
    status_all_seconds = secondsSince(asked);
    if (!answers.isOk()) fail(answers.status().toString());
    running = 0;
    for (const RuntimeAnswer& answer : *answers) {
      running += answer.isOk() && answer->state == model::WorkloadState::kRunning;
    }
    removeLabelled("tide.home=" + home);
    return took;
  };
  // Alternately first, so neither side always meets a colder or a busier podman.
  double raw_seconds = 0, driver_seconds = 0;
  for (int round = 0; round < rounds; ++round) {
    if (round % 2 == 0) {
      raw_seconds += rawRound(round);
      driver_seconds += driverRound();
    } else {
      driver_seconds += driverRound();
      raw_seconds += rawRound(round);
    }
  }
  raw_seconds /= rounds;
  driver_seconds /= rounds;
  podman({"rmi", "--force", tag});
  if (failures > 0) fail(std::to_string(failures.load()) + " starts failed");

  const double overhead_ms = (driver_seconds - raw_seconds) / count * 1000;
  note("podman run -d: " + std::to_string(raw_seconds) + " s; driver: " + std::to_string(driver_seconds) +
       " s; overhead per container: " + std::to_string(overhead_ms) +
       " ms; statusAll of all: " + std::to_string(status_all_seconds) + " s");
  bench::Json line = {{"bench", "container_start"},
                      {"containers", count},
                      {"threads", threads},
                      {"rounds", rounds},
                      {"podman_run_s", raw_seconds},
                      {"driver_s", driver_seconds},
                      {"overhead_ms_per_container", overhead_ms},
                      {"status_all_s", status_all_seconds},
                      {"running_after_start", running}};
  std::printf("%s\n", line.dump().c_str());
  return 0;
}
