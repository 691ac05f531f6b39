#include "host/lua/policy/policy_tests.h"

#include <memory>

#include "host/lua/policy/policy_data.h"
#include "host/lua/policy/policy_interpreter.h"

namespace tide::lua {

Result<std::vector<PolicyCaseResult>> runPolicyFileTests(const ScriptFile& policy,
                                                         const ScriptSet& libs,
                                                         const LuaLimits& limits) {
  auto set = std::make_shared<ScriptSet>();
  for (const ScriptFile* lib : libs.ofKind(ScriptKind::kLib)) set->files[lib->path] = *lib;
  set->files[policy.path] = policy;
  const ScriptFile& file = set->files[policy.path];

  TIDE_ASSIGN_OR_RETURN(const TimePoint default_now, parseTimestamp(kDefaultTestNow));
  FakeClock clock(default_now);
  TIDE_ASSIGN_OR_RETURN(auto interpreter, PolicyInterpreter::create(set, limits, clock));
  TIDE_ASSIGN_OR_RETURN(std::vector<PolicyTestCase> cases, interpreter->testCases(file));

  std::vector<PolicyCaseResult> results;
  for (const PolicyTestCase& c : cases) {
    PolicyCaseResult result;
    result.name = c.name;
    result.expected = c.expect;
    if (!c.reason.empty()) result.expected += " (reason containing \"" + c.reason + "\")";
    auto now = fixtureNow(c.ctx, default_now);
    if (!now.isOk()) {
      result.actual = "bad ctx: " + now.status().message();
      results.push_back(std::move(result));
      continue;
    }
    clock.set(*now);
    SnapshotDataSource data(c.ctx, clock);
    PolicyRun run;
    if (LuaError e = interpreter->setOp(c.op); !e.ok()) {
      run.error_class = e.error_class;
      run.reason = e.message;
    } else {
      run = interpreter->run(file, data);
    }
    if (run.error_class != LuaErrorClass::kNone) {
      result.actual = "error: " + run.reason;
    } else if (!run.applicable) {
      result.actual = "not_applicable";
      result.passed = c.expect == "not_applicable";
    } else {
      result.actual = verdictName(run.verdict);
      if (!run.reason.empty()) result.actual += ": " + run.reason;
      result.passed = c.expect == verdictName(run.verdict) &&
                      (c.reason.empty() || run.reason.find(c.reason) != std::string::npos);
    }
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace tide::lua
