#include "host/ledger/transitions.h"

#include <algorithm>
#include <map>

namespace tide::ledger {
namespace {

struct Table {
  std::vector<std::string> states;
  std::map<std::string, std::vector<std::string>, std::less<>> next;
};

Table makeTable(RecordKind kind) {
  switch (kind) {
    case RecordKind::kCluster:
      return {{"ACTIVE", "INACTIVE"}, {{"ACTIVE", {"INACTIVE"}}, {"INACTIVE", {"ACTIVE"}}}};
    case RecordKind::kNode:
      // A node joins a cluster (ALLOCATED), may be cordoned (no new placements) or
      // drained (instances relocated away, then CORDONED), is sanitized before it is
      // handed back (UNALLOCATED), and may be evicted for good from any state.
      return {{"UNALLOCATED", "ALLOCATED", "CORDONED", "DRAINING", "SANITIZING", "EVICTED"},
              {{"UNALLOCATED", {"ALLOCATED", "EVICTED"}},
               {"ALLOCATED", {"CORDONED", "DRAINING", "SANITIZING", "EVICTED"}},
               {"CORDONED", {"ALLOCATED", "DRAINING", "SANITIZING", "EVICTED"}},
               {"DRAINING", {"CORDONED", "ALLOCATED", "SANITIZING", "EVICTED"}},
               {"SANITIZING", {"UNALLOCATED", "EVICTED"}},
               {"EVICTED", {}}}};
    case RecordKind::kPlan:
      return {{"ACTIVE", "INACTIVE"}, {{"ACTIVE", {"INACTIVE"}}, {"INACTIVE", {"ACTIVE"}}}};
    case RecordKind::kDeployment:
      return {{"PENDING", "IN_PROGRESS", "PAUSED", "COMPLETED", "FAILED", "CANCELLED", "ROLLED_BACK"},
              {{"PENDING", {"IN_PROGRESS", "CANCELLED", "FAILED"}},
               {"IN_PROGRESS", {"PAUSED", "COMPLETED", "FAILED", "CANCELLED", "ROLLED_BACK"}},
               {"PAUSED", {"IN_PROGRESS", "COMPLETED", "FAILED", "CANCELLED", "ROLLED_BACK"}},
               // A completed deployment is re-opened when a newer one is rolled back or
               // aborted (restore), and may itself be rolled back; a FAILED one is retried.
               {"COMPLETED", {"IN_PROGRESS", "ROLLED_BACK"}},
               {"FAILED", {"IN_PROGRESS", "ROLLED_BACK"}},
               {"CANCELLED", {}},
               {"ROLLED_BACK", {}}}};
    case RecordKind::kMetaInstance:
      return {{"ACTIVE", "STOPPED", "MARKED_FOR_DELETION", "DELETED"},
              {{"ACTIVE", {"STOPPED", "MARKED_FOR_DELETION"}},
               {"STOPPED", {"ACTIVE", "MARKED_FOR_DELETION"}},
               {"MARKED_FOR_DELETION", {"DELETED"}},
               {"DELETED", {}}}};
    case RecordKind::kRuntimeInstance:
      // FAILED and TERMINATED hold no resources. A FAILED instance is only ever cleaned
      // up (TERMINATED); a retry places a new runtime instance.
      return {{"PENDING", "STARTING", "RUNNING", "STOPPING", "STOPPED", "TERMINATED", "FAILED"},
              {{"PENDING", {"STARTING", "TERMINATED", "FAILED"}},
               {"STARTING", {"RUNNING", "STOPPING", "FAILED"}},
               {"RUNNING", {"STOPPING", "FAILED"}},
               {"STOPPING", {"STOPPED", "TERMINATED", "FAILED"}},
               {"STOPPED", {"STARTING", "TERMINATED"}},
               {"FAILED", {"TERMINATED"}},
               {"TERMINATED", {}}}};
    case RecordKind::kOperation:
      // RUNNING → APPROVED is a retry after backoff (attempts counts them).
      return {{"PENDING", "PENDING_APPROVAL", "APPROVED", "RUNNING", "SUCCEEDED", "FAILED", "REJECTED",
               "CANCELLED"},
              {{"PENDING", {"PENDING_APPROVAL", "APPROVED", "REJECTED", "CANCELLED", "FAILED"}},
               {"PENDING_APPROVAL", {"APPROVED", "REJECTED", "CANCELLED"}},
               {"APPROVED", {"RUNNING", "CANCELLED", "FAILED"}},
               {"RUNNING", {"SUCCEEDED", "FAILED", "APPROVED", "CANCELLED"}},
               {"SUCCEEDED", {}},
               {"FAILED", {}},
               {"REJECTED", {}},
               {"CANCELLED", {}}}};
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

bool isKnownState(RecordKind kind, std::string_view state) {
  const auto& states = tableOf(kind).states;
  return std::find(states.begin(), states.end(), state) != states.end();
}

bool isTerminalState(RecordKind kind, std::string_view state) {
  const auto& next = tableOf(kind).next;
  auto it = next.find(state);
  return it != next.end() && it->second.empty();
}

Status checkTransition(RecordKind kind, std::string_view from, std::string_view to) {
  const std::string what = recordKindName(kind);
  if (!isKnownState(kind, to)) {
    return Status::invalidArgument(what + " has no state '" + std::string(to) + "' (states: " +
                                   joined(statesOf(kind)) + ")");
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

}  // namespace tide::ledger
