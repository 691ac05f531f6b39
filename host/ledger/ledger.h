#pragma once
// The ledger: tide's durable record of what exists and what should happen (docs/architecture.md#records-and-states).
//
// Contracts every method keeps:
// - All-or-nothing: each call is one transaction; on error nothing is written.
// - Every create and every state change appends an event in the same transaction
//   (hash-chained, see Event). State changes are checked against transitions.h.
// - Updates that take a `Generation` fail with kConflict when the record's generation
//   moved since the caller read it (optimistic concurrency); nullopt means "whatever it is".
// - Deletes of user-facing records are soft: the row stays with deleted_at set, and the
//   name becomes free again.
// - Node remaining resources are derived on every read from total − system reserved −
//   reservations of runtime instances that are not TERMINATED/FAILED; no counter can drift.
//
// Thread-safety: a Ledger may be shared by any number of threads. Writes are serialized
// on one connection and group-committed (docs/architecture.md#the-ledger): writes of
// several threads that queue up together share one transaction, each in its own
// savepoint (a failing write rolls back alone), and one commit (one fsync); a write
// returns once its group is durable, so callers see no difference but speed. Reads of a
// file ledger run on a small pool of their own WAL connections and never wait for a
// write; they see what was committed. waitForEvents() blocks without holding a lock.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "host/core/clock.h"
#include "host/core/status.h"
#include "host/model/approvals.h"
#include "host/model/audit.h"
#include "host/model/manifest.h"
#include "host/model/records.h"
#include "host/model/transitions.h"

namespace soci {
class session;
}

namespace tide::ledger {

// The ledger stores host/model's records and names them unqualified.
using model::ApiToken;
using model::Application;
using model::Capability;
using model::CapabilityMatch;
using model::Cluster;
using model::ClusterState;
using model::ControlHalt;
using model::Decision;
using model::Deployment;
using model::DeploymentState;
using model::Event;
using model::HealthCheck;
using model::Json;
using model::LocalVolume;
using model::Manifest;
using model::Meta;
using model::MetaInstance;
using model::MetaState;
using model::Node;
using model::NodeState;
using model::Operation;
using model::OperationState;
using model::OperationType;
using model::PayloadCoordinates;
using model::PersistentVolume;
using model::Plan;
using model::PlanState;
using model::Port;
using model::RecordKind;
using model::Resources;
using model::RuntimeInstance;
using model::RuntimeState;
using model::ScriptVersion;
using model::StrategyRef;

class Db;

using Generation = std::optional<int64_t>;

// Keyset pagination: items with id (or seq) greater than `after`, at most `limit`.
struct ListOptions {
  int64_t limit = 100;  // clamped to [1, kMaxPageSize]
  int64_t after = 0;
  // Equality filters; each list method documents the keys it accepts and rejects others.
  std::map<std::string, std::string> filters;
};

inline constexpr int64_t kMaxPageSize = 1000;

template <class T>
struct Page {
  std::vector<T> items;
  int64_t next_after = 0;  // pass as `after` for the next page; 0 when this was the last
};

// What applyManifest created, by kind, in manifest order, and what it accepted with a
// warning (each with its manifest location).
struct AppliedManifest {
  std::vector<std::string> capabilities, clusters, nodes, plans, deployments;
  std::vector<ErrorDetail> warnings;
};

// What updatePlan did: the plan as it now is and the spec fields that changed (none: nothing
// was written).
struct PlanChange {
  model::Plan plan;
  std::vector<std::string> changed;
  std::vector<ErrorDetail> warnings;
};

// The cluster a node joins when its manifest names none, as MRDS's node files do
// (docs/mrds.md); insertNode creates it, with the process driver, the first time.
inline constexpr char kDefaultCluster[] = "default";

class Ledger {
 public:
  // Opens (creating if needed) the database at `url` — "sqlite://<path>",
  // "sqlite://:memory:" or "postgresql://..." — and applies pending migrations.
  // `clock` must outlive the Ledger.
  static Result<std::unique_ptr<Ledger>> open(const std::string& url, const Clock& clock);
  ~Ledger();

