// The workload isolation test (issue 12): a workload of the process driver cannot read the
// data dir or the host's environment, starts in its own directory and holds no descriptor of
// the host's.

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "drivers/process/workload_user.h"
#include "tests/drivers/driver_test_support.h"
#include "tests/support/env.h"

using namespace tide;
using namespace tide::drivers;
using namespace tide::testing;

namespace fs = std::filesystem;

namespace {

const std::string kAdminToken = "admin-token-that-must-not-leak-7f3a";

// The fixture's temp dir laid out as a host's data dir: 0700, with admin.token (0600) and the
// process driver's state under process/.
void writeAdminToken(const ProcessDriverFixture& f) {
  fs::permissions(f.dir.path(), fs::perms::owner_all);
  const std::string token_path = f.dir.file("admin.token");
  std::ofstream(token_path) << kAdminToken << "\n";
  fs::permissions(token_path, fs::perms::owner_read | fs::perms::owner_write);
}

// Runs the probe workload to its exit and returns its log.
std::string runProbe(ProcessDriverFixture& f, const std::string& id) {
  const std::string data_dir = f.dir.path().string();
  RuntimeSpec spec = f.command(id, "cat " + data_dir + "/admin.token; echo cat-exit=$?; env; echo cwd=$(pwd); ls " +
                                       data_dir + "; echo ls-exit=$?; echo fds=$(ls /proc/self/fd)");
  spec.coordinates["env"] = {{"DECLARED", "yes"}};
  auto started = f.driver->ensure(spec);
  REQUIRE_MESSAGE(started.isOk(), started.status().toString());
  REQUIRE(eventually([&] { return f.stateOf(id) == "EXITED"; }));
  return f.driver->readLog(id, 1 << 20).value();
}

// NAME of every NAME=value line.
std::set<std::string> variableNames(const std::string& log) {
  std::set<std::string> names;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    size_t equals = line.find('=');
    if (equals != std::string::npos && line.find_first_of(" /") > equals) names.insert(line.substr(0, equals));
  }
  return names;
}

}  // namespace

TEST_CASE("driver: a workload cannot read the data dir or the host's environment") {
  ProcessDriverFixture f;
  writeAdminToken(f);
  const std::string marker = "host-only-" + std::to_string(::getpid());
  ScopedEnv host_marker("TIDE_ISOLATION_MARKER", marker);
  ScopedEnv host_token("TIDE_TOKEN", kAdminToken);

  SUBCASE("as the host's user: its own dir, its declared environment, no host descriptor") {
    const std::string log = runProbe(f, "1");
    INFO(log);
    CHECK(log.find(marker) == std::string::npos);
    CHECK(log.find("TIDE_ISOLATION_MARKER") == std::string::npos);
    CHECK(log.find("TIDE_TOKEN") == std::string::npos);
    const std::string work_dir = f.dir.file("process/workloads/1");
    CHECK(log.find("cwd=" + work_dir + "\n") != std::string::npos);
    CHECK(log.find("HOME=" + work_dir + "\n") != std::string::npos);
    CHECK(log.find("PATH=/usr/local/bin:/usr/bin:/bin\n") != std::string::npos);
    CHECK(log.find("DECLARED=yes\n") != std::string::npos);
    // The shell adds PWD (and maybe SHLVL, OLDPWD, _); everything else is the driver's.
    const std::set<std::string> allowed = {"PATH",      "HOME",          "DECLARED",  "TIDE_INSTANCE",    "TIDE_NODE",
                                           "TIDE_RUNTIME_ID", "TIDE_DRIVER_STATE", "PWD", "SHLVL", "OLDPWD", "_"};
    for (const std::string& name : variableNames(log.substr(log.find("cat-exit="), log.find("cwd=") - log.find("cat-exit=")))) {
      if (name == "cat-exit") continue;
      CHECK_MESSAGE(allowed.count(name) == 1, "unexpected variable " << name);
    }
    // stdin, stdout, stderr, and the descriptor ls opens to list them.
    CHECK(log.find("fds=0 1 2 3\n") != std::string::npos);
    struct stat info {};
    REQUIRE(::stat(work_dir.c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == 0700);
  }

  SUBCASE("as process.run_as: the data dir and admin.token are out of reach") {
    if (::geteuid() != 0) {
      MESSAGE("skipped: process.run_as needs the tests to run as root");
      return;
    }
    auto nobody = lookUpWorkloadUser("nobody", "process.run_as");
    REQUIRE_MESSAGE(nobody.isOk(), nobody.status().toString());
    f.options.run_as = *nobody;
    f.reopen();
    const std::string log = runProbe(f, "2");
    INFO(log);
    CHECK(log.find(kAdminToken) == std::string::npos);
    CHECK(log.find("cat-exit=1\n") != std::string::npos);
    CHECK(log.find("ls-exit=0\n") == std::string::npos);
    CHECK(log.find("Permission denied") != std::string::npos);
    CHECK(log.find(marker) == std::string::npos);
    const std::string work_dir = f.dir.file("process/workloads/2");
    CHECK(log.find("cwd=" + work_dir + "\n") != std::string::npos);
    struct stat info {};
    REQUIRE(::stat(work_dir.c_str(), &info) == 0);
    CHECK(info.st_uid == nobody->uid);
    CHECK((info.st_mode & 0777) == 0700);
  }
}

TEST_CASE("driver: process.run_as names the key when the user is unknown or root") {
  auto unknown = lookUpWorkloadUser("no-such-user-tide", "process.run_as");
  REQUIRE_FALSE(unknown.isOk());
  CHECK(unknown.status().message().find("process.run_as") == 0);
  if (::geteuid() != 0) {
    CHECK(unknown.status().message().find("root") != std::string::npos);
    return;
  }
  CHECK(unknown.status().message().find("no user") != std::string::npos);
  auto root = lookUpWorkloadUser("root", "process.run_as");
  REQUIRE_FALSE(root.isOk());
  CHECK(root.status().message().find("unprivileged") != std::string::npos);
}

TEST_CASE("driver: a workload starts with no signal ignored or blocked, though the host ignores SIGPIPE") {
  // tide's main (and this test binary's) ignores SIGPIPE; an ignored disposition survives
  // exec, so the driver must give the workload the defaults back.
  ProcessDriverFixture f;
  RuntimeSpec spec = f.command("signals", "grep -E '^Sig(Ign|Blk):' /proc/self/status");
  REQUIRE(f.driver->ensure(spec).isOk());
  REQUIRE(eventually([&] { return f.stateOf("signals") == "EXITED"; }));
  const std::string log = f.driver->readLog("signals", 1 << 20).value();
  CHECK_MESSAGE(log.find("SigIgn:\t0000000000000000") != std::string::npos, log);
  CHECK_MESSAGE(log.find("SigBlk:\t0000000000000000") != std::string::npos, log);
}
