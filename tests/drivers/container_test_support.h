#pragma once
// Fixtures for tests that run real Podman containers (the container driver, an agent with the
// container runtime): whether podman can run here, a test image built in the test from
// Debian's busybox-static, and a sweep that removes every container a test's driver made.
//
// Where podman cannot run, a test calls podmanMissing() first and returns: it prints
// "MESSAGE: skipped: <why>", which ctest reports as Skipped (SKIP_REGULAR_EXPRESSION in
// CMakeLists.txt), never as passed.

#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "host/core/subprocess.h"
#include "tests/support/temp_dir.h"

namespace tide::testing {

// `podman <args>` as the tests run it: its outcome, or a failed check when it cannot run.
inline CommandOutcome podmanRun(const std::vector<std::string>& args,
                                std::chrono::seconds timeout = std::chrono::seconds(120)) {
  CommandRequest request;
  request.argv = {"podman"};
  request.argv.insert(request.argv.end(), args.begin(), args.end());
  request.env = inheritedEnvironment();
  request.timeout = timeout;
  Result<CommandOutcome> ran = runCommand(request);
  REQUIRE_MESSAGE(ran.isOk(), ran.status().toString());
  return std::move(ran).value();
}

// Why podman cannot run containers here ("" when it can), asked once per test process.
inline const std::string& podmanProblem() {
  static const std::string problem = []() -> std::string {
    const char* path = std::getenv("PATH");
    if (findExecutable("podman", path != nullptr ? path : "/usr/bin:/bin").empty()) {
      return "podman is not installed (apt-get install podman runc busybox-static; .ci/install-deps does)";
    }
    if (!std::filesystem::exists("/usr/bin/busybox")) return "busybox is absent (apt-get install busybox-static)";
    CommandRequest request;
    request.argv = {"podman", "info", "--format", "{{.Host.OCIRuntime.Name}}"};
    request.env = inheritedEnvironment();
    request.timeout = std::chrono::seconds(60);
    Result<CommandOutcome> info = runCommand(request);
    if (!info.isOk()) return "podman info cannot run: " + info.status().message();
    if (!info->succeeded()) return "podman info fails: " + info->errors.substr(0, 300);
    return "";
  }();
  return problem;
}

// True, after printing why, when the test must be skipped.
#define TIDE_PODMAN_MISSING()                                      \
  ([] {                                                            \
    const std::string& problem = ::tide::testing::podmanProblem(); \
    if (problem.empty()) return false;                             \
    MESSAGE("skipped: " << problem);                               \
    return true;                                                   \
  }())

// localhost/tide-test:<unique tag>: a root file system of busybox (sh, httpd, sleep, ...)
// and /www/index.html ("hello from tide-test"), imported with `podman import`. Removed with
// the fixture.
class TestImage {
 public:
  TestImage() {
    static int count = 0;
    ref_ = "localhost/tide-test:t" + std::to_string(::getpid()) + "-" + std::to_string(++count);
    const std::filesystem::path root = dir_.path() / "rootfs";
    for (const char* sub : {"usr/bin", "bin", "www", "tmp", "data"}) std::filesystem::create_directories(root / sub);
    std::filesystem::copy_file("/usr/bin/busybox", root / "usr/bin/busybox");
    for (const char* tool : {"sh", "httpd", "sleep", "echo", "cat", "ls", "kill", "wget", "true", "env"}) {
      std::filesystem::create_symlink("/usr/bin/busybox", root / "bin" / tool);
    }
    std::ofstream(root / "www/index.html") << "hello from tide-test\n";
    const std::string command = "tar -C '" + root.string() + "' -c . | podman import - " + ref_ + " >/dev/null 2>&1";
    REQUIRE_MESSAGE(std::system(command.c_str()) == 0, "podman import failed: " << command);
  }
  ~TestImage() { (void)podmanRun({"rmi", "--force", ref_}); }
  TestImage(const TestImage&) = delete;
  TestImage& operator=(const TestImage&) = delete;

  const std::string& ref() const { return ref_; }

 private:
  TempDir dir_;
  std::string ref_;
};

// Names of the containers (running or not) labelled tide.home=`home`.
inline std::vector<std::string> containersLabelled(const std::string& home) {
  CommandOutcome listed = podmanRun({"ps", "--all", "--format", "{{.Names}}", "--filter", "label=tide.home=" + home});
  REQUIRE_MESSAGE(listed.succeeded(), listed.errors);
  std::vector<std::string> names;
  std::string line;
  for (std::istringstream lines(listed.output); std::getline(lines, line);) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

// Removes every container labelled tide.home=`home` when it goes out of scope, so a failed
// test leaves nothing running.
class ContainerSweep {
 public:
  explicit ContainerSweep(std::string home) : home_(std::move(home)) {}
  ~ContainerSweep() {
    std::vector<std::string> args = {"rm", "--force", "--ignore", "--time", "0"};
    for (const std::string& name : containersLabelled(home_)) args.push_back(name);
    if (args.size() > 5) (void)podmanRun(args);
    // Pods too (docs/architecture.md#applications), with their infra containers.
    const CommandOutcome pods = podmanRun({"pod", "ps", "-q", "--filter", "label=tide.home=" + home_});
    std::vector<std::string> remove = {"pod", "rm", "--force", "--ignore"};
    std::istringstream ids(pods.output);
    for (std::string id; ids >> id;) remove.push_back(id);
    if (remove.size() > 4) (void)podmanRun(remove);
  }
  ContainerSweep(const ContainerSweep&) = delete;
  ContainerSweep& operator=(const ContainerSweep&) = delete;

 private:
  std::string home_;
};

}  // namespace tide::testing
