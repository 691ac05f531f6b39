#include "host/lua/strategy/strategy_tests.h"

#include <algorithm>
#include <memory>

#include "host/lua/strategy/strategy_interpreter.h"

namespace tide::lua {
namespace {

// Actions as sorted JSON texts, so order (of actions and of instance names) does not matter.
std::vector<std::string> canonical(const std::vector<StrategyAction>& actions) {
  std::vector<std::string> out;
  for (StrategyAction action : actions) {
    std::sort(action.instances.begin(), action.instances.end());
    out.push_back(Json(action).dump());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The fields of `expected` that `state` does not have with the same value, as "k=v".
std::string stateMismatch(const Json& expected, const Json& state) {
  std::string out;
  for (const auto& [key, value] : expected.items()) {
    if (state.contains(key) && state[key] == value) continue;
    out += (out.empty() ? "" : ", ") + key + "=" + (state.contains(key) ? state[key].dump() : std::string("nil"));
  }
  return out;
}

std::string describeExpectation(const StrategyTestCase& c) {
  if (!c.expect_error.empty()) return "error containing \"" + c.expect_error + "\"";
  std::vector<std::string> parts;
  if (c.expect) parts.push_back(describeActions(*c.expect));
  if (c.expect_state.is_object()) parts.push_back("state " + c.expect_state.dump());
  if (c.has_check) parts.push_back("check passes");
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : " with ") + part;
  return out;
}

CaseResult runCase(StrategyInterpreter& interpreter, const ScriptFile& strategy, const StrategyTestCase& c,
                   FakeClock&) {
  CaseResult result;
  result.expected = describeExpectation(c);
  auto snapshot = fixtureSnapshot(c.r);
  if (!snapshot.isOk()) {
    result.actual = "bad r: " + snapshot.status().message();
    return result;
  }
  auto run = interpreter.reconcile(strategy, *snapshot);
  if (!run.isOk()) {
    result.actual = "error: " + run.status().message();
    result.passed = !c.expect_error.empty() && run.status().message().find(c.expect_error) != std::string::npos;
    return result;
  }
  result.actual = describeActions(run->actions);
  result.passed = c.expect_error.empty();
  if (c.expect && canonical(*c.expect) != canonical(run->actions)) result.passed = false;
  if (c.expect_state.is_object()) {
    if (std::string mismatch = stateMismatch(c.expect_state, run->state); !mismatch.empty()) {
      result.passed = false;
      result.actual += " with state " + mismatch;
    }
  }
  if (c.has_check) {
    if (std::string failure = interpreter.runCheck(strategy, c.index, *run); !failure.empty()) {
      result.passed = false;
      result.actual += "; " + failure;
    }
  }
  return result;
}

}  // namespace

Result<Json> fixtureSnapshot(const Json& fixture) {
  if (!fixture.is_object()) return Status::invalidArgument("r must be a table of named fields");
  Json out = fixture;
  if (out.contains("count")) {
    if (!out.contains("deployment") || !out["deployment"].is_object()) out["deployment"] = Json::object();
    if (!out["deployment"].contains("count")) out["deployment"]["count"] = out["count"];
    out.erase("count");
  }
  if (out.contains("params")) {
    if (!out.contains("deployment_params") || !out["deployment_params"].is_object()) {
      out["deployment_params"] = Json::object();
    }
    if (!out["params"].is_object()) return Status::invalidArgument("r.params must be a table of named fields");
    out["deployment_params"].update(out["params"]);
    out.erase("params");
  }
  for (const char* version : {"new", "old"}) {
    if (!out.contains(version)) continue;
    if (!out.contains("instances") || out["instances"] == Json::object()) {
      out["instances"] = Json::array();
    }
    const Json list = out[version];
    if (!(list.is_array() || (list.is_object() && list.empty())) || !out["instances"].is_array()) {
      return Status::invalidArgument(std::string("r.") + version + " must be a list of instances");
    }
    for (Json instance : list) {
      if (!instance.is_object()) {
        return Status::invalidArgument(std::string("r.") + version + " must be a list of instances");
      }
      instance["version"] = version;
      out["instances"].push_back(std::move(instance));
    }
    out.erase(version);
  }
  if (out.contains("now") && out["now"].is_number()) {
    out["now_unix"] = out["now"];
    out.erase("now");
  }
  if (!out.contains("now") && !out.contains("now_unix")) out["now"] = kDefaultTestNow;
  return out;
}

Result<std::vector<CaseResult>> runStrategyFileTests(const ScriptFile& strategy, const ScriptSet& libs,
                                                     const LuaLimits& limits) {
  return runTestTable<StrategyInterpreter>(strategy, libs, limits, runCase);
}

}  // namespace tide::lua
