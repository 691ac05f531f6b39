#pragma once
// The offline halves of `tide scripts test` (alias `tide policy test`) and
// `tide policy eval` (docs/architecture.md#cli-and-host-configuration). The CLI parses flags
// and calls these; they print text (or JSON) and return the exit code.

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "host/lua/policy/policy_verdict.h"
#include "host/lua/runtime/lua_state.h"

namespace tide::lua {

struct PolicyToolOptions {
  std::filesystem::path policies_dir = "policies";  // eval: the policies to run; test: default
  std::filesystem::path scripts_dir = "scripts";    // libs (<dir>/lib), strategies (<dir>/rollout)
  LuaLimits limits;
  Outcome default_outcome = Outcome::kPendingApproval;
  bool json = false;  // print JSON instead of text
};

// `tide scripts test [PATHS]`: runs the tests table of each policy or strategy file given (a
// directory means its *.lua files; files in a directory named "rollout" are strategies, in
// "hooks" or "lib" are refused as having no tests, anywhere else policies; no paths means
// options.policies_dir and <options.scripts_dir>/rollout) as reload validation runs them
// (script_tests.h). Prints the file, then PASS/FAIL per case, and "N passed, M failed"
// last; with options.json, {"items": [{"path", "kind", "error", "cases": [{"name",
// "passed", "expected", "actual"}]}], "passed", "failed", "warnings"}. Returns 0 when every
// case passed, 1 when any failed or a file did not load, 2 when no file was found.
int testScriptFiles(const std::vector<std::string>& paths, std::ostream& out, const PolicyToolOptions& options = {});

// `tide policy eval --op FILE`: evaluates the op in FILE against options.policies_dir
// offline and prints the combined verdict and every decision. FILE holds an op snapshot,
// or {"op": {...}, "ctx": {...}} where ctx is a fixture for ctx.* (policy_data.h) and may
// set "now". Returns 0 when the op was evaluated (whatever the verdict), 2 on bad input.
int evalOpFile(const std::string& op_file, std::ostream& out, const PolicyToolOptions& options = {});

}  // namespace tide::lua
