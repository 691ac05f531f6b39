#include "host/lua/policy/policy_tests.h"

#include "host/lua/policy/policy_data.h"
#include "host/lua/policy/policy_interpreter.h"

namespace tide::lua {
namespace {

CaseResult runCase(PolicyInterpreter& interpreter, const ScriptFile& policy, const PolicyTestCase& c,
                   FakeClock& clock) {
  CaseResult result;
  result.expected = c.expect;
  if (!c.reason.empty()) result.expected += " (reason containing \"" + c.reason + "\")";
  auto now = fixtureNow(c.ctx, clock.now());
  if (!now.isOk()) {
    result.actual = "bad ctx: " + now.status().message();
    return result;
  }
  clock.set(*now);
  SnapshotDataSource data(c.ctx, clock);
  PolicyRun run;
  if (LuaError e = interpreter.setOp(c.op); !e.ok()) {
    run.error_class = e.error_class;
    run.reason = e.message;
  } else {
    run = interpreter.run(policy, data);
  }
  if (run.error_class != LuaErrorClass::kNone) {
    result.actual = "error: " + run.reason;
  } else if (!run.applicable) {
    result.actual = "not_applicable";
    result.passed = c.expect == "not_applicable";
  } else {
    result.actual = verdictName(run.verdict);
    if (!run.reason.empty()) result.actual += ": " + run.reason;
    result.passed =
        c.expect == verdictName(run.verdict) && (c.reason.empty() || run.reason.find(c.reason) != std::string::npos);
  }
  return result;
}

}  // namespace

Result<std::vector<CaseResult>> runPolicyFileTests(const ScriptFile& policy, const ScriptSet& libs,
                                                   const LuaLimits& limits) {
  return runTestTable<PolicyInterpreter>(policy, libs, limits, runCase);
}

}  // namespace tide::lua
