#include "host/model/transitions.h"

#include <algorithm>
#include <utility>

#include "host/model/records.h"
#include "host/model/states.h"

namespace tide::model {
namespace {

// A kind's table: every state (in lifecycle order) with the states that may follow it.
template <class E>
using Table = std::vector<std::pair<E, std::vector<E>>>;

template <RecordState E>
const Table<E>& tableOf();

template <>
const Table<ClusterState>& tableOf() {
  using enum ClusterState;
  static const Table<ClusterState> kTable = {{kActive, {kInactive}}, {kInactive, {kActive}}};
  return kTable;
}

template <>
const Table<NodeState>& tableOf() {
  using enum NodeState;
  // A node joins a cluster (ALLOCATED), may be cordoned (no new placements) or
  // drained (instances relocated away, then CORDONED), is sanitized before it is
  // handed back (UNALLOCATED), and may be evicted for good from any state.
  static const Table<NodeState> kTable = {{kUnallocated, {kAllocated, kEvicted}},
                                          {kAllocated, {kCordoned, kDraining, kSanitizing, kEvicted}},
                                          {kCordoned, {kAllocated, kDraining, kSanitizing, kEvicted}},
                                          {kDraining, {kCordoned, kAllocated, kSanitizing, kEvicted}},
                                          {kSanitizing, {kUnallocated, kEvicted}},
                                          {kEvicted, {}}};
  return kTable;
}

template <>
const Table<PlanState>& tableOf() {
  using enum PlanState;
  static const Table<PlanState> kTable = {{kActive, {kInactive}}, {kInactive, {kActive}}};
  return kTable;
}

template <>
const Table<DeploymentState>& tableOf() {
  using enum DeploymentState;
  static const Table<DeploymentState> kTable = {
      {kPending, {kInProgress, kCancelled, kFailed}},
      {kInProgress, {kPaused, kCompleted, kFailed, kCancelled, kRolledBack}},
      {kPaused, {kInProgress, kCompleted, kFailed, kCancelled, kRolledBack}},
      // A completed deployment is re-opened when a newer one is rolled back or
      // aborted (restore), and may itself be rolled back; a FAILED one is retried.
      {kCompleted, {kInProgress, kRolledBack}},
      {kFailed, {kInProgress, kRolledBack}},
      {kCancelled, {}},
      {kRolledBack, {}}};
  return kTable;
}

template <>
const Table<MetaState>& tableOf() {
  using enum MetaState;
  static const Table<MetaState> kTable = {{kActive, {kStopped, kMarkedForDeletion}},
                                          {kStopped, {kActive, kMarkedForDeletion}},
                                          {kMarkedForDeletion, {kDeleted}},
                                          {kDeleted, {}}};
  return kTable;
}

template <>
const Table<RuntimeState>& tableOf() {
  using enum RuntimeState;
  // FAILED and TERMINATED hold no resources. A FAILED instance is only ever cleaned
  // up (TERMINATED); a retry places a new runtime instance.
  static const Table<RuntimeState> kTable = {{kPending, {kStarting, kTerminated, kFailed}},
                                             {kStarting, {kRunning, kStopping, kFailed}},
                                             {kRunning, {kStopping, kFailed}},
                                             {kStopping, {kStopped, kTerminated, kFailed}},
                                             {kStopped, {kStarting, kTerminated}},
                                             {kTerminated, {}},
                                             {kFailed, {kTerminated}}};
  return kTable;
}

template <>
const Table<OperationState>& tableOf() {
  using enum OperationState;
  // RUNNING → APPROVED is a retry after backoff (attempts counts them).
  static const Table<OperationState> kTable = {
      {kPending, {kPendingApproval, kApproved, kRejected, kCancelled, kFailed}},
      {kPendingApproval, {kApproved, kRejected, kCancelled}},
      {kApproved, {kRunning, kCancelled, kFailed}},
      {kRunning, {kSucceeded, kFailed, kApproved, kCancelled}},
      {kSucceeded, {}},
      {kFailed, {}},
      {kRejected, {}},
      {kCancelled, {}}};
  return kTable;
}

template <RecordState E>
const std::vector<E>& successorsOf(E state) {
  const auto& table = tableOf<E>();
  auto it = std::find_if(table.begin(), table.end(), [&](const auto& row) { return row.first == state; });
  static const std::vector<E> kNone;
  return it == table.end() ? kNone : it->second;
}

template <class E>
std::string joined(const std::vector<E>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    if constexpr (std::is_same_v<E, std::string>) {
      out += item;
    } else {
      out += toString(item);
    }
  }
  return out.empty() ? "none (terminal)" : out;
}

}  // namespace

