#pragma once
// One LuaState with the strategies of a ScriptSet loaded, reconciling rollout snapshots.
// The production StrategyEngine and the strategy test runner both run strategies through
// this class, so a strategy's tests exercise exactly the code path that drives real
// rollouts.
//
// Thread-safety: none; it owns a LuaState (see lua_state.h).

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/clock.h"
#include "host/core/status.h"
#include "host/lua/runtime/lua_state.h"
#include "host/lua/runtime/script_loader.h"
#include "host/lua/runtime/script_set.h"
#include "host/lua/strategy/strategy_engine.h"
#include "host/lua/strategy/strategy_params.h"

namespace tide::lua {

// The snapshot with every documented field present (strings default to "", tables to {},
// previous, operation and last_operation to null) and the derived fields filled in: each
// instance's version (from deployment_id when missing) and ready (RUNNING, healthy and no
// operation in flight), count (= deployment.count), counts {total, new, old, ready,
// new_ready, old_ready, in_flight}, params, now and now_unix (from each other, else from
// `clock`), signals (all five, false by default). kInvalidArgument when a field has the
// wrong type.
Result<Json> normalizeRolloutSnapshot(Json snapshot, const Json& params, const Clock& clock);

// What a strategy's deadline grows by for each instance in its snapshot: a script has to
// read them all at least once, and a plan holds up to 20,000 in a rollout (10,000 new beside
// 10,000 old). The host's own time building and pushing the snapshot never counts.
inline constexpr std::chrono::microseconds kStrategyDeadlinePerInstance{20};

// One case of a strategy's `tests` table.
struct StrategyTestCase {
  int index = 0;  // position in tests, from 1
  std::string name;
  Json r = Json::object();                            // the fixture as written
  std::optional<std::vector<StrategyAction>> expect;  // exactly these actions, in any order
  bool has_check = false;                             // check(actions, state) decides too
  Json expect_state;                                  // null, or fields r.state must end with
  std::string expect_error;                           // reconcile must fail with this text
};

class StrategyInterpreter {
 public:
  // Loads every strategy of `set`. A strategy that fails to load (or declares invalid
  // params) does not fail creation: its calls report the load error. `clock` must outlive
  // the interpreter.
  static Result<std::unique_ptr<StrategyInterpreter>> create(std::shared_ptr<const ScriptSet> set,
                                                             const LuaLimits& limits, const Clock& clock);

  const ScriptSet& scripts() const { return *set_; }
  LuaState& state() { return *state_; }

  // See StrategyEngine::reconcile, StrategyEngine::resolveParams and StrategyEngine::declaredParams.
  Result<StrategyResult> reconcile(const ScriptFile& strategy, Json snapshot);
  Result<Json> resolveParams(const ScriptFile& strategy, const Json& plan_params, const Json& deployment_params) const;
  Result<ParamSpecs> declaredParams(const ScriptFile& strategy) const;

  // The cases of `strategy`'s tests table (empty when it has none).
  Result<std::vector<StrategyTestCase>> testCases(const ScriptFile& strategy);
  // Runs the check function of test case `index` on `result`: "" when it passed (returned
  // anything but false), else why not.
  std::string runCheck(const ScriptFile& strategy, int index, const StrategyResult& result);

 private:
  struct Loaded {
    LoadedScript script;
    ParamSpecs params;
  };

  StrategyInterpreter(std::shared_ptr<const ScriptSet> set, std::unique_ptr<LuaState> state, const Clock& clock);
  Result<const Loaded*> find(const ScriptFile& strategy) const;

  std::shared_ptr<const ScriptSet> set_;
  std::unique_ptr<LuaState> state_;
  const Clock& clock_;
  std::map<std::string, Loaded> loaded_;       // by path
  std::map<std::string, Status> load_errors_;  // by path
  std::vector<LogRecord>* logs_ = nullptr;     // where the running call's logs go
};

}  // namespace tide::lua
