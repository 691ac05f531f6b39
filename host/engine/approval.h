#pragma once
// The approval stage (docs/architecture.md#approval-stage, docs/architecture.md#approval): every PENDING operation
// first gets its placement reserved (CREATE, RELOCATE, and RESTART or UPDATE of an instance that runs nowhere), then the approval
// policies decide. Decisions are recorded with the operation; the verdict moves it to APPROVED, REJECTED (reservation
// released) or PENDING_APPROVAL, where it waits for a person (POST /v1/operations/{id}/approve|reject).
//
// An operation that cannot be placed stays PENDING with the scheduler's explanation as
// its message and is tried again on the next pass. Nothing is placed on a node the drivers
// cannot reach (docs/architecture.md#losing-a-node).
//
// Thread-safety: none; the control loop's thread owns it.

#include <map>
#include <optional>
#include <set>
#include <string>

#include "host/core/clock.h"
#include "host/engine/node_liveness.h"
#include "host/engine/world.h"
#include "host/ledger/ledger.h"
#include "host/lua/policy/policy_engine.h"

namespace tide::engine {

struct ApprovalOptions {
  std::string actor = "approval";
  // Operations decided per pass at most (limits.approval_chunk), so that a deployment of
  // 10,000 instances does not hold the loop in one pass: what is approved reaches the
  // executor after each chunk, and the next pass goes on after the last one decided. The
  // re-evaluation of what waits in PENDING_APPROVAL after the policies changed is bounded
  // the same way, on its own count.
  int max_per_pass = 500;
};

class ApprovalStage {
 public:
  // Everything must outlive the stage.
  ApprovalStage(ledger::Ledger& ledger, lua::PolicyEngine& policies, const Clock& clock, ApprovalOptions options);

  // Decides up to max_per_pass PENDING operations of `world`, in meta instance name order
  // starting after the last one the previous pass decided (so operations that cannot be
  // placed do not starve the others); releases reservations of operations that ended
  // without using them. Places nothing on the nodes `unreachable` names. Returns how many
  // operations changed state.
  int pass(const World& world, const UnreachableNodes& unreachable);

  // Whether the last pass stopped at max_per_pass with PENDING operations, or waiting ones
  // to re-evaluate, left.
  bool backlog() const { return !resume_after_.empty() || reevaluation_.pending; }

  // The op snapshot policies see (docs/lua.md), for the operation as `world` shows it.
  static Json opSnapshot(const World& world, const model::Operation& op, const std::string& node);

 private:
  Status decide(const World& world, sched::ClusterSnapshot& snapshot, const InstanceView& view,
                const model::Operation& op);
  // Evaluates up to max_per_pass operations waiting in PENDING_APPROVAL that script set
  // `script_set_version` has not decided (their decision names an older one), going on after
  // the one the previous pass stopped at; returns how many changed state. While some are
  // left beyond the chunk, reevaluation_.pending asks for the next pass at once; once a pass
  // leaves none undecided, the version is done. An operation whose decision could not be
  // written (it changed meanwhile) is still undecided, so the next pass tries it again; one
  // decided is never evaluated again for the same version.
  int reevaluateWaiting(const World& world, uint64_t script_set_version);
  // Runs the policies on `op` (placed on `node`) and records their decisions. The decision
  // records are the audit trail of why an operation may run, so when they cannot be written
  // the evaluation fails closed: an "operation.decision_unrecorded" event says why and the
  // error is returned, leaving `op` undecided for the next pass.
  Result<lua::Evaluation> evaluate(const World& world, const model::Operation& op, const std::string& node);
  // Writes `evaluation` as `op`'s decision, keeping the approvals `given`, and moves `op` to
  // the state it leads to; whether its state changed. With `generation`, nothing is written
  // if `op` moved since (kConflict).
  Result<bool> conclude(const World& world, const model::Operation& op, const lua::Evaluation& evaluation,
                  std::vector<model::GivenApproval> given, ledger::Generation generation);
  // Gives `op`, which now waits in PENDING_APPROVAL, the approvals people gave its whole
  // rollout (tide deployment approve; model::rolloutApprovals), each recorded by the ledger
  // as if its actor approved `op`, under the same rule. One the rule refuses (a role or
  // distinct_from the policies ask for) leaves `op` waiting for people, with an
  // "operation.rollout_approval_refused" event saying why.
  void giveRolloutApprovals(const World& world, const model::Operation& op);
  // Reserves placement for `op` if it needs one it does not have; returns the node it
  // runs on (empty when it runs nowhere).
  Result<std::string> reserve(const World& world, sched::ClusterSnapshot& snapshot, const InstanceView& view,
                              model::Operation& op);
  // An UPDATE of an instance that runs, whose deployment's plan asks for other resources than
  // it reserves, re-reserves them on its node (OperationRecords::resizeForOperation) when the node can
  // hold the growth, else kUnprocessable naming the node and what it lacks: the UPDATE waits
  // PENDING, as a placement that does not fit (docs/architecture.md#changing-a-plan).
  Status resizeInPlace(const World& world, sched::ClusterSnapshot& snapshot, const InstanceView& view,
                       model::Operation& op);
  void releaseUnused(const World& world);
  // The instances of `plan` that belong to other deployments than `deployment`, for
  // anti-affinity between versions; computed once per pass and pair, not once per
  // operation (which made a pass quadratic in the plan's size).
  const std::vector<std::string>& otherVersions(const World& world, const std::string& plan,
                                                const std::string& deployment);
  // `unplaceable` with the capabilities `plan` asks for that no node has named first (a plan
  // accepted with undeclared capabilities waits for them: docs/mrds.md). The nodes'
  // capabilities are gathered once per pass.
  Status namingMissingCapabilities(const World& world, const model::Plan& plan, const Status& unplaceable);

  ledger::Ledger& ledger_;
  lua::PolicyEngine& policies_;
  const Clock& clock_;
  ApprovalOptions options_;
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> other_versions_;  // this pass's
  std::optional<std::set<std::string>> node_capabilities_;  // this pass's, once asked for
  std::string resume_after_;  // the meta instance the last pass stopped after; "" when it finished
  // Re-evaluation after a change of the script set, possibly over several passes.
  struct Reevaluation {
    uint64_t done_version = 0;  // the script set every waiting operation has been evaluated against
    bool pending = false;       // a newer one has operations left to evaluate
    std::string resume_after;   // the meta instance the last pass stopped after
  };
  Reevaluation reevaluation_;
};

// What an operation installs: the coordinates of its deployment (intent), else of the
// meta instance's deployment, else what it runs now.
Json targetCoordinates(const World& world, const InstanceView& view, const model::Operation& op);

// The op snapshot policies would see for an operation of `type` that a deployment `next` of
// `plan`, not yet added, would ask for on behalf of `requested_by`, replacing instances that
// run `current` (nullptr: none), on a node not yet chosen (dry runs, docs/api.md#dry-runs).
// The same shape as ApprovalStage::opSnapshot, with id 0 and no meta instance.
Json previewOpSnapshot(const model::Plan& plan, const model::Deployment* current, const model::Deployment& next,
                       model::OperationType type, const std::string& requested_by);

}  // namespace tide::engine
