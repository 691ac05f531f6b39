#include "host/model/transitions.h"

#include <algorithm>
#include <map>

#include "host/model/records.h"
#include "host/model/states.h"

namespace tide::model {
namespace {

struct Table {
  std::vector<std::string> states;
  std::map<std::string, std::vector<std::string>, std::less<>> next;
};

Table makeTable(RecordKind kind) {
  switch (kind) {
    case RecordKind::kCluster: {
      using namespace cluster_state;
      return {{kActive, kInactive}, {{kActive, {kInactive}}, {kInactive, {kActive}}}};
    }
    case RecordKind::kNode: {
      using namespace node_state;
      // A node joins a cluster (ALLOCATED), may be cordoned (no new placements) or
      // drained (instances relocated away, then CORDONED), is sanitized before it is
      // handed back (UNALLOCATED), and may be evicted for good from any state.
      return {{kUnallocated, kAllocated, kCordoned, kDraining, kSanitizing, kEvicted},
              {{kUnallocated, {kAllocated, kEvicted}},
               {kAllocated, {kCordoned, kDraining, kSanitizing, kEvicted}},
               {kCordoned, {kAllocated, kDraining, kSanitizing, kEvicted}},
               {kDraining, {kCordoned, kAllocated, kSanitizing, kEvicted}},
               {kSanitizing, {kUnallocated, kEvicted}},
               {kEvicted, {}}}};
    }
    case RecordKind::kPlan: {
      using namespace plan_state;
      return {{kActive, kInactive}, {{kActive, {kInactive}}, {kInactive, {kActive}}}};
    }
    case RecordKind::kDeployment: {
      using namespace deployment_state;
      return {{kPending, kInProgress, kPaused, kCompleted, kFailed, kCancelled, kRolledBack},
              {{kPending, {kInProgress, kCancelled, kFailed}},
               {kInProgress, {kPaused, kCompleted, kFailed, kCancelled, kRolledBack}},
               {kPaused, {kInProgress, kCompleted, kFailed, kCancelled, kRolledBack}},
               // A completed deployment is re-opened when a newer one is rolled back or
               // aborted (restore), and may itself be rolled back; a FAILED one is retried.
               {kCompleted, {kInProgress, kRolledBack}},
               {kFailed, {kInProgress, kRolledBack}},
               {kCancelled, {}},
               {kRolledBack, {}}}};
    }
    case RecordKind::kMetaInstance: {
      using namespace meta_state;
      return {{kActive, kStopped, kMarkedForDeletion, kDeleted},
              {{kActive, {kStopped, kMarkedForDeletion}},
               {kStopped, {kActive, kMarkedForDeletion}},
               {kMarkedForDeletion, {kDeleted}},
               {kDeleted, {}}}};
    }
    case RecordKind::kRuntimeInstance: {
      using namespace runtime_state;
      // FAILED and TERMINATED hold no resources. A FAILED instance is only ever cleaned
      // up (TERMINATED); a retry places a new runtime instance.
      return {{kPending, kStarting, kRunning, kStopping, kStopped, kTerminated, kFailed},
              {{kPending, {kStarting, kTerminated, kFailed}},
               {kStarting, {kRunning, kStopping, kFailed}},
               {kRunning, {kStopping, kFailed}},
               {kStopping, {kStopped, kTerminated, kFailed}},
               {kStopped, {kStarting, kTerminated}},
               {kFailed, {kTerminated}},
               {kTerminated, {}}}};
    }
    case RecordKind::kOperation: {
      using namespace operation_state;
      // RUNNING → APPROVED is a retry after backoff (attempts counts them).
      return {{kPending, kPendingApproval, kApproved, kRunning, kSucceeded, kFailed, kRejected, kCancelled},
              {{kPending, {kPendingApproval, kApproved, kRejected, kCancelled, kFailed}},
               {kPendingApproval, {kApproved, kRejected, kCancelled}},
               {kApproved, {kRunning, kCancelled, kFailed}},
               {kRunning, {kSucceeded, kFailed, kApproved, kCancelled}},
               {kSucceeded, {}},
               {kFailed, {}},
               {kRejected, {}},
               {kCancelled, {}}}};
    }
  }
  return {};
}

const Table& tableOf(RecordKind kind) {
  static const std::map<RecordKind, Table> kTables = [] {
    std::map<RecordKind, Table> tables;
    for (auto k : {RecordKind::kCluster, RecordKind::kNode, RecordKind::kPlan, RecordKind::kDeployment,
                   RecordKind::kMetaInstance, RecordKind::kRuntimeInstance, RecordKind::kOperation}) {
      tables.emplace(k, makeTable(k));
    }
    return tables;
  }();
  return kTables.at(kind);
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
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

const std::vector<std::string>& statesOf(RecordKind kind) { return tableOf(kind).states; }

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
  const auto& states = tableOf(kind).states;
  return std::find(states.begin(), states.end(), state) != states.end();
}

bool isTerminalState(RecordKind kind, std::string_view state) {
  const auto& next = tableOf(kind).next;
  auto it = next.find(state);
  return it != next.end() && it->second.empty();
}

bool isTerminalOperationState(std::string_view state) { return isTerminalState(RecordKind::kOperation, state); }

bool holdsResources(std::string_view state) {
  return isKnownState(RecordKind::kRuntimeInstance, state) &&
         std::find(kReleasedRuntimeStates.begin(), kReleasedRuntimeStates.end(), state) == kReleasedRuntimeStates.end();
}

bool isRolloutOver(std::string_view state) {
  using namespace deployment_state;
  for (const char* over : {kCompleted, kFailed, kCancelled, kRolledBack}) {
    if (state == over) return true;
  }
  return false;
}

const Deployment* currentDeployment(const std::vector<Deployment>& oldest_first) {
  for (auto d = oldest_first.rbegin(); d != oldest_first.rend(); ++d) {
    if (!isRolloutOver(d->state)) return &*d;
  }
  for (auto d = oldest_first.rbegin(); d != oldest_first.rend(); ++d) {
    if (d->state == deployment_state::kCompleted) return &*d;
  }
  return nullptr;
}

Status checkTransition(RecordKind kind, std::string_view from, std::string_view to) {
  const std::string what = recordKindName(kind);
  if (!isKnownState(kind, to)) {
    return Status::invalidArgument(what + " has no state '" + std::string(to) + "' (states: " + joined(statesOf(kind)) +
                                   ")");
  }
  const auto& next = tableOf(kind).next;
  auto it = next.find(from);
  if (it == next.end()) {
    return Status::internal(what + " is in unknown state '" + std::string(from) + "'");
  }
  if (std::find(it->second.begin(), it->second.end(), to) == it->second.end()) {
    return Status::conflict(what + " cannot move from " + std::string(from) + " to " + std::string(to) +
                            " (allowed from " + std::string(from) + ": " + joined(it->second) + ")");
  }
  return Status::ok();
}

namespace {

// What an operation type needs of its meta instance: the meta states it accepts, and
// whether the instance must run (an active runtime instance past PENDING: something was
// started, so there is something to update or move), must not, or either.
struct OperationFit {
  std::string_view type;
  std::vector<std::string_view> meta_states;
  enum class Runs { kEither, kYes, kNo } runs;
  std::string_view needs;
};

const std::vector<OperationFit>& operationFits() {
  using namespace meta_state;
  using Runs = OperationFit::Runs;
  static const std::vector<OperationFit> kFits = {
      {"CREATE", {kActive}, Runs::kNo, "an ACTIVE instance that runs nowhere"},
      {"UPDATE", {kActive}, Runs::kYes, "an ACTIVE instance that runs"},
      {"RELOCATE", {kActive}, Runs::kYes, "an ACTIVE instance that runs"},
      {"STOP", {kActive}, Runs::kEither, "an ACTIVE instance"},
      {"RESTART", {kActive, kStopped}, Runs::kEither, "an ACTIVE or STOPPED instance"},
      // A DELETE that failed left its instance MARKED_FOR_DELETION; another finishes it.
      {"DELETE", {kActive, kStopped, kMarkedForDeletion}, Runs::kEither, "an instance that is not DELETED"},
  };
  return kFits;
}

}  // namespace

Status checkOperationFits(std::string_view type, std::string_view meta_state, std::string_view runtime_state) {
  const auto& fits = operationFits();
  auto fit = std::find_if(fits.begin(), fits.end(), [&](const OperationFit& f) { return f.type == type; });
  if (fit == fits.end()) return Status::invalidArgument("unknown operation type '" + std::string(type) + "'");
  const bool runs = !runtime_state.empty() && runtime_state != runtime_state::kPending;
  const bool state_fits =
      std::find(fit->meta_states.begin(), fit->meta_states.end(), meta_state) != fit->meta_states.end();
  const bool runs_fits = fit->runs == OperationFit::Runs::kEither || runs == (fit->runs == OperationFit::Runs::kYes);
  if (state_fits && runs_fits) return Status::ok();
  std::string is = std::string(meta_state);
  if (meta_state == meta_state::kActive) {
    is += runs ? " and its runtime instance is " + std::string(runtime_state) : " and runs nowhere";
  }
  return Status::conflict(std::string(type) + " needs " + std::string(fit->needs) + "; the instance is " + is);
}

}  // namespace tide::model
