#include <doctest/doctest.h>

#include "host/model/transitions.h"

using namespace tide;
using namespace tide::model;

TEST_CASE("ledger: every state of every kind is reachable or initial, and terminal states lead nowhere") {
  for (RecordKind kind : {RecordKind::kCluster, RecordKind::kNode, RecordKind::kPlan, RecordKind::kDeployment,
                          RecordKind::kMetaInstance, RecordKind::kRuntimeInstance, RecordKind::kOperation}) {
    const auto& states = statesOf(kind);
    REQUIRE_FALSE(states.empty());
    for (size_t i = 1; i < states.size(); ++i) {
      bool reachable = false;
      for (const auto& from : states) reachable = reachable || checkTransition(kind, from, states[i]).isOk();
      CHECK_MESSAGE(reachable, recordKindName(kind), " state ", states[i], " is unreachable");
    }
    for (const auto& from : states) {
      if (!isTerminalState(kind, from)) continue;
      for (const auto& to : states) CHECK_FALSE(checkTransition(kind, from, to).isOk());
    }
  }
}

TEST_CASE("ledger: transition checks name both states and what is allowed") {
  CHECK(checkTransition(RecordKind::kNode, "ALLOCATED", "CORDONED").isOk());
  CHECK(checkTransition(RecordKind::kNode, "CORDONED", "ALLOCATED").isOk());
  Status bad = checkTransition(RecordKind::kNode, "UNALLOCATED", "CORDONED");
  CHECK(bad.code() == Code::kConflict);
  CHECK(bad.message().find("UNALLOCATED to CORDONED") != std::string::npos);
  CHECK(bad.message().find("ALLOCATED, EVICTED") != std::string::npos);
  CHECK(checkTransition(RecordKind::kOperation, "PENDING", "BOGUS").code() == Code::kInvalidArgument);
  CHECK(checkTransition(RecordKind::kDeployment, "CANCELLED", "IN_PROGRESS").code() == Code::kConflict);
  CHECK(checkTransition(RecordKind::kDeployment, "COMPLETED", "IN_PROGRESS").isOk());  // a restore
  CHECK(checkTransition(RecordKind::kRuntimeInstance, "FAILED", "STARTING").code() == Code::kConflict);
  CHECK(isTerminalState(RecordKind::kOperation, "SUCCEEDED"));
  CHECK_FALSE(isTerminalState(RecordKind::kOperation, "RUNNING"));
}
