// `tide scripts test` (and its alias `tide policy test`): run() in-process for the output,
// and the `tide` binary as a process for the exit code and the JSON.

#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_test_support.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using tide::testing::CliRun;
using tide::testing::contains;
using tide::testing::kSourceDir;
using tide::testing::runCli;
using tide::testing::runShellCommand;
using tide::testing::TempDir;

// A policy and a strategy, each with one passing and one failing case, and a hook.
void writeFailingScripts(const fs::path& root) {
  fs::create_directories(root / "policies");
  fs::create_directories(root / "scripts" / "rollout");
  fs::create_directories(root / "scripts" / "hooks");
  std::ofstream(root / "policies" / "always_deny.lua") << R"(return {
  name = "always-deny",
  decide = function(op, ctx) return deny("never") end,
  tests = {
    { name = "denies", expect = "deny" },
    { name = "claims to approve", expect = "approve" },
  },
}
)";
  std::ofstream(root / "scripts" / "rollout" / "idle.lua") << R"(return {
  name = "idle",
  reconcile = function(r) return {} end,
  tests = {
    { name = "does nothing", expect = {} },
    { name = "claims to create", expect = { create(1) } },
  },
}
)";
  std::ofstream(root / "scripts" / "hooks" / "quiet.lua") << R"(return {
  name = "quiet",
  on = { ["operation.after"] = function(op, ctx) end },
}
)";
}

// `TIDE_BINARY <args>` as a process.
CliRun runBinary(const std::string& args) {
  return runShellCommand(std::string(TIDE_BINARY) + " " + args + " 2>/dev/null");
}

}  // namespace

TEST_CASE("cli: scripts test passes every shipped policy and strategy, and policy test is its alias") {
  const std::vector<std::string> dirs = {"--policies", kSourceDir + "/policies", "--scripts", kSourceDir + "/scripts"};
  std::vector<std::string> args = {"scripts", "test"};
  args.insert(args.end(), dirs.begin(), dirs.end());
  CliRun scripts = runCli(args);
  INFO(scripts.out);
  CHECK(scripts.code == 0);
  CHECK(contains(scripts.out, "/policies/business_hours.lua\n  PASS  "));
  CHECK(contains(scripts.out, "/scripts/rollout/rolling.lua\n  PASS  "));
  CHECK(contains(scripts.out, " passed, 0 failed\n"));
  CHECK_FALSE(contains(scripts.out, "FAIL"));

  args = {"policy", "test"};
  args.insert(args.end(), dirs.begin(), dirs.end());
  CliRun policy = runCli(args);
  CHECK(policy.code == 0);
  CHECK(policy.out == scripts.out);
}

TEST_CASE("cli: scripts test prints every case, exits 1 on a failure and refuses hooks") {
  TempDir root;
  writeFailingScripts(root.path());
  const std::string scripts_dir = (root.path() / "scripts").string();
  CliRun run = runCli({"scripts", "test", "--policies", (root.path() / "policies").string(), "--scripts", scripts_dir});
  INFO(run.out);
  CHECK(run.code == 1);
  CHECK(contains(run.out,
                 "always_deny.lua\n  PASS  denies\n"
                 "  FAIL  claims to approve: expected approve, got deny: never\n"));
  CHECK(contains(run.out,
                 "idle.lua\n  PASS  does nothing\n"
                 "  FAIL  claims to create: expected create(1), got nothing\n"));
  CHECK(contains(run.out, "2 passed, 2 failed\n"));

  CliRun hook = runCli({"scripts", "test", (root.path() / "scripts" / "hooks").string(), "--scripts", scripts_dir});
  CHECK(hook.code == 1);
  CHECK(contains(hook.out, "quiet.lua\n  FAIL  not tested: "));
  CHECK(contains(hook.out, "quiet.lua: a hook has no tests; only policies and strategies do\n"));

  fs::create_directories(root.path() / "empty");
  CliRun none = runCli({"scripts", "test", (root.path() / "empty").string()});
  CHECK(none.code == 2);
  CHECK(contains(none.out, "no policy or strategy files found in"));
}

TEST_CASE("cli: the tide binary's scripts test -o json lists every file and case") {
  TempDir root;
  writeFailingScripts(root.path());
  CliRun run = runBinary("scripts test -o json --policies " + (root.path() / "policies").string() + " --scripts " +
                         (root.path() / "scripts").string());
  INFO(run.out);
  CHECK(run.code == 1);
  const Json report = Json::parse(run.out, nullptr, /*allow_exceptions=*/false);
  REQUIRE(report.is_object());
  CHECK(report["passed"] == 2);
  CHECK(report["failed"] == 2);
  REQUIRE(report["items"].size() == 2);
  const Json& policy = report["items"][0];
  CHECK(policy["kind"] == "policy");
  CHECK(policy["error"] == "");
  REQUIRE(policy["cases"].size() == 2);
  CHECK(policy["cases"][1] ==
        Json{{"name", "claims to approve"}, {"passed", false}, {"expected", "approve"}, {"actual", "deny: never"}});
  const Json& strategy = report["items"][1];
  CHECK(strategy["kind"] == "strategy");
  CHECK(strategy["cases"][0]["passed"] == true);

  CliRun alias = runBinary("policy test -o json --policies " + (root.path() / "policies").string() + " --scripts " +
                           (root.path() / "scripts").string());
  CHECK(alias.code == 1);
  CHECK(alias.out == run.out);
}
