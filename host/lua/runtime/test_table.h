#pragma once
// A script's own `tests` table, checked and run the same way for every kind that has one
// (policy_tests.h, strategy_tests.h). A kind supplies what differs: the fields its cases
// may have, how one case is read, and how one case is run.
//
// The table is a list; each item must be a table whose fields are among the kind's, and
// is named by its `name` or "case <n>". Problems read "tests[2] must be a table",
// "tests[2] has an unknown field (known: name, op, ...)", "tests[2] (deny prod): ...".

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "host/core/clock.h"
#include "host/core/status.h"
#include "host/lua/runtime/lua_state.h"
#include "host/lua/runtime/script_set.h"

struct lua_State;

namespace tide::lua {

// Monday 2026-01-05 12:00:00 UTC: the time a case runs at unless its fixture sets one.
inline constexpr const char* kDefaultTestNow = "2026-01-05T12:00:00Z";

// The string at `key` of the table at stack index `table`; "" when it is absent or not a
// string. Leaves the stack as it was.
std::string fieldString(lua_State* L, int table, const char* key);

// What one case came to.
struct CaseResult {
  std::string name;
  bool passed = false;
  std::string expected;  // "manual (reason containing \"x\")", "create(1), update(web-a)"
  std::string actual;    // "approve: within budget", "error: scripts/rollout/x.lua:3: ..."
};

// One item of a tests table that passed the common checks, for the kind to read further.
struct TestCaseItem {
  int index = 0;      // position in tests, from 1
  std::string name;   // its `name`, or "case <index>"
  std::string label;  // "tests[<index>] (<name>)": how the kind's problems begin
};

// The checker of a kind's tests tables. Stateless; safe to share.
class TestTable {
 public:
  // Reads the case at stack index `item` of `L` (called inside a LuaState call, so it may
  // raise Lua errors). Returns "" or what is wrong with it, beginning with item.label.
  using ReadCase = std::function<std::string(lua_State* L, int item, const TestCaseItem& c)>;

  // `case_fields`: every field a case of this kind may have; must outlive the checker.
  constexpr explicit TestTable(std::span<const char* const> case_fields) : case_fields_(case_fields) {}

  // Checks the `tests` field of the script table at stack index `script` and calls
  // `read_case` on each item in order until one is refused. Returns "" or the first
  // problem. A missing tests field is no cases. Call inside LuaState::call.
  std::string read(lua_State* L, int script, const ReadCase& read_case) const;

 private:
  std::span<const char* const> case_fields_;
};

// A tests table runs for at most this many deadlines in all, and never longer than
// kMaxTestRunTime (each case has its own deadline too), so a file of thousands of cases,
// or of cases that spin, cannot hold up a reload or the host's start for long. Generous:
// each shipped script's tests take well under a second, also under sanitizers.
inline constexpr int kTestRunDeadlines = 100;
inline constexpr std::chrono::seconds kMaxTestRunTime{10};

// The time budget of one tests table run with `limits`.
inline std::chrono::milliseconds testRunBudget(const LuaLimits& limits) {
  return std::min<std::chrono::milliseconds>(kTestRunDeadlines * limits.deadline, kMaxTestRunTime);
}

// `script` together with the libs of `libs`: the set a script's tests run against.
std::shared_ptr<ScriptSet> testSetOf(const ScriptFile& script, const ScriptSet& libs);

// Loads `script` with the libs of `libs` into a fresh Interpreter (the production loader and
// sandbox) on a FakeClock and runs every case of its tests table through `run_case`, with
// the clock set back to kDefaultTestNow before each case. An error Status means the file
// or its tests table could not be loaded; failing cases are results with passed == false.
// Cases left when testRunBudget(limits) has passed are not run: one failing result says so.
//
// Interpreter provides
//   static Result<std::unique_ptr<Interpreter>> create(std::shared_ptr<const ScriptSet>,
//                                                      const LuaLimits&, const Clock&);
//   Result<std::vector<Case>> testCases(const ScriptFile&);   // Case has `name`
// and run_case is CaseResult(Interpreter&, const ScriptFile&, const Case&, FakeClock&);
// the result's name is set here.
template <class Interpreter, class RunCase>
Result<std::vector<CaseResult>> runTestTable(const ScriptFile& script, const ScriptSet& libs, const LuaLimits& limits,
                                             RunCase run_case) {
  std::shared_ptr<ScriptSet> set = testSetOf(script, libs);
  const ScriptFile& file = set->files.at(script.path);
  TIDE_ASSIGN_OR_RETURN(const TimePoint default_now, parseTimestamp(kDefaultTestNow));
  FakeClock clock(default_now);
  TIDE_ASSIGN_OR_RETURN(auto interpreter, Interpreter::create(set, limits, clock));
  TIDE_ASSIGN_OR_RETURN(auto cases, interpreter->testCases(file));

  std::vector<CaseResult> results;
  const auto budget = testRunBudget(limits);
  const auto stop_at = std::chrono::steady_clock::now() + budget;
  for (const auto& c : cases) {
    if (std::chrono::steady_clock::now() >= stop_at) {
      CaseResult rest;
      rest.name = "(the rest)";
      rest.expected = "every case to run";
      rest.actual = "not run: " + std::to_string(cases.size() - results.size()) + " cases left after " +
                    std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(budget).count()) +
                    " ms, the time budget of a tests table";
      results.push_back(std::move(rest));
      break;
    }
    clock.set(default_now);
    CaseResult result = run_case(*interpreter, file, c, clock);
    result.name = c.name;
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace tide::lua