  int schemaVersion() const { return schema_version_; }

  // --- capabilities --------------------------------------------------------------------
  Result<Capability> createCapability(const Capability& capability, const std::string& actor);
  Result<Capability> getCapability(const std::string& name);
  Result<Page<Capability>> listCapabilities(const ListOptions& options);  // filters: type
  Status deleteCapability(const std::string& name, Generation generation, const std::string& actor);

  // --- clusters ------------------------------------------------------------------------
  Result<Cluster> createCluster(const Cluster& cluster, const std::string& actor);
  Result<Cluster> getCluster(const std::string& name);
  Result<Page<Cluster>> listClusters(const ListOptions& options);  // filters: state
  Result<Cluster> setClusterState(const std::string& name, ClusterState state, Generation generation,
                                  const std::string& actor, const std::string& message = "");
  // Refused (kConflict) while live nodes belong to the cluster.
  Status deleteCluster(const std::string& name, Generation generation, const std::string& actor);

  // --- nodes ---------------------------------------------------------------------------
  // The node's cluster must exist (kUnprocessable otherwise); a node naming none joins
  // kDefaultCluster, created on first use. It starts ALLOCATED. Capability names that are
  // not declared are kept and reported in `warnings` (and a "node.warning" event): IN, EQ
  // and NOT_IN rules match them by name; GTE and LTE need a declared type and score.
  Result<Node> createNode(const Node& node, const std::string& actor, std::vector<ErrorDetail>* warnings = nullptr);
  Result<Node> getNode(const std::string& name);
  Result<Page<Node>> listNodes(const ListOptions& options);  // filters: state, cluster, update_domain
  // Moving to DRAINING records `actor` as the node's drained_by; any other state clears it.
  Result<Node> setNodeState(const std::string& name, NodeState state, Generation generation, const std::string& actor,
                            const std::string& message = "");
  // Refused (kConflict) while the node holds runtime instances that are not terminal.
  Status deleteNode(const std::string& name, Generation generation, const std::string& actor);
  // The node's total resources as its agent measured them (docs/agents.md#clusters-and-nodes),
  // for a node whose manifest left `total` out (its total is zero): sets them, bumps the
  // generation and appends "node.resources_reported". Returns whether it wrote: a node whose
  // total is set already is left alone. kNotFound for an unknown node.
  Result<bool> fillNodeTotal(const std::string& name, const Resources& total, const std::string& actor);

  // --- plans ---------------------------------------------------------------------------
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
  // What scalePlanToZero asked for.
  struct PlanTeardown {
    std::vector<Operation> operations;               // a DELETE per live meta instance, in instance order
    std::vector<std::string> cancelled_deployments;  // the plan's unfinished deployments, now CANCELLED
  };
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

  // --- deployments ---------------------------------------------------------------------
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
  // Ends the deployment in `final_state`, cancels its unfinished operations (RUNNING ones
  // too, but a DELETE that has started, which runs to its end), and re-opens the newest earlier deployment that completed (IN_PROGRESS, rollout
  // state reset, signals {"restore": {from, kind, reason, at}}) so its strategy brings the
  // instances back. kUnprocessable for a rollback with nothing to roll back to (an abort
  // without one just ends the deployment).
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
  // A rollout held by a runtime hook (docs/architecture.md#runtime-hooks): operation.before
  // vetoed or delayed one of its operations, which waits APPROVED.
  struct HookHold {
    int64_t operation = 0;  // the operation held (the oldest, when several are)
    std::string kind;       // veto | delay
    std::string message;    // the operation's: "held by hook <name>: <reason>", "delayed by hook ..."
  };
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

