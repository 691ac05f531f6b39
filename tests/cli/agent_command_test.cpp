#include <doctest/doctest.h>

#include "tests/cli/cli_test_support.h"

using namespace tide;
using namespace tide::testing;

TEST_CASE("cli: tide agent without --node names the option") {
  CliRun run = runCli({"agent", "--server", "http://127.0.0.1:1", "--token", "t"});
  CHECK(run.code == 2);
  CHECK(run.err.find("--node") != std::string::npos);
}

TEST_CASE("cli: tide agent with a bad --port-range names the option and starts nothing") {
  TempDir dir;
  for (const std::string range : {"30000", "30010-30000", "0-10", "1-70000", "a-b"}) {
    CliRun run = runCli({"agent", "--server", "http://127.0.0.1:1", "--node", "n1", "--token", "t", "--data-dir",
                         (dir.path() / "agent").string(), "--port-range", range});
    CHECK(run.code == 2);
    CHECK_MESSAGE(run.err.find("--port-range") != std::string::npos, run.err);
  }
  CHECK_FALSE(std::filesystem::exists((dir.path() / "agent").string()));
}

TEST_CASE("cli: tide agent needs exactly one of --token and --token-file") {
  CliRun neither = runCli({"agent", "--server", "http://127.0.0.1:1", "--node", "n1"});
  CHECK(neither.code == 2);
  CHECK(neither.err.find("--token") != std::string::npos);
  TempDir dir;
  CliRun unreadable = runCli({"agent", "--server", "http://127.0.0.1:1", "--node", "n1", "--token-file",
                              (dir.path() / "missing.token").string()});
  CHECK(unreadable.code == 2);
  CHECK(unreadable.err.find("--token-file") != std::string::npos);
}

TEST_CASE("cli: tide agent with an unknown --runtime names the option") {
  TempDir dir;
  CliRun run = runCli({"agent", "--server", "http://127.0.0.1:1", "--node", "n1", "--token", "t", "--data-dir",
                       (dir.path() / "agent").string(), "--runtime", "docker"});
  CHECK(run.code == 2);
  CHECK_MESSAGE(run.err.find("--runtime must be process, container or sim, got 'docker'") != std::string::npos,
                run.err);
}

TEST_CASE("cli: tide agent --driver-config must be a JSON object for the container runtime") {
  TempDir dir;
  const std::vector<std::string> base = {"agent",  "--server",   "http://127.0.0.1:1",
                                         "--node", "n1",         "--token",
                                         "t",      "--data-dir", (dir.path() / "agent").string()};
  std::vector<std::string> not_json = base;
  not_json.insert(not_json.end(), {"--runtime", "container", "--driver-config", "{ulimit"});
  CliRun bad = runCli(not_json);
  CHECK(bad.code == 2);
  CHECK_MESSAGE(bad.err.find("--driver-config must be a JSON object") != std::string::npos, bad.err);
  std::vector<std::string> for_processes = base;
  for_processes.insert(for_processes.end(), {"--driver-config", "{}"});
  CliRun misplaced = runCli(for_processes);
  CHECK(misplaced.code == 2);
  CHECK_MESSAGE(misplaced.err.find("--driver-config goes with --runtime container") != std::string::npos,
                misplaced.err);
}
