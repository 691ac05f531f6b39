#include "drivers/health/probe_pool.h"

#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "tests/drivers/driver_test_support.h"

using namespace tide;
using namespace tide::drivers;
using namespace tide::testing;

namespace {

ProbeJob execJob(const std::string& script, double timeout_seconds = 30) {
  ProbeJob job;
  job.check.type = "exec";
  job.check.command = {"/bin/sh", "-c", script};
  job.check.timeout_seconds = timeout_seconds;
  return job;
}

// Whether process `pid` has ended (a zombie nobody reaped yet counts: it runs nothing).
bool processEnded(pid_t pid) {
  const std::string stat = readText("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  return stat.empty() || (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z');
}

// Every result collected once the pool is idle, by key.
std::map<int64_t, ProbeResult> collectAll(ProbePool& pool) {
  pool.waitIdle();
  std::map<int64_t, ProbeResult> out;
  for (auto& [key, result] : pool.collect()) out.emplace(key, std::move(result));
  return out;
}

}  // namespace

TEST_CASE("probe pool: many due probes run on a bounded number of threads, each result under its key") {
  TempDir dir;
  const std::string live = dir.file("live");
  const std::string counts = dir.file("counts");
  std::filesystem::create_directories(live);
  // Each probe notes how many probes are alive beside it (itself included), then exits with
  // its key's parity.
  ProbePool pool(3);
  CHECK(pool.threadsStarted() == 0);
  for (int64_t key = 0; key < 24; ++key) {
    CHECK(pool.submit(key, execJob("mkdir " + live + "/$$; ls " + live + " | wc -l >> " + counts +
                                   "; sleep 0.05; rmdir " + live + "/$$; exit " + std::to_string(key % 2))));
  }
  const auto results = collectAll(pool);
  REQUIRE(results.size() == 24);
  for (const auto& [key, result] : results) CHECK(result.ok == (key % 2 == 0));
  CHECK(pool.threadsStarted() == 3);

  std::ifstream in(counts);
  int most = 0, lines = 0;
  for (int alive = 0; in >> alive; ++lines) most = std::max(most, alive);
  CHECK(lines == 24);
  CHECK(most <= 3);

  // Later probes reuse the same threads; nothing is collected twice.
  CHECK(pool.collect().empty());
  CHECK(pool.submit(1, execJob("exit 0")));
  CHECK(collectAll(pool).at(1).ok);
  CHECK(pool.threadsStarted() == 3);
  ProbePool small(8);
  CHECK(small.submit(5, execJob("exit 1")));
  CHECK_FALSE(collectAll(small).at(5).ok);
  CHECK(small.threadsStarted() == 1);
}

TEST_CASE("probe pool: a key in flight is not probed again until its result is collected") {
  TempDir dir;
  const std::string release = dir.file("release");
  ProbePool pool(2);
  REQUIRE(pool.submit(7, execJob("while [ ! -e " + release + " ]; do sleep 0.01; done")));
  CHECK(pool.inFlight(7));
  CHECK_FALSE(pool.submit(7, execJob("exit 0")));
  CHECK(pool.collect().empty());  // submit does not wait, and neither does collect
  std::ofstream(release) << "go\n";
  const auto results = collectAll(pool);
  REQUIRE(results.count(7) == 1);
  CHECK(results.at(7).ok);
  CHECK_FALSE(pool.inFlight(7));
  CHECK(pool.submit(7, execJob("exit 0")));
}

TEST_CASE("probe pool: stop() cancels a probe that hangs, killing its process group, and the pool works after") {
  TempDir dir;
  const std::string pid_file = dir.file("pid");
  ProbePool pool(2);
  // A day's timeout; the shell's child sleeps in the probe's process group.
  REQUIRE(pool.submit(1, execJob("sleep 86400 & echo $! > " + pid_file + "; wait", 86400)));
  std::string pid_text;
  REQUIRE(eventually([&] {
    pid_text = readText(pid_file);
    return !pid_text.empty() && pid_text.back() == '\n';
  }));
  const pid_t sleeper = std::stoi(pid_text);

  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    pool.stop();
    stopped = true;
  });
  const bool returned = eventually([&] { return stopped.load(); });
  if (!returned) ::kill(sleeper, SIGKILL);  // so that the test ends when stop() does not
  stopper.join();
  CHECK(returned);
  CHECK(eventually([&] { return processEnded(sleeper); }));
  CHECK(pool.collect().empty());
  CHECK_FALSE(pool.inFlight(1));

  CHECK(pool.submit(1, execJob("exit 0")));
  CHECK(collectAll(pool).at(1).ok);
}
