#pragma once
// A script's own tests, run by its kind: what reload validation (script_registry.h) and
// `tide scripts test` (policy_tool.h) both call, so a file passes in one exactly when it
// passes in the other.

#include <vector>

#include "host/core/status.h"
#include "host/lua/runtime/lua_state.h"
#include "host/lua/runtime/script_set.h"
#include "host/lua/runtime/test_table.h"

namespace tide::lua {

// Policies and strategies have tests tables; hooks and libs do not.
bool hasTests(ScriptKind kind);

// Runs the tests table of `file`, a policy (policy_tests.h) or strategy (strategy_tests.h),
// with the libs of `libs`. kInvalidArgument for hooks and libs, which have no tests.
Result<std::vector<CaseResult>> runScriptTests(const ScriptFile& file, const ScriptSet& libs, const LuaLimits& limits);

}  // namespace tide::lua
