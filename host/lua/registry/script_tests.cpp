#include "host/lua/registry/script_tests.h"

#include "host/lua/policy/policy_tests.h"
#include "host/lua/strategy/strategy_tests.h"

namespace tide::lua {

bool hasTests(ScriptKind kind) { return kind == ScriptKind::kPolicy || kind == ScriptKind::kStrategy; }

Result<std::vector<CaseResult>> runScriptTests(const ScriptFile& file, const ScriptSet& libs, const LuaLimits& limits) {
  if (file.kind == ScriptKind::kPolicy) return runPolicyFileTests(file, libs, limits);
  if (file.kind == ScriptKind::kStrategy) return runStrategyFileTests(file, libs, limits);
  return Status::invalidArgument(file.path + ": a " + scriptKindName(file.kind) +
                                 " has no tests; only policies and strategies do");
}

}  // namespace tide::lua