const char* recordKindName(RecordKind kind) {
  switch (kind) {
    case RecordKind::kCluster: return "cluster";
    case RecordKind::kNode: return "node";
    case RecordKind::kPlan: return "plan";
    case RecordKind::kDeployment: return "deployment";
    case RecordKind::kMetaInstance: return "meta_instance";
    case RecordKind::kRuntimeInstance: return "runtime_instance";
    case RecordKind::kOperation: return "operation";
  }
  return "record";
}

const std::vector<std::string>& statesOf(RecordKind kind) {
  switch (kind) {
    case RecordKind::kCluster: return namesOf<ClusterState>();
    case RecordKind::kNode: return namesOf<NodeState>();
    case RecordKind::kPlan: return namesOf<PlanState>();
    case RecordKind::kDeployment: return namesOf<DeploymentState>();
    case RecordKind::kMetaInstance: return namesOf<MetaState>();
    case RecordKind::kRuntimeInstance: return namesOf<RuntimeState>();
    case RecordKind::kOperation: return namesOf<OperationState>();
  }
  static const std::vector<std::string> kNone;
  return kNone;
}

const std::vector<std::string>& everyState() {
  static const std::vector<std::string> kEvery = [] {
    std::vector<std::string> every;
    for (RecordKind kind : {RecordKind::kCluster, RecordKind::kNode, RecordKind::kPlan, RecordKind::kDeployment,
                            RecordKind::kMetaInstance, RecordKind::kRuntimeInstance, RecordKind::kOperation}) {
      for (const std::string& state : statesOf(kind)) {
        if (std::find(every.begin(), every.end(), state) == every.end()) every.push_back(state);
      }
    }
    std::sort(every.begin(), every.end());
    return every;
  }();
  return kEvery;
}

bool isKnownState(RecordKind kind, std::string_view state) {
  const auto& states = statesOf(kind);
  return std::find(states.begin(), states.end(), state) != states.end();
}

template <RecordState E>
Result<E> parseState(std::string_view text) {
  if (std::optional<E> state = parse<E>(text)) return *state;
  const RecordKind kind = recordKindOf<E>();
  return Status::invalidArgument(std::string(recordKindName(kind)) + " has no state '" + std::string(text) +
                                 "' (states: " + joined(statesOf(kind)) + ")");
}

template <RecordState E>
bool isTerminal(E state) {
  return successorsOf(state).empty();
}

template <RecordState E>
Status checkTransition(E from, E to) {
  const auto& next = successorsOf(from);
  if (std::find(next.begin(), next.end(), to) == next.end()) {
    return Status::conflict(std::string(recordKindName(recordKindOf<E>())) + " cannot move from " + toString(from) +
                            " to " + toString(to) + " (allowed from " + toString(from) + ": " + joined(next) + ")");
  }
  return Status::ok();
}

#define TIDE_INSTANTIATE_STATE_FUNCTIONS(E)           \
  template Result<E> parseState<E>(std::string_view); \
  template bool isTerminal<E>(E);                     \
  template Status checkTransition<E>(E, E);
TIDE_INSTANTIATE_STATE_FUNCTIONS(ClusterState)
TIDE_INSTANTIATE_STATE_FUNCTIONS(NodeState)
TIDE_INSTANTIATE_STATE_FUNCTIONS(PlanState)
TIDE_INSTANTIATE_STATE_FUNCTIONS(DeploymentState)
TIDE_INSTANTIATE_STATE_FUNCTIONS(MetaState)
TIDE_INSTANTIATE_STATE_FUNCTIONS(RuntimeState)
TIDE_INSTANTIATE_STATE_FUNCTIONS(OperationState)
#undef TIDE_INSTANTIATE_STATE_FUNCTIONS

