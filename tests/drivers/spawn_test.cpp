#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "drivers/process/spawn.h"
#include "tests/support/temp_dir.h"
#include "tests/support/workloads.h"

using namespace tide;
using namespace tide::drivers;
using namespace tide::testing;

namespace {

std::string processName(pid_t pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

struct WaiterLook {
  long private_kib = -1;  // the waiter's private memory after the "host" rewrote its memory
  std::string parent;     // the waiter's parent's name
};

constexpr size_t kHostMemory = 48 << 20;

// In a forked child, so that the helper (process-wide, for good) stays out of this test
// process: a "host" that starts the helper or not, then fills 48 MiB, spawns a workload,
// rewrites the 48 MiB and looks at the workload's waiter.
WaiterLook spawnFromABigHost(bool with_helper, const std::string& dir) {
  int result[2];
  REQUIRE(pipe(result) == 0);
  std::fflush(nullptr);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(result[0]);
    if (with_helper && !startSpawnHelper()) _exit(2);
    std::vector<char> memory(kHostMemory, 1);
    SpawnRequest request;
    request.executable = "/bin/sleep";
    request.argv = {"sleep", "300"};
    request.env = {"TIDE_RUNTIME_ID=spawn-test", "TIDE_STATE_DIR=" + dir};
    request.log_path = dir + "/log";
    request.exit_path = dir + "/exit";
    request.working_dir = dir;
    request.title = "spawn test";
    Result<SpawnedProcess> spawned = spawnDetached(request);
    if (!spawned.isOk()) _exit(3);
    std::memset(memory.data(), 2, memory.size());  // what a busy host does to its pages
    WaiterLook look;
    look.private_kib = privateKib(spawned->waiter.pid);
    const std::string parent = processName(parentOf(spawned->waiter.pid));
    (void)!write(result[1], &look.private_kib, sizeof look.private_kib);
    (void)!write(result[1], parent.c_str(), parent.size());
    _exit(0);
  }
  close(result[1]);
  WaiterLook look;
  REQUIRE(read(result[0], &look.private_kib, sizeof look.private_kib) == sizeof look.private_kib);
  char parent[64] = {};
  (void)!read(result[0], parent, sizeof parent - 1);
  look.parent = parent;
  close(result[0]);
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  killWorkloadsOf(dir);
  return look;
}

}  // namespace

TEST_CASE("spawn: a waiter started through the spawn helper holds none of the host's memory") {
  TempDir with_dir, without_dir;
  const WaiterLook with_helper = spawnFromABigHost(true, with_dir.path().string());
  const WaiterLook forked = spawnFromABigHost(false, without_dir.path().string());
  // Forked by the helper, which was the host before it grew; the host's fork made the
  // waiter a copy of the host, whose pages became the waiter's own as the host rewrote them
  // (8 MiB a waiter beside a 70 MiB host; 1,000 waiters at the rollout bench's scale).
  CHECK(with_helper.parent == "tide-spawner");
  CHECK(with_helper.private_kib >= 0);
  CHECK(with_helper.private_kib * 8 < forked.private_kib);
  CHECK(forked.private_kib >= static_cast<long>(kHostMemory / 1024) / 2);
}
