#pragma once
// Plans and their deployments (docs/architecture.md#records-and-states).

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/core/status.h"
#include "host/ledger/ledger_types.h"

namespace tide::ledger {

// What scalePlanToZero asked for.
struct PlanTeardown {
  std::vector<Operation> operations;               // a DELETE per live meta instance, in instance order
  std::vector<std::string> cancelled_deployments;  // the plan's unfinished deployments, now CANCELLED
};

struct RestoreRequest {
  DeploymentState final_state;  // ROLLED_BACK (rollback) or FAILED (abort)
  std::string message;      // the deployment's terminal message
  std::string kind;         // rollback | abort
  std::string reason;
  // rollback only: the earlier deployment to restore instead of the newest earlier one that
  // completed. It must have completed and not have been rolled back (kNotFound for an
  // unknown id, kUnprocessable otherwise, naming why); the completed deployments between it
  // and the one rolled back are rolled back with it (ROLLED_BACK, "rolled back past by ..."),
  // so a later rollback does not bring one of them back.
  std::string to;
};

// A rollout held by a runtime hook (docs/architecture.md#runtime-hooks): operation.before
// vetoed or delayed one of its operations, which waits APPROVED.
struct HookHold {
  int64_t operation = 0;  // the operation held (the oldest, when several are)
  std::string kind;       // veto | delay
  std::string message;    // the operation's: "held by hook <name>: <reason>", "delayed by hook ..."
};

// The ledger's plans and deployments; Ledger::plans(). Every method keeps ledger.h's contracts.
class PlanRecords : public Repository {
 public:
  explicit PlanRecords(LedgerCore& core) : Repository(core) {}
  PlanRecords(const PlanRecords&) = delete;
  PlanRecords& operator=(const PlanRecords&) = delete;

  // --- plans -------------------------------------------------------------------------------
  // A matching capability name that is declared must have the rule's type (kUnprocessable
  // otherwise). One that is not declared is accepted, reported in `warnings` and a
  // "plan.warning" event: the plan's CREATEs wait until a node has it (docs/mrds.md).
  Result<Plan> createPlan(const Plan& plan, const std::string& actor, std::vector<ErrorDetail>* warnings = nullptr);
  // Changes the plan named `plan.name` for the deployments added from now on
  // (docs/architecture.md#changing-a-plan): its applications, matching capabilities,
  // strategy, approval policies and placement. Deployments added before keep the plan they
  // were made with (Deployment::plan_snapshot). Checked as createPlan checks, and:
  // - kPreconditionFailed when `generation` is given and the plan has moved past it;
  // - kUnprocessable naming the field when the namespace or service name would change, or
  //   when the change would strand live instances: an application removed that they run,
  //   or a capability rule that a node running one of them does not meet (the details
  //   name the instances and their nodes).
  // Nothing to change: no write, no event, `changed` empty. Otherwise one transaction
  // bumps the generation and appends "plan.updated" {changed, from_generation, generation}.
  Result<PlanChange> updatePlan(const Plan& plan, Generation generation, const std::string& actor);
  Result<Plan> getPlan(const std::string& name);
  // Keeps the split `plan`'s strategy last asked for (Plan::traffic_route; docs/architecture.md#traffic),
  // so a restarted host re-applies it. No generation bump, no event (the engine's
  // traffic.applied events tell the story); a no-op when unchanged.
  Status setPlanTrafficRoute(const std::string& plan, const Json& route, const std::string& actor);
  Result<Page<Plan>> listPlans(const ListOptions& options);  // filters: namespace, state
  Result<Plan> setPlanState(const std::string& name, PlanState state, Generation generation, const std::string& actor,
                            const std::string& message = "");
  // Refused (kConflict) while the plan has live meta instances or unfinished deployments.
  Status deletePlan(const std::string& name, Generation generation, const std::string& actor);
  // Tears plan `name` down in one transaction (docs/architecture.md#scaling-a-plan-to-zero):
  // its unfinished deployments become CANCELLED and their operations are cancelled as an
  // abort cancels them, so no strategy asks for more instances; then every live meta
  // instance gets `delete_operation` (a DELETE; its meta_instance is filled in) unless it
  // has an unfinished DELETE already, which is answered instead. The DELETEs go through the
  // policies like any other operation. kConflict naming every instance that cannot take a
  // DELETE now (another operation of it has started), and nothing is written. Appends
  // "plan.scale_to_zero" {operations, cancelled_deployments, reason}.
  Result<PlanTeardown> scalePlanToZero(const std::string& name, const Operation& delete_operation,
                                       const std::string& reason, const std::string& actor);