  // --- meta instances ------------------------------------------------------------------
  // Creates `<service_name>-<random>` for the plan, belonging to `deployment_id`.
  Result<MetaInstance> createMetaInstance(const std::string& plan, const std::string& deployment_id,
                                          const std::string& actor);
  Result<MetaInstance> getMetaInstance(const std::string& name);
  Result<Page<MetaInstance>> listMetaInstances(const ListOptions& options);  // filters: plan, deployment_id, state
  Result<MetaInstance> setMetaInstanceState(const std::string& name, MetaState state, Generation generation,
                                            const std::string& actor, const std::string& message = "");
  // Moves a meta instance to another deployment of its plan: one that wants exactly the
  // coordinates it runs (adoption without an operation), or after an UPDATE installed them.
  Result<MetaInstance> setMetaInstanceDeployment(const std::string& name, const std::string& deployment_id,
                                                 const std::string& actor);
  // A new meta instance of `deployment_id` and its first operation (`operation.meta_instance`
  // is ignored), in one transaction, so a crash never leaves an instance nobody works on.
  Result<Operation> createInstanceWithOperation(const std::string& plan, const std::string& deployment_id,
                                                const Operation& operation, const std::string& actor);

  // --- runtime instances ---------------------------------------------------------------
  // Reserves `instance.reservation` on `instance.node` in the same transaction: refused
  // with kUnprocessable when the node's remaining resources cannot hold it, with
  // kConflict when the meta instance already has an active runtime instance and this one
  // is active too. Starts PENDING.
  Result<RuntimeInstance> createRuntimeInstance(const RuntimeInstance& instance, const std::string& actor);
  Result<RuntimeInstance> getRuntimeInstance(int64_t id);
  Result<Page<RuntimeInstance>> listRuntimeInstances(
      const ListOptions& options);  // filters: meta_instance, node, state, plan
  // Creates `instance` (as createRuntimeInstance) and records it as the target runtime
  // instance of operation `operation_id` in the same transaction: placement reserved at
  // approval survives a crash, and is never reserved twice for one operation.
  Result<RuntimeInstance> reserveForOperation(int64_t operation_id, const RuntimeInstance& instance,
                                              const std::string& actor);
  // An UPDATE whose deployment's plan asks for other resources than its instance's active
  // runtime instance reserves (docs/architecture.md#changing-a-plan), at approval, in one
  // transaction: the runtime instance's reservation becomes the larger of the two sizes in
  // each resource (a growth is held from now on, so nothing else takes the room before the
  // UPDATE runs; a shrink waits for the UPDATE) and the operation's target records
  // `resize` {runtime_instance, node, from, to, held}. The executor sets the reservation to
  // `to` in the write that installs the new coordinates; an UPDATE that ends otherwise
  // (REJECTED, CANCELLED, FAILED) gives the held growth back in the transaction that ends it.
  // kUnprocessable when the node cannot hold the growth (nothing written), kConflict unless
  // the operation is a PENDING UPDATE of an instance that runs; a second call returns the
  // operation as it is.
  Result<Operation> resizeForOperation(int64_t operation_id, const Resources& to, const std::string& actor);
  // Observed facts about a runtime instance; unset fields are left alone. A change of
  // `healthy` or `coordinates` appends an event; the rest (ports, handle) do not. With a
  // `generation`, kConflict when the record moved since (the control loop's writers pass
  // the one they read, so a stale judgement never overwrites a newer one).
  struct RuntimeUpdate {
    std::optional<std::string> driver_handle;
    std::optional<Json> ports;
    std::optional<Json> volumes;
    std::optional<Json> coordinates;
    std::optional<bool> healthy;
    std::optional<std::string> ready_since;
    std::optional<std::string> message;
    // A new reservation, on the same node (kConflict for a runtime instance that holds
    // none); a growth must fit the node (kUnprocessable). Appends `runtime_instance.resized`
    // with `reservation_reason`.
    std::optional<Resources> reservation;
    std::string reservation_reason;
  };
  Result<RuntimeInstance> updateRuntimeInstance(int64_t id, const RuntimeUpdate& update, Generation generation,
                                                const std::string& actor);
  // Runtime instances of meta instances that are not DELETED: every one that is not
  // TERMINATED/FAILED, and the newest of each meta instance whatever its state. What the
  // control loop looks at every pass, without the history.
  Result<std::vector<RuntimeInstance>> currentRuntimeInstances();
  // What currentRuntimeInstances(), latestOperations() and the meta instance list say about
  // the meta instances that rows `meta_ids`, `runtime_ids` and `operation_ids` belong to
  // (DELETED ones included, so a reader can drop them): for a reader that keeps those lists
  // in memory and refreshes only what the change feed names.
  struct InstanceSlice {
    std::vector<MetaInstance> metas;
    std::vector<RuntimeInstance> runtimes;
    std::vector<Operation> operations;
  };
  Result<InstanceSlice> instanceSlice(const std::vector<int64_t>& meta_ids, const std::vector<int64_t>& runtime_ids,
                                      const std::vector<int64_t>& operation_ids);
  // How the instances and operations of plan `plan` stand, counted by the database, so that
  // the plan view's summary costs the same at 10 instances as at 10,000. An instance's
  // runtime is its newest active one: RUNNING counts as running (and ready when healthy),
  // FAILED as failed, anything else or none as pending.
  struct PlanCounts {
    struct Instances {
      int64_t total = 0, running = 0, pending = 0, failed = 0, ready = 0;
      bool operator==(const Instances&) const = default;
    };
    Instances live;                                     // every instance not DELETED
    std::map<std::string, Instances> staying;           // by deployment id: neither DELETED nor MARKED_FOR_DELETION
    std::map<std::string, std::map<std::string, int64_t>> operations;  // type → state → count, every operation
  };
  Result<PlanCounts> planCounts(const std::string& plan);
  // A page of plan `plan`'s live (not DELETED) meta instances, in id order.
  Result<Page<MetaInstance>> livePlanInstances(const std::string& plan, const ListOptions& options);
  // Makes runtime instance `id` the active one of its meta instance and the previously
  // active one passive, in one transaction (the switch of a make-before-break RELOCATE).
  Result<RuntimeInstance> activateRuntimeInstance(int64_t id, const std::string& actor);
  // Moving to TERMINATED or FAILED releases the reservation in the same transaction.
  Result<RuntimeInstance> setRuntimeInstanceState(int64_t id, RuntimeState state, Generation generation,
                                                  const std::string& actor, const std::string& message = "");

