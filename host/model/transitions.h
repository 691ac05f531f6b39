#pragma once
// The one table of legal state changes per record kind (docs/architecture.md#records-and-states), and the named
// predicates over the states of host/model/states.h. The ledger checks every state change here before writing it;
// nothing else decides what may follow what, or what a state means.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "host/core/status.h"
#include "host/model/states.h"

namespace tide::model {

struct Deployment;

enum class RecordKind {
  kCluster,
  kNode,
  kPlan,
  kDeployment,
  kMetaInstance,
  kRuntimeInstance,
  kOperation,
};

// "node", "runtime_instance", ... as used in event kinds and error messages.
const char* recordKindName(RecordKind kind);

// The state enums of states.h: one per record kind.
template <class E>
concept RecordState = Vocabulary<E> && !std::is_same_v<E, OperationType>;

// The record kind whose states E names.
template <RecordState E>
constexpr RecordKind recordKindOf() {
  if constexpr (std::is_same_v<E, ClusterState>) return RecordKind::kCluster;
  if constexpr (std::is_same_v<E, NodeState>) return RecordKind::kNode;
  if constexpr (std::is_same_v<E, PlanState>) return RecordKind::kPlan;
  if constexpr (std::is_same_v<E, DeploymentState>) return RecordKind::kDeployment;
  if constexpr (std::is_same_v<E, MetaState>) return RecordKind::kMetaInstance;
  if constexpr (std::is_same_v<E, RuntimeState>) return RecordKind::kRuntimeInstance;
  if constexpr (std::is_same_v<E, OperationState>) return RecordKind::kOperation;
}

// Every state of `kind` as its wire string, in lifecycle order: for what reads states as text
// (query parameters, raw ledger rows, error messages).
const std::vector<std::string>& statesOf(RecordKind kind);
bool isKnownState(RecordKind kind, std::string_view state);
// Every state of any kind, each once, sorted: what an event's state change may name.
const std::vector<std::string>& everyState();

// The state `text` names, or kInvalidArgument "<kind> has no state 'X' (states: ...)".
template <RecordState E>
Result<E> parseState(std::string_view text);

// True when no transition leaves `state`.
template <RecordState E>
bool isTerminal(E state);

// OK when `from` → `to` is in the table; kConflict naming both states and the allowed
// successors otherwise.
template <RecordState E>
Status checkTransition(E from, E to);

// Operations: SUCCEEDED, FAILED, REJECTED and CANCELLED are terminal; the others are unfinished.
inline bool isUnfinished(OperationState state) { return !isTerminal(state); }
// The operation states that hold an instance for the control loop: APPROVED or RUNNING
// (what a policy counts as in flight).
bool isInFlight(OperationState state);
// The states of an operation that has not started running (in this attempt): PENDING,
// PENDING_APPROVAL, APPROVED.
bool isBeforeRunning(OperationState state);

// The runtime instance states that hold nothing: an instance in one of them has released its
// reservation (in the transaction that moved it there) and no longer counts as running.
inline constexpr std::array<RuntimeState, 2> kReleasedRuntimeStates = {RuntimeState::kTerminated,
                                                                       RuntimeState::kFailed};
// True for every runtime instance state but those above.
bool holdsResources(RuntimeState state);
// STARTING or RUNNING: a workload was started and has not been asked to stop.
bool runsOrStarts(RuntimeState state);

// What a driver reports of a workload: STOPPED or EXITED, nothing runs (any more); STARTING or
// RUNNING, something was started and was not stopped.
bool hasEnded(WorkloadState state);
bool runsOrStarts(WorkloadState state);

// True when a deployment's rollout is over: COMPLETED, FAILED, CANCELLED or ROLLED_BACK.
// (A control may still re-open a COMPLETED or FAILED one; the others are terminal.) The
// others (PENDING, IN_PROGRESS, PAUSED) are a rollout under way.
bool isRolloutOver(DeploymentState state);

// The deployment a plan runs now, of its deployments `oldest_first`: the newest whose
// rollout is not over, else the newest COMPLETED one; nullptr when there is neither. What
// the traffic router follows and what GET /v1/status counts a plan's desired instances by.
const Deployment* currentDeployment(const std::vector<Deployment>& oldest_first);

// Whether an operation of `type` fits its meta instance (docs/architecture.md#operation-fit):
// `meta_state` is the meta instance's state, `runtime_state` that of its active runtime
// instance holding resources (nullopt when none does; PENDING is a reservation, nothing runs).
// OK when it fits; kConflict naming the type, both states and what the type needs otherwise.
Status checkOperationFits(OperationType type, MetaState meta_state, std::optional<RuntimeState> runtime_state);

}  // namespace tide::model
