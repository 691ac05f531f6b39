// `tide deployment watch` on a terminal (a pseudo-terminal that script(1) gives the real
// binary) redraws one progress line; `--no-progress` and a pipe keep a line per change.

#include <chrono>
#include <string>

#include <doctest/doctest.h>

#include "tests/cli/cli_test_support.h"
#include "tests/cli/serve_process.h"

using namespace tide::testing;

namespace {

// `tide <args>` against `serve` with a terminal as its stdout: what the terminal received.
CliRun watchOnTerminal(const ServeProcess& serve, const std::string& args) {
  const std::string tide = std::string(TIDE_BINARY) + " " + args + " --server " + serve.url() + " --token " +
                           serve.token();
  return runShellCommand("timeout 120 script -qfec '" + tide + "' /dev/null < /dev/null");
}

}  // namespace

TEST_CASE("cli: watch redraws a progress line on a terminal and prints lines with --no-progress") {
  ServeProcess serve;
  REQUIRE(serve.tide("node create -m " + example("nodes.yaml")).code == 0);
  REQUIRE(serve.tide("deployment create -m " + example("nginx-dev-plan.yaml")).code == 0);
  REQUIRE(serve.tide("deployment add-deployment -m " + example("dev-deployment.yaml")).code == 0);

  CliRun drawn = watchOnTerminal(serve, "deployment watch nginx-dev-plan");
  CHECK_MESSAGE(drawn.code == 0, drawn.out);
  // The terminal turns "\n" into "\r\n".
  CHECK(drawn.out.starts_with("Watching deployment dev-1 of plan nginx-dev-plan (the newest)\r\n\r"));
  CHECK(contains(drawn.out, "\rdev-1  COMPLETED  [####################] 3/3 ready  3 instances"));
  CHECK(contains(drawn.out, "\x1b[K\r\n"));
  CHECK_FALSE(contains(drawn.out, "Z  COMPLETED"));

  CliRun lines = watchOnTerminal(serve, "deployment watch nginx-dev-plan --no-progress");
  CHECK_MESSAGE(lines.code == 0, lines.out);
  CHECK(contains(lines.out, "Z  COMPLETED  new 3/3 ready, old 0/0 ready  3 instances run the new version\r\n"));
  CHECK_FALSE(contains(lines.out, "\x1b[K"));

  // Into a pipe, as before: a line per change.
  CliRun piped = serve.tide("deployment watch nginx-dev-plan");
  CHECK(piped.code == 0);
  CHECK(contains(piped.out, "Z  COMPLETED  new 3/3 ready, old 0/0 ready  3 instances run the new version\n"));
  CHECK_FALSE(contains(piped.out, "\r"));
}