  // --- operations ----------------------------------------------------------------------
  // At most one non-terminal operation per meta instance: a new one cancels an existing
  // PENDING / PENDING_APPROVAL one of strictly lower priority, otherwise kConflict. One that
  // people ask for (intent "user") must fit the instance (model::checkOperationFits), else
  // kConflict naming both and nothing is written; the controller's come from a strategy's
  // judgment and, when they do not fit, fail in the executor where the rollout sees it.
  Result<Operation> createOperation(const Operation& operation, const std::string& actor);
  Result<Operation> getOperation(int64_t id);
  // filters: state (a comma-separated list: any of them), plan, meta_instance, type, actor
  // (requested_by), since and until (a window of created_at: since <= created_at < until,
  // each a timestamp; kInvalidArgument naming the filter otherwise).
  Result<Page<Operation>> listOperations(const ListOptions& options);
  // `approved_by` is recorded when non-empty (APPROVED / REJECTED by a person or policy).
  // REJECTED releases the placement reserved for the operation, and leaves its meta
  // instance STOPPED when that is ACTIVE with nothing running, in the same transaction.
  // REJECTED, CANCELLED and FAILED give back a growth held for an UPDATE
  // (resizeForOperation) that its instance still holds.
  Result<Operation> setOperationState(int64_t id, OperationState state, Generation generation, const std::string& actor,
                                      const std::string& message = "", const std::string& approved_by = "");

  // Cancels operation `id` on behalf of `actor` (the `operation.state` event to CANCELLED
  // names them, with `message`): only one that has not started — PENDING,
  // PENDING_APPROVAL, or APPROVED before its first attempt (the executor counts the attempt
  // in its own write before it touches a driver, so the two cannot both win). The placement
  // it reserved is released in the same transaction. kConflict naming the state otherwise,
  // or when `generation` is given and the operation moved since.
  Result<Operation> cancelOperation(int64_t id, Generation generation, const std::string& actor,
                                    const std::string& message);

