// `tide deployment watch` on a terminal (a pseudo-terminal that script(1) gives the real
// binary) redraws one progress line; `-o table` and `--no-progress` print a line per change,
// and into a pipe it prints JSON lines unless asked for `-o table`.

#include <chrono>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_test_support.h"
#include "tests/cli/serve_process.h"

using namespace tide::testing;
using Json = nlohmann::json;

namespace {

// `tide <args>` against `serve` with a terminal as its stdout: what the terminal received.
CliRun watchOnTerminal(const ServeProcess& serve, const std::string& args) {
  const std::string tide = std::string(TIDE_BINARY) + " " + args + " --server " + serve.url() + " --token " +
                           serve.token();
  return runShellCommand("timeout 120 script -qfec '" + tide + "' /dev/null < /dev/null");
}

}  // namespace

TEST_CASE("cli: watch redraws a progress line on a terminal, prints lines with -o table, NDJSON into a pipe") {
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

  for (const char* asked : {" --no-progress", " -o table"}) {
    CAPTURE(asked);
    CliRun lines = watchOnTerminal(serve, std::string("deployment watch nginx-dev-plan") + asked);
    CHECK_MESSAGE(lines.code == 0, lines.out);
    CHECK(contains(lines.out, "Z  COMPLETED  new 3/3 ready, old 0/0 ready  3 instances run the new version\r\n"));
    CHECK_FALSE(contains(lines.out, "\x1b[K"));
  }

  // Into a pipe: a JSON object per change, for scripts; `-o table` gives them the lines.
  CliRun piped = serve.tide("deployment watch nginx-dev-plan");
  CHECK(piped.code == 0);
  std::vector<std::string> objects = linesOf(piped.out);
  REQUIRE(objects.size() == 1);
  Json completed = Json::parse(objects[0]);
  CHECK(completed["deployment_id"] == "dev-1");
  CHECK(completed["state"] == "COMPLETED");
  CliRun piped_lines = serve.tide("deployment watch nginx-dev-plan -o table");
  CHECK(piped_lines.code == 0);
  CHECK(piped_lines.out.starts_with("Watching deployment dev-1 of plan nginx-dev-plan (the newest)\n"));
  CHECK(contains(piped_lines.out, "Z  COMPLETED  new 3/3 ready, old 0/0 ready  3 instances run the new version\n"));
  CHECK_FALSE(contains(piped_lines.out, "\r"));
}
