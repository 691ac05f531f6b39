#pragma once
// The one table of legal state changes per record kind (docs/architecture.md#records-and-states). The ledger checks
// every state change here before writing it; nothing else decides what may follow what.

#include <array>
#include <string>
#include <string_view>
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

// Every state of `kind`, in lifecycle order.
const std::vector<std::string>& statesOf(RecordKind kind);
bool isKnownState(RecordKind kind, std::string_view state);
// Every state of any kind, each once, sorted: what an event's state change may name.
const std::vector<std::string>& everyState();
// True when no transition leaves `state`.
bool isTerminalState(RecordKind kind, std::string_view state);

// Operations: no transition leaves SUCCEEDED, FAILED, REJECTED or CANCELLED.
bool isTerminalOperationState(std::string_view state);

// The runtime instance states that hold nothing: an instance in one of them has released its
// reservation (in the transaction that moved it there) and no longer counts as running.
inline constexpr std::array<const char*, 2> kReleasedRuntimeStates = {runtime_state::kTerminated,
                                                                      runtime_state::kFailed};
// True for every runtime instance state but those above.
bool holdsResources(std::string_view runtime_state);

// True when a deployment's rollout is over: COMPLETED, FAILED, CANCELLED or ROLLED_BACK.
// (A control may still re-open a COMPLETED or FAILED one; the others are terminal.)
bool isRolloutOver(std::string_view deployment_state);

// The deployment a plan runs now, of its deployments `oldest_first`: the newest whose
// rollout is not over, else the newest COMPLETED one; nullptr when there is neither. What
// the traffic router follows and what GET /v1/status counts a plan's desired instances by.
const Deployment* currentDeployment(const std::vector<Deployment>& oldest_first);

// OK when `from` → `to` is in the table; kConflict naming both states and the allowed
// successors otherwise (kInvalidArgument for a state the kind does not have).
Status checkTransition(RecordKind kind, std::string_view from, std::string_view to);

// Whether an operation of `type` fits its meta instance (docs/architecture.md#operation-fit):
// `meta_state` is the meta instance's state, `runtime_state` that of its active runtime
// instance holding resources ("" when none does; PENDING is a reservation, nothing runs).
// OK when it fits; kConflict naming the type, both states and what the type needs otherwise.
Status checkOperationFits(std::string_view type, std::string_view meta_state, std::string_view runtime_state);

}  // namespace tide::model