  // The unfinished operations (PENDING, PENDING_APPROVAL, APPROVED, RUNNING) of the meta
  // instances with ids `meta_ids`, at most one each, in id order: what a page of the instance
  // list shows as waiting or under way, read in one statement per slice of ids.
  Result<std::vector<Operation>> unfinishedOperations(const std::vector<int64_t>& meta_ids);
  // How many operations there are of each (type, state), for /metrics.
  Result<std::map<std::pair<std::string, std::string>, int64_t>> operationCounts();
  // The newest operation of every meta instance that is not DELETED: the unfinished one
  // when there is one (a new operation is only created when none is, or supersedes it).
  Result<std::vector<Operation>> latestOperations();
  // Bookkeeping of the executor; unset fields are left alone; no event (state changes
  // carry the story).
  struct OperationUpdate {
    Generation generation;  // when set: kConflict if the operation moved since
    std::optional<int64_t> attempts;
    std::optional<std::string> next_attempt_at;
    std::optional<Json> target;
    std::optional<Json> decision;
    std::optional<std::string> message;
  };
  Result<Operation> updateOperation(int64_t id, const OperationUpdate& update, const std::string& actor);

  // --- approvals (docs/architecture.md#human-approval) ----------------------------------
  // Records a person's approval of operation `id` in one transaction: the operation must be
  // PENDING_APPROVAL (and at `generation` when given; kConflict otherwise) and the approval
  // must count (model::checkApproval's errors). It joins decision.approvals.given and the
  // operation_approvals table, an "operation.approval" event names the actor, and once
  // enough approvals count the operation moves to APPROVED with approved_by the counted
  // actors. `approval.at` is set here.
  Result<Operation> addApproval(int64_t id, Generation generation, model::GivenApproval approval);
  // The approvals people gave operation `id`, oldest first.
  Result<std::vector<model::GivenApproval>> listApprovals(int64_t operation_id);

  // --- manifests -----------------------------------------------------------------------
  // Creates every record of the manifest in one transaction, in dependency order
  // (capabilities, clusters, nodes, plans, deployments). Any error — including one that
  // only the ledger can see, like a name that already exists — writes nothing and names
  // the record's manifest location.
  Result<AppliedManifest> applyManifest(const model::Manifest& manifest, const std::string& actor);

  // --- events --------------------------------------------------------------------------
  // filters: kind (exact or "prefix.*"), subject, actor (exact); plan: the events of the
  // plan's own subject and of its deployments, meta instances, runtime instances and
  // operations; state (a comma-separated list: any of them): the state changes into one of
  // them (the "<record>.state" events whose data.to is one); since and until: a window of
  // `at` (since <= at < until), each a timestamp (kInvalidArgument naming the filter
  // otherwise). All are compared in the query, so a page holds `limit` matching events.
  Result<Page<Event>> listEvents(const ListOptions& options);
  int64_t lastEventSeq();
  // Blocks until an event with seq > `after` exists or `timeout` passes; true if one does.
  bool waitForEvents(int64_t after, std::chrono::milliseconds timeout);
  // For happenings that are not a record change: alarms, script reloads, controls.
  Status appendEvent(const std::string& kind, const std::string& subject, const Json& data, const std::string& actor);
  // Recomputes the hash chain; kInternal naming the first broken seq (verifyAudit's problem).
  Status verifyEventChain();

  // --- the control loop's halt (docs/architecture.md#observer) --------------------------
  // The halt in force, or nullopt.
  Result<std::optional<ControlHalt>> controlHalt();
  // Halts the control loop: the halt row and an `alarm_kind` event {message: reason,
  // details...} in one transaction. Already halted: the halt in force, nothing written.
  Result<ControlHalt> haltControlLoop(const std::string& alarm_kind, const std::string& reason, const Json& details,
                                      const std::string& actor);
  // Ends the halt: deletes the row and appends `control.resumed` {ended: the halt} in one
  // transaction. kConflict when the loop is not halted.
  Result<ControlHalt> resumeControlLoop(const std::string& actor);

