#pragma once
// One LuaState with the policies of a ScriptSet loaded, running them against ops. The
// production PolicyEngine and the policy test runner both run policies through this
// class, so a policy's tests exercise exactly the code path that decides real operations.
//
// Thread-safety: none; it owns a LuaState (see lua_state.h).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/clock.h"
#include "host/core/status.h"
#include "host/lua/policy/policy_data.h"
#include "host/lua/policy/policy_verdict.h"
#include "host/lua/runtime/lua_state.h"
#include "host/lua/runtime/script_loader.h"
#include "host/lua/runtime/script_set.h"
#include "host/model/approvals.h"

namespace tide::lua {

// What one policy said about one op.
struct PolicyRun {
  bool applicable = true;  // false: applies(op) returned false; nothing else is set
  Verdict verdict = Verdict::kManual;
  std::string reason;
  model::ApprovalRequirement requirement;  // what manual{...} asked for (one approval otherwise)
  LuaErrorClass error_class = LuaErrorClass::kNone;  // set: verdict is manual, reason the error
  int64_t duration_us = 0;
};

// One case of a policy's `tests` table.
struct PolicyTestCase {
  std::string name;
  Json op = Json::object();
  Json ctx = Json::object();  // a SnapshotDataSource fixture
  std::string expect;         // approve | deny | manual | abstain | not_applicable
  std::string reason;         // optional: text the reason must contain
};

class PolicyInterpreter {
 public:
  // Loads every policy of `set`. A policy that fails to load does not fail creation: its
  // runs report the load error (fail closed). `clock` must outlive the interpreter.
  static Result<std::unique_ptr<PolicyInterpreter>> create(std::shared_ptr<const ScriptSet> set,
                                                           const LuaLimits& limits, const Clock& clock);

  const ScriptSet& scripts() const { return *set_; }
  LuaState& state() { return *state_; }

  // The op the following run() calls see, as one shared read-only snapshot with every
  // documented field present (docs/lua.md): strings default to "", tables to {}, attempt
  // to 1. Unknown fields are kept.
  LuaError setOp(const Json& op);
  // Runs applies(op) and decide(op, ctx) of `policy`, whose ctx reads `data`. An error,
  // timeout or memory error yields verdict manual with the error as the reason.
  PolicyRun run(const ScriptFile& policy, PolicyDataSource& data);
  // Collects what scripts log (print, ctx.log.*) until called again with null.
  void setLogCollector(std::vector<LogRecord>* logs) { logs_ = logs; }

  // The cases of `policy`'s tests table (empty when it has none).
  Result<std::vector<PolicyTestCase>> testCases(const ScriptFile& policy);

 private:
  PolicyInterpreter(std::shared_ptr<const ScriptSet> set, std::unique_ptr<LuaState> state);

  std::shared_ptr<const ScriptSet> set_;
  std::unique_ptr<LuaState> state_;
  std::map<std::string, LoadedScript> loaded_;   // by path
  std::map<std::string, LuaError> load_errors_;  // by path
  int op_ref_ = -2;
  int ctx_ref_ = -2;
  std::vector<LogRecord>* logs_ = nullptr;
};

}  // namespace tide::lua