bool isInFlight(OperationState state) {
  return state == OperationState::kApproved || state == OperationState::kRunning;
}

bool isBeforeRunning(OperationState state) {
  return state == OperationState::kPending || state == OperationState::kPendingApproval ||
         state == OperationState::kApproved;
}

bool holdsResources(RuntimeState state) {
  return std::find(kReleasedRuntimeStates.begin(), kReleasedRuntimeStates.end(), state) == kReleasedRuntimeStates.end();
}

bool runsOrStarts(RuntimeState state) { return state == RuntimeState::kStarting || state == RuntimeState::kRunning; }

bool hasEnded(WorkloadState state) { return state == WorkloadState::kStopped || state == WorkloadState::kExited; }

bool runsOrStarts(WorkloadState state) { return state == WorkloadState::kStarting || state == WorkloadState::kRunning; }

bool isRolloutOver(DeploymentState state) {
  using enum DeploymentState;
  return state == kCompleted || state == kFailed || state == kCancelled || state == kRolledBack;
}

const Deployment* currentDeployment(const std::vector<Deployment>& oldest_first) {
  for (auto d = oldest_first.rbegin(); d != oldest_first.rend(); ++d) {
    if (!isRolloutOver(d->state)) return &*d;
  }
  for (auto d = oldest_first.rbegin(); d != oldest_first.rend(); ++d) {
    if (d->state == DeploymentState::kCompleted) return &*d;
  }
  return nullptr;
}

namespace {

// What an operation type needs of its meta instance: the meta states it accepts, and
// whether the instance must run (an active runtime instance past PENDING: something was
// started, so there is something to update or move), must not, or either.
struct OperationFit {
  OperationType type;
  std::vector<MetaState> meta_states;
  enum class Runs { kEither, kYes, kNo } runs;
  std::string_view needs;
};

const std::vector<OperationFit>& operationFits() {
  using enum MetaState;
  using Runs = OperationFit::Runs;
  static const std::vector<OperationFit> kFits = {
      {OperationType::kCreate, {kActive}, Runs::kNo, "an ACTIVE instance that runs nowhere"},
      {OperationType::kUpdate, {kActive}, Runs::kYes, "an ACTIVE instance that runs"},
      {OperationType::kRelocate, {kActive}, Runs::kYes, "an ACTIVE instance that runs"},
      {OperationType::kStop, {kActive}, Runs::kEither, "an ACTIVE instance"},
      {OperationType::kRestart, {kActive, kStopped}, Runs::kEither, "an ACTIVE or STOPPED instance"},
      // A DELETE that failed left its instance MARKED_FOR_DELETION; another finishes it.
      {OperationType::kDelete,
       {kActive, kStopped, kMarkedForDeletion},
       Runs::kEither,
       "an instance that is not DELETED"},
  };
  return kFits;
}

}  // namespace

Status checkOperationFits(OperationType type, MetaState meta_state, std::optional<RuntimeState> runtime_state) {
  const auto& fits = operationFits();
  auto fit = std::find_if(fits.begin(), fits.end(), [&](const OperationFit& f) { return f.type == type; });
  if (fit == fits.end()) return Status::invalidArgument("unknown operation type '" + toString(type) + "'");
  const bool runs = runtime_state.has_value() && *runtime_state != RuntimeState::kPending;
  const bool state_fits =
      std::find(fit->meta_states.begin(), fit->meta_states.end(), meta_state) != fit->meta_states.end();
  const bool runs_fits = fit->runs == OperationFit::Runs::kEither || runs == (fit->runs == OperationFit::Runs::kYes);
  if (state_fits && runs_fits) return Status::ok();
  std::string is = toString(meta_state);
  if (meta_state == MetaState::kActive)
    is += runs ? " and its runtime instance is " + toString(*runtime_state) : " and runs nowhere";
  return Status::conflict(toString(type) + " needs " + std::string(fit->needs) + "; the instance is " + is);
}

}  // namespace tide::model
