#pragma once
// Approval policies deciding operations (docs/architecture.md#approval).
//
// evaluate() runs every applicable policy of the current ScriptSet against an op snapshot
// and combines their verdicts. A plan's approval.policies adds the advisory policies it
// names; it never removes a hard or soft one. evaluate() never fails: a policy that errors,
// times out or runs out of memory votes `manual` (`deny` when the default outcome is
// kRejected) with the error as its reason, and so do a policy file that failed validation
// with no earlier good version (ScriptSet::failed) and a policy a plan names that is not
// loaded.
//
// The engine keeps one Lua state with every policy loaded and reuses it across
// evaluations. It rebuilds the state on the next evaluate() when the provider publishes a
// new version, and after an evaluation in which a policy hit its deadline or memory limit:
// the interrupted policy may have left its top-level locals half-updated, and one that
// leaks would otherwise fail every later call.
//
// Thread-safety: none. Each evaluating thread owns its PolicyEngine (or borrows one from a
// PolicyPool, policy_pool.h); the ScriptSetProvider is shared (ScriptRegistry is
// thread-safe).

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
  bool overridable = false;               // PENDING_APPROVAL because of soft denies: an approval must override
  model::ApprovalRequirement approvals;   // what PENDING_APPROVAL needs
  std::vector<PolicyDecision> decisions;  // applicable policies, by name
  std::vector<LogRecord> logs;            // what the policies logged
  uint64_t script_set_version = 0;
  std::string at;  // RFC 3339
};

// {"outcome", "summary", "overridable", "decisions": [{..., "level"}], "logs", ...}: the
// shape of the dry-run API response and `tide policy eval -o json`.
void to_json(Json& j, const Evaluation& evaluation);

// One policy an evaluation asks (policy_engine.cpp).
struct SelectedPolicy;

class PolicyEngine {
 public:
  // `scripts` and `clock` must outlive the engine.
  PolicyEngine(const ScriptSetProvider& scripts, const Clock& clock, PolicyEngineOptions options = {});
  ~PolicyEngine();

  // `op` is the snapshot documented in docs/lua.md; `data` answers ctx.* for this call.
  Evaluation evaluate(const Json& op, PolicyDataSource& data);
  // The same, with `clock` as what this evaluation's policies read as now (ctx.now(),
  // os.time(), os.date()) and its `at`: a dry run at a fixture's time. The policies' top-level
  // code ran when the state was built and read the engine's own clock.
  Evaluation evaluate(const Json& op, PolicyDataSource& data, const Clock& clock);

  // The version of the provider's current ScriptSet: what the next evaluate() runs.
  uint64_t currentVersion() const { return scripts_.current()->version; }
  // The ScriptSet version the engine's state was built from (0 before the first evaluate
  // and after one that discarded the state).
  uint64_t loadedVersion() const;
  // How many times the engine has built its Lua state.
  uint64_t builds() const { return interpreter_.builds(); }
  // Bytes held by the engine's Lua state (0 before the first evaluate).
  size_t luaMemoryUsed() const;

 private:
  // The policies asked when the plan lists none, as selected from `set`: kept while `set`
  // stays current, since nearly every evaluation asks exactly those.
  const std::vector<SelectedPolicy>& defaultSelection(const std::shared_ptr<const ScriptSet>& set);

  const ScriptSetProvider& scripts_;
  const Clock& clock_;
  PolicyEngineOptions options_;
  VersionedBuild<PolicyInterpreter> interpreter_;
  std::shared_ptr<const ScriptSet> default_selection_set_;
  std::vector<SelectedPolicy> default_selection_;
};

}  // namespace tide::lua
