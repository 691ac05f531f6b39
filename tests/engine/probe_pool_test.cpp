#include "host/engine/probe_pool.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "tests/drivers/driver_test_support.h"

using namespace tide;
using namespace tide::engine;
using namespace tide::testing;

namespace {

ProbeJob execJob(const std::string& script) {
  ProbeJob job;
  job.check.type = "exec";
  job.check.command = {"/bin/sh", "-c", script};
  job.check.timeout_seconds = 30;
  return job;
}

}  // namespace

TEST_CASE("probe pool: many due probes run on a bounded number of threads, results in order") {
  TempDir dir;
  const std::string live = dir.file("live");
  const std::string counts = dir.file("counts");
  std::filesystem::create_directories(live);
  // Each probe notes how many probes are alive beside it (itself included), then exits with
  // its index's parity.
  std::vector<ProbeJob> jobs;
  for (int i = 0; i < 24; ++i) {
    jobs.push_back(execJob("mkdir " + live + "/$$; ls " + live + " | wc -l >> " + counts + "; sleep 0.05; rmdir " +
                           live + "/$$; exit " + std::to_string(i % 2)));
  }
  ProbePool pool(3);
  CHECK(pool.threadsStarted() == 0);
  const std::vector<ProbeResult> results = pool.run(jobs);
  REQUIRE(results.size() == jobs.size());
  for (size_t i = 0; i < results.size(); ++i) CHECK(results[i].ok == (i % 2 == 0));
  CHECK(pool.threadsStarted() == 3);

  std::ifstream in(counts);
  int most = 0, lines = 0;
  for (int alive = 0; in >> alive; ++lines) most = std::max(most, alive);
  CHECK(lines == 24);
  CHECK(most <= 3);

  // Later runs reuse the same threads; a run of one starts none.
  CHECK(pool.run({execJob("exit 0")}).front().ok);
  CHECK(pool.run({}).empty());
  CHECK(pool.threadsStarted() == 3);
  ProbePool small(8);
  CHECK(small.run({execJob("exit 1")}).front().ok == false);
  CHECK(small.threadsStarted() == 1);
}