  // --- retention and audit (docs/architecture.md#retention-and-audit) ---------------------
  // One transaction that deletes at most policy.batch rows of each kind the policy prunes:
  // the oldest events (always a prefix of the chain: by count, and by age up to the first
  // event that is young enough), decisions older than decisions_max_age_days whose operation
  // is finished (or gone), the approvals people gave operations that finished more than
  // decisions_max_age_days ago (or are gone), and script versions beyond script_versions_keep
  // per file, never the newest row of a file in any status (so the current and the last good
  // version stay). When it deletes events it writes an audit_checkpoint (seq and hash of the
  // last event deleted) in the same transaction; when it deletes anything it appends an
  // `audit.pruned` event {events, decisions, script_versions, approvals, rule, through_seq,
  // through_hash} naming the newest checkpoint, so the chain itself records it. It first
  // checks the events it would delete (and the first one it keeps) link up from the newest
  // checkpoint; if they do not, it deletes nothing and returns kInternal naming the broken
  // link: pruning never erases the evidence of a broken chain. Call again while the report
  // says a kind hit the batch.
  Result<model::PruneReport> prune(const model::RetentionPolicy& policy, const std::string& actor);
  // Walks the chain from the newest checkpoint (or the genesis) to the newest event: every
  // event's hash, every link, no gap in seq, the first kept event joining the checkpoint, the
  // newest `audit.pruned` event naming that checkpoint, and no event this Ledger appended
  // missing from the end. A broken chain is an OK Result with ok = false; an error Result
  // means the ledger could not be read. Reads one snapshot, never blocks writers.
  Result<model::AuditReport> verifyAudit();

  // --- scripts and decisions -----------------------------------------------------------
  Result<ScriptVersion> recordScriptVersion(const ScriptVersion& version);
  Result<std::vector<ScriptVersion>> listScriptVersions(const std::string& path = "");
  // The text of a script version, by its sha256, kept when the version becomes active so a
  // restart after a broken edit can run the last good version of the file
  // (docs/architecture.md#hot-reload). Idempotent: keeping a text kept before changes
  // nothing. No event (the version's row and events say what happened).
  Status keepScriptText(const std::string& sha256, const std::string& text);
  // The kept text of `sha256`, or nullopt when none was kept.
  Result<std::optional<std::string>> scriptText(const std::string& sha256);
  Status recordDecisions(const std::vector<Decision>& decisions);
  Result<std::vector<Decision>> listDecisions(int64_t operation_id);

  // --- API tokens ----------------------------------------------------------------------
  // Only the token's sha256 is stored. Roles: viewer < operator < approver < admin, and
  // agent beside them, bound to `node` (docs/agents.md#tokens).
  // `expires_at` is a timestamp (formatTimestamp) or "" for never. kInvalidArgument for a bad
  // name or role, a missing node for role agent or a node for another role; kNotFound for an
  // unknown node; kAlreadyExists when a live token has the name.
  Result<ApiToken> createToken(const std::string& name, const std::string& token_sha256, const std::string& role,
                               const std::string& actor, const std::string& expires_at = "",
                               const std::string& node = "");
  // The live token with this digest; kNotFound for an unknown, revoked or expired one (the
  // message says which of the last two).
  Result<ApiToken> findToken(const std::string& token_sha256);
  // A page of the tokens the ledger holds, revoked and expired ones too, oldest first. No filters.
  Result<Page<ApiToken>> listTokens(const ListOptions& options);
  // Revokes the live token named `name` (kNotFound when there is none). With
  // `keep_an_admin`, refuses (kConflict) to revoke the last live admin token, so
  // nobody can lock every admin out.
  Result<ApiToken> revokeToken(const std::string& name, const std::string& actor, bool keep_an_admin);
  // Live tokens (not revoked; expired ones count until revoked).
  int64_t countTokens();
  // Who minted the token `name`, who minted that one, and so on, nearest first, each once
  // (model::sameParty); revoked tokens count, so a revocation does not launder a chain.
  // Empty for a config token, an unknown name, or the bootstrap token ("system" minted it).
  // At most kMaxMinters names.
  Result<std::vector<std::string>> mintersOf(const std::string& name);
  static constexpr size_t kMaxMinters = 32;