  // --- deployments -------------------------------------------------------------------------
  // `deployment.plan` names an ACTIVE plan; every payload name must be one of the plan's
  // applications. Starts PENDING.
  Result<Deployment> addDeployment(const Deployment& deployment, const std::string& actor);
  Result<Deployment> getDeployment(const std::string& plan, const std::string& deployment_id);
  Result<Page<Deployment>> listDeployments(const ListOptions& options);  // filters: plan, state
  Result<Deployment> setDeploymentState(const std::string& plan, const std::string& deployment_id,
                                        DeploymentState state, Generation generation, const std::string& actor,
                                        const std::string& message = "");
  Result<Deployment> setRolloutState(const std::string& plan, const std::string& deployment_id,
                                     const Json& rollout_state, Generation generation, const std::string& actor);

  // Rollout controls (docs/architecture.md#rollouts), each one transaction with a `deployment.control` event
  // naming the actor. `control`: promote | promote_full (one-shot signals for the
  // strategy; also lift a hold), pause (a hold: PAUSED "paused by <actor>", the strategy is
  // not called until resume), resume, retry (a FAILED newest deployment → IN_PROGRESS
  // with its rollout state reset), abort and rollback (restoreDeployment). kConflict when
  // the deployment's state does not allow the control, naming the state.
  // `rollback_to`: for rollback, the deployment to restore (RestoreRequest::to).
  Result<Deployment> controlDeployment(const std::string& plan, const std::string& deployment_id,
                                       const std::string& control, const std::string& reason, const std::string& actor,
                                       const std::string& rollback_to = "");
  // Ends the deployment in `final_state`, cancels its unfinished operations (RUNNING ones
  // too, but a DELETE that has started, which runs to its end), and re-opens the newest earlier deployment that
  // completed (IN_PROGRESS, rollout state reset, signals {"restore": {from, kind, reason, at}}) so its strategy brings
  // the instances back. kUnprocessable for a rollback with nothing to roll back to (an abort without one just ends the
  // deployment).
  Result<Deployment> restoreDeployment(const std::string& plan, const std::string& deployment_id,
                                       const RestoreRequest& request, const std::string& actor);
  // Keeps `approval` as an approval of the deployment's whole rollout
  // (model::rolloutApprovals), with its actor's minters and the time, and a
  // `deployment.control` event (control "approve"). Once per actor: a second is a no-op.
  // kConflict for a rollout that is over.
  Result<Deployment> approveRollout(const std::string& plan, const std::string& deployment_id,
                                    model::GivenApproval approval);
  // Removes the one-shot signals the strategy saw (`seen`: the deployment's signals when
  // the snapshot was taken); ones sent again since, and hold/restore/hook_hold, stay.
  Result<Deployment> consumeSignals(const std::string& plan, const std::string& deployment_id, const Json& seen,
                                    const std::string& actor);
  // Changes the message of a deployment that stays in its state (a paused rollout waiting
  // for something else now), with a `deployment.message` event.
  Result<Deployment> setDeploymentMessage(const std::string& plan, const std::string& deployment_id,
                                          const std::string& message, const std::string& actor);
  // A deployment being restored (or superseded while restoring) → COMPLETED with `message`,
  // its "restore" signal removed.
  Result<Deployment> finishRestore(const std::string& plan, const std::string& deployment_id,
                                   const std::string& message, const std::string& actor);
  // Holds an IN_PROGRESS or PAUSED deployment for a hook, in one transaction: PAUSED with
  // `hold.message` (so the held time counts as paused, never as progress), and the signal
  // model::kHookHoldSignal = {operation, kind, message, since}. A `deployment.held` event
  // {operation, kind, message} is written when the hold begins and when its message changes;
  // `since` stays that of the hold in force. kConflict in any other state.
  Result<Deployment> holdForHook(const std::string& plan, const std::string& deployment_id, const HookHold& hold,
                                 const std::string& actor);
  // Ends a hook's hold: the signal removed and a `deployment.released` event {operation, kind,
  // message, held_seconds}. The deployment stays PAUSED ("hold ended: <message>") until its
  // strategy, asked again, resumes or pauses it. No change when it is not held.
  Result<Deployment> releaseHookHold(const std::string& plan, const std::string& deployment_id,
                                     const std::string& actor);
};

}  // namespace tide::ledger
