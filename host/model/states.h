#pragma once
// The names of every record kind's states and of the operation types
// (docs/architecture.md#state-transitions). Code names a state through these constants;
// which moves between states are legal, and what a state means (holds resources, ends a
// rollout), is decided in transitions.cpp alone.
//
// The constants are character arrays so they compare with std::string and convert to it
// wherever a state is passed on.

namespace tide::model {

namespace cluster_state {
inline constexpr char kActive[] = "ACTIVE";
inline constexpr char kInactive[] = "INACTIVE";
}  // namespace cluster_state

namespace node_state {
inline constexpr char kUnallocated[] = "UNALLOCATED";
inline constexpr char kAllocated[] = "ALLOCATED";
inline constexpr char kCordoned[] = "CORDONED";
inline constexpr char kDraining[] = "DRAINING";
inline constexpr char kSanitizing[] = "SANITIZING";
inline constexpr char kEvicted[] = "EVICTED";
}  // namespace node_state

namespace plan_state {
inline constexpr char kActive[] = "ACTIVE";
inline constexpr char kInactive[] = "INACTIVE";
}  // namespace plan_state

namespace deployment_state {
inline constexpr char kPending[] = "PENDING";
inline constexpr char kInProgress[] = "IN_PROGRESS";
inline constexpr char kPaused[] = "PAUSED";
inline constexpr char kCompleted[] = "COMPLETED";
inline constexpr char kFailed[] = "FAILED";
inline constexpr char kCancelled[] = "CANCELLED";
inline constexpr char kRolledBack[] = "ROLLED_BACK";
}  // namespace deployment_state

namespace meta_state {
inline constexpr char kActive[] = "ACTIVE";
inline constexpr char kStopped[] = "STOPPED";
inline constexpr char kMarkedForDeletion[] = "MARKED_FOR_DELETION";
inline constexpr char kDeleted[] = "DELETED";
}  // namespace meta_state

namespace runtime_state {
inline constexpr char kPending[] = "PENDING";
inline constexpr char kStarting[] = "STARTING";
inline constexpr char kRunning[] = "RUNNING";
inline constexpr char kStopping[] = "STOPPING";
inline constexpr char kStopped[] = "STOPPED";
inline constexpr char kTerminated[] = "TERMINATED";
inline constexpr char kFailed[] = "FAILED";
}  // namespace runtime_state

namespace operation_state {
inline constexpr char kPending[] = "PENDING";
inline constexpr char kPendingApproval[] = "PENDING_APPROVAL";
inline constexpr char kApproved[] = "APPROVED";
inline constexpr char kRunning[] = "RUNNING";
inline constexpr char kSucceeded[] = "SUCCEEDED";
inline constexpr char kFailed[] = "FAILED";
inline constexpr char kRejected[] = "REJECTED";
inline constexpr char kCancelled[] = "CANCELLED";
}  // namespace operation_state

// MRDS's six operation types.
namespace operation_type {
inline constexpr char kCreate[] = "CREATE";
inline constexpr char kUpdate[] = "UPDATE";
inline constexpr char kRelocate[] = "RELOCATE";
inline constexpr char kStop[] = "STOP";
inline constexpr char kRestart[] = "RESTART";
inline constexpr char kDelete[] = "DELETE";
}  // namespace operation_type

}  // namespace tide::model
