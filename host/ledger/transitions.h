#pragma once
// The one table of legal state changes per record kind (DESIGN §2). The ledger checks
// every state change here before writing it; nothing else decides what may follow what.

#include <string>
#include <string_view>
#include <vector>

#include "host/core/status.h"

namespace tide::ledger {

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
// True when no transition leaves `state`.
bool isTerminalState(RecordKind kind, std::string_view state);

// OK when `from` → `to` is in the table; kConflict naming both states and the allowed
// successors otherwise (kInvalidArgument for a state the kind does not have).
Status checkTransition(RecordKind kind, std::string_view from, std::string_view to);

}  // namespace tide::ledger