  // A write transaction; opaque outside host/ledger/.
  class Tx;
  // The newest event's seq and hash: where the next event chains on.
  struct ChainTail {
    int64_t seq = 0;
    std::string hash;
  };

  // --- group commit ---------------------------------------------------------------------
  // Holds the calling thread's writes in one transaction until the Batch ends (or
  // kMaxGroupWrites / kMaxGroupAge pass, or another thread waits for the group): for a
  // stage of the control loop that writes many records one after the other. While a
  // Batch is open, a write returns before it is durable and reads on this thread see the
  // batch's writes. A failing write rolls back alone (a savepoint); commit() reports
  // whether the rest reached the disk — a batch commits whole or not at all.
  class Batch {
   public:
    explicit Batch(Ledger& ledger);
    ~Batch();  // commit()s
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;
    Status commit();

   private:
    Ledger& ledger_;
    bool outermost_ = false;  // a nested Batch of the same thread leaves the work to the outer one
    uint64_t first_group_ = 0;
  };
  // Reads on this thread, while a Snapshot is open, all see the ledger as one moment: a
  // picture built from several reads (the engine's World) never mixes a runtime instance's
  // newer state with its operation's older one. Each read alone is always one snapshot.
  // Its reads do not see what commits after it opened, this thread's own writes included:
  // open it around reads only. A nested Snapshot of the same thread leaves the work to the
  // outer one; inside a Batch, or on a ledger without reader connections, it does nothing.
  class Snapshot {
   public:
    explicit Snapshot(Ledger& ledger);
    ~Snapshot();
    Snapshot(const Snapshot&) = delete;
    Snapshot& operator=(const Snapshot&) = delete;

   private:
    Ledger& ledger_;
    Db* reader_ = nullptr;  // null when it is not the outermost, or the ledger has no readers
  };
  static constexpr int kMaxGroupWrites = 256;
  static constexpr std::chrono::milliseconds kMaxGroupAge{50};

  struct WriteStats {
    int64_t writes = 0;   // write calls that reached the database
    int64_t commits = 0;  // transactions committed: one fsync each on a file ledger
    int64_t failed_commits = 0;
    int64_t largest_group = 0;
  };
  WriteStats writeStats() const;

  // --- change feed ----------------------------------------------------------------------
  // Every row a committed transaction inserted, updated or deleted, as (table, row id),
  // in commit order. Rows written by a write that rolled back may appear too: a reader
  // re-reads what it is told about and finds the truth. Empty for ledgers that cannot
  // tell (changesTracked() false): then readers must reload.
  struct RowChange {
    std::string table;
    int64_t id = 0;
  };
  using ChangeSink = std::function<void(const std::vector<RowChange>&)>;
  // `sink` runs under the write lock right after each commit: it must be quick and must
  // not call the ledger. Returns an id for unsubscribe(), which must come before whatever
  // the sink refers to dies.
  int subscribe(ChangeSink sink);
  void unsubscribe(int id);
  bool changesTracked() const { return changes_tracked_; }

  // --- invariants ----------------------------------------------------------------------
  // One broken rule of docs/architecture.md#invariants: which rule ("active_runtimes",
  // "unfinished_operations", "over_committed", "unknown_state", "reservation",
  // "event_chain") and a sentence naming the records.
  struct InvariantViolation {
    std::string rule;
    std::string message;
  };
  // The rules of docs/architecture.md#invariants, which must hold at rest. The host runs this
  // at start and refuses to act on a ledger that fails it; `tide doctor` reports it.
  Result<std::vector<InvariantViolation>> findInvariantViolations();
  // The same, each violation as its sentence.
  Result<std::vector<std::string>> checkInvariants();

