// host/cli/command_suggestions.cpp: a command line that names no command, or a wrong one,
// is answered with what was meant.

#include "host/cli/command_suggestions.h"

#include <doctest/doctest.h>

#include "tests/cli/cli_test_support.h"

using tide::cli::closestName;
using tide::cli::editDistance;
using tide::testing::runCli;

TEST_CASE("cli: edit distance counts insertions, deletions, substitutions and swapped neighbours") {
  CHECK(editDistance("list", "list") == 0);
  CHECK(editDistance("lst", "list") == 1);
  CHECK(editDistance("lsit", "list") == 1);
  CHECK(editDistance("lisp", "list") == 1);
  CHECK(editDistance("", "list") == 4);
  CHECK(closestName("lst", {"create", "list", "show"}) == "list");
  CHECK(closestName("sh", {"create", "list", "show"}) == "show");  // a prefix
  CHECK_FALSE(closestName("status", {"create", "list", "show"}).has_value());
}

TEST_CASE("cli: an unknown command is answered with the closest one, or the commands there are") {
  auto typo = runCli({"deployment", "lst"});
  CHECK(typo.code == 2);
  CHECK(typo.err == "error: unknown command 'lst' for 'tide deployment'; did you mean 'list'?\n");

  auto unknown = runCli({"operations", "frobnicate", "5"});
  CHECK(unknown.code == 2);
  CHECK(unknown.err.find("unknown command 'frobnicate' for 'tide operations'; its commands: ") == 7);
  CHECK(unknown.err.find("list") != std::string::npos);

  // Options and their values before the word are skipped.
  auto after_options = runCli({"--server", "http://127.0.0.1:1", "deployment", "lsit"});
  CHECK(after_options.err == "error: unknown command 'lsit' for 'tide deployment'; did you mean 'list'?\n");

  auto none = runCli({"deployment"});
  CHECK(none.code == 2);
  CHECK(none.err.find("error: 'tide deployment' needs a command: ") == 0);
  CHECK(none.err.find("(see tide deployment --help)") != std::string::npos);

  // A leaf command's own errors stay CLI11's.
  auto leaf = runCli({"deployment", "show"});
  CHECK(leaf.code == 2);
  CHECK(leaf.err.find("needs a command") == std::string::npos);
}
