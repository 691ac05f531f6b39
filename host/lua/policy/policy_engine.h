#pragma once
// Approval policies deciding operations (docs/architecture.md#approval).
//
// evaluate() runs every applicable policy of the current ScriptSet (or only those a plan
// names in approval.policies) against an op snapshot and combines their verdicts. It never
// fails: a policy that errors, times out or runs out of memory votes `manual` with the
// error as its reason, and a policy a plan names that is not loaded does the same.
//
// Thread-safety: none. Each evaluating thread owns its PolicyEngine; the ScriptSetProvider
// is shared (ScriptRegistry is thread-safe). When the provider publishes a new version the
// engine rebuilds its Lua state on the next evaluate().

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/clock.h"
#include "host/lua/policy/policy_data.h"
#include "host/lua/policy/policy_interpreter.h"
#include "host/lua/policy/policy_verdict.h"
#include "host/lua/runtime/lua_state.h"
#include "host/lua/runtime/script_set.h"
#include "host/lua/runtime/versioned_build.h"
#include "host/model/records.h"

namespace tide::lua {

struct PolicyEngineOptions {
  LuaLimits limits;
  // When no policy approves: kPendingApproval (manual, the default) or kRejected (deny).
  Outcome default_outcome = Outcome::kPendingApproval;
};

// One policy's part in an evaluation. `record` is ready for the ledger once the caller
// sets operation_id (0 for dry runs).
struct PolicyDecision {
  std::string level;  // advisory | soft | hard
  model::Decision record;
};

struct Evaluation {
  Outcome outcome = Outcome::kPendingApproval;
  std::string summary;
  bool overridable = false;               // REJECTED by soft denies only
  std::vector<PolicyDecision> decisions;  // applicable policies, by name
  std::vector<LogRecord> logs;            // what the policies logged
  uint64_t script_set_version = 0;
  std::string at;  // RFC 3339
};

// {"outcome", "summary", "overridable", "decisions": [{..., "level"}], "logs", ...}: the
// shape of the dry-run API response and `tide policy eval -o json`.
void to_json(Json& j, const Evaluation& evaluation);

class PolicyEngine {
 public:
  // `scripts` and `clock` must outlive the engine.
  PolicyEngine(const ScriptSetProvider& scripts, const Clock& clock, PolicyEngineOptions options = {});
  ~PolicyEngine();

  // `op` is the snapshot documented in docs/lua.md; `data` answers ctx.* for this call.
  Evaluation evaluate(const Json& op, PolicyDataSource& data);

  // The ScriptSet version the engine's state was built from (0 before the first evaluate).
  uint64_t loadedVersion() const;
  // Bytes held by the engine's Lua state (0 before the first evaluate).
  size_t luaMemoryUsed() const;

 private:
  const ScriptSetProvider& scripts_;
  const Clock& clock_;
  PolicyEngineOptions options_;
  VersionedBuild<PolicyInterpreter> interpreter_;
};

}  // namespace tide::lua
