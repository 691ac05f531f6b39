// `tide completion bash|zsh`, printed by the real binary and read by the real shells.

#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include "tests/cli/cli_test_support.h"

using namespace tide::testing;

namespace {

// The completions bash offers for the words of `line` (the last one being completed), with
// `script` (what `tide completion bash` printed) sourced, as a user's shell would.
std::string bashCompletes(const std::filesystem::path& script, const std::string& line) {
  const std::filesystem::path program = script.parent_path() / "complete.sh";
  std::ofstream(program) << "source '" << script.string() << "'\n"
                         << "COMP_WORDS=(" << line << ")\n"
                         << "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
                         << "_tide\n"
                         << "echo \"${COMPREPLY[*]}\"\n";
  CliRun completed = runShellCommand("bash '" + program.string() + "'");
  REQUIRE(completed.code == 0);
  return completed.out;
}

}  // namespace

TEST_CASE("cli: the bash completion script completes nouns, verbs, options and their choices") {
  tide::testing::TempDir dir;
  const std::filesystem::path script = dir.path() / "tide.bash";
  CliRun printed = runShellCommand(std::string(TIDE_BINARY) + " completion bash > '" + script.string() + "'");
  REQUIRE(printed.code == 0);

  CHECK(bashCompletes(script, "tide dep") == "deployment\n");
  CHECK(bashCompletes(script, "tide deployment l") == "list\n");
  CHECK(bashCompletes(script, "tide capability d") == "delete\n");
  CHECK(bashCompletes(script, "tide completion ''") == "bash zsh -h --help\n");
  CHECK(bashCompletes(script, "tide deployment delete web --sc") == "--scale-to-zero\n");
  CHECK(bashCompletes(script, "tide deployment list -o ''") == "table json\n");
  CHECK(bashCompletes(script, "tide deployment watch web --output ta") == "table\n");
  // Words that are no command (an argument, an option's value) are passed over.
  CHECK(bashCompletes(script, "tide deployment watch web -o json --int") == "--interval\n");
  // Options that take any value leave the word to file names (complete -o default).
  CHECK(bashCompletes(script, "tide deployment create -m ''") == "\n");
}

TEST_CASE("cli: the zsh completion script is produced from the same tree and parses") {
  tide::testing::TempDir dir;
  const std::filesystem::path script = dir.path() / "_tide";
  CliRun printed = runShellCommand(std::string(TIDE_BINARY) + " completion zsh > '" + script.string() + "'");
  REQUIRE(printed.code == 0);
  std::ifstream file(script);
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  CHECK(text.starts_with("#compdef tide\n"));
  CHECK(contains(text, "'deployment:Deployment plans and their deployments'"));
  CHECK(contains(text, "('tide deployment list -o') compadd -- 'table' 'json' ;;"));
  if (!std::filesystem::exists("/usr/bin/zsh") && !std::filesystem::exists("/bin/zsh")) {
    MESSAGE("zsh is not installed: the script's syntax is not checked");
    return;
  }
  CliRun parsed = runShellCommand("zsh -n '" + script.string() + "' 2>&1");
  CHECK_MESSAGE(parsed.code == 0, parsed.out);
}

TEST_CASE("cli: completion takes bash or zsh and nothing else") {
  CliRun unknown = runCli({"completion", "fish"});
  CHECK(unknown.code == 2);
  CHECK(contains(unknown.err, "fish not in {bash,zsh}"));
}