 private:
  Ledger(std::unique_ptr<Db> db, const Clock& clock);

  template <class Fn>
  auto write(const char* what, const std::string& actor, Fn&& fn) -> decltype(fn(std::declval<Tx&>()));
  template <class Fn>
  auto read(const char* what, Fn&& fn) -> decltype(fn(std::declval<Db&>()));

  std::string now() const;

  // Group commit steps of write(). REQUIRES: mu_ is held (through `lock`).
  uint64_t joinGroup();
  // Commits the group now or leaves it for a later writer (and waits for that, unless
  // this thread is in a Batch); the status of the group's commit.
  Status finishWrite(std::unique_lock<std::mutex>& lock, uint64_t group);
  Status commitGroup();
  void recordChange(const char* table, int64_t id);  // the writer connection's update hook

  // Reader connections (empty for ":memory:": reads then share the writer under mu_).
  Db* acquireReader();
  void releaseReader(Db* reader);
  bool inOpenBatch() const;
  Db* snapshotReader() const;  // the reader of this thread's open Snapshot, or null

  std::unique_ptr<Db> db_;
  const Clock& clock_;
  int schema_version_ = 0;
  std::mutex mu_;  // serializes every use of db_
  std::vector<std::unique_ptr<Db>> readers_;
  std::mutex readers_mu_;
  std::condition_variable readers_cv_;
  std::vector<Db*> free_readers_;  // REQUIRES: readers_mu_ is held

  // The open group. REQUIRES: mu_ is held.
  bool group_open_ = false;
  uint64_t group_ = 0;            // number of the newest group
  uint64_t committed_group_ = 0;  // every group up to this one has ended
  int group_writes_ = 0;
  int group_waiters_ = 0;
  int64_t group_seq_ = 0;
  // On the ledger's Clock, so a test's FakeClock decides when a group is old (kMaxGroupAge).
  TimePoint group_opened_;
  std::vector<RowChange> group_changes_;
  std::map<uint64_t, Status> failed_groups_;  // the newest few
  std::condition_variable group_cv_;
  std::atomic<int> queued_writers_{0};
  WriteStats stats_;  // REQUIRES: stats_mu_ is held
  mutable std::mutex stats_mu_;
  std::map<int, ChangeSink> sinks_;  // REQUIRES: mu_ is held
  int next_sink_ = 1;
  bool changes_tracked_ = false;

  // The newest event's (seq, hash) as the committed writes left it, so that a write need
  // not read it back: set by each write that appends events, dropped whenever a write or
  // a group rolls back (the next write reads it from the database). This Ledger is the
  // database's only writer; were another to append, the next insert would fail on seq's
  // key and roll back, dropping it. REQUIRES: mu_ is held.
  std::optional<ChainTail> chain_tail_;

  std::mutex events_mu_;
  std::condition_variable events_cv_;
  int64_t last_seq_ = 0;  // REQUIRES: events_mu_ is held
};

// Verifies the event chain of the SQLite ledger at `url` ("sqlite://PATH") as
// Ledger::verifyAudit does, through a read-only connection that neither migrates nor writes,
// so it may run beside a host using the file: `tide audit verify --data-dir`. kNotFound when
// there is no such file. It cannot see events missing from the end (no host to ask).
Result<model::AuditReport> verifyLedgerAt(const std::string& url);

// Every record a list call yields, following next_after through all pages.
template <class Record>
Result<std::vector<Record>> listAll(Ledger& ledger, Result<Page<Record>> (Ledger::*list)(const ListOptions&),
                                    std::map<std::string, std::string> filters = {}) {
  ListOptions options;
  options.limit = kMaxPageSize;
  options.filters = std::move(filters);
  std::vector<Record> all;
  while (true) {
    TIDE_ASSIGN_OR_RETURN(Page<Record> page, (ledger.*list)(options));
    all.insert(all.end(), std::make_move_iterator(page.items.begin()), std::make_move_iterator(page.items.end()));
    if (page.next_after == 0) return all;
    options.after = page.next_after;
  }
}

}  // namespace tide::ledger
