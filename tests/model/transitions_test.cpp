#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "host/model/records.h"
#include "host/model/transitions.h"

using namespace tide;
using namespace tide::model;

TEST_CASE("model: every state of every kind is reachable or initial, and terminal states lead nowhere") {
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

TEST_CASE("model: transition checks name both states and what is allowed") {
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

TEST_CASE("model: the state predicates agree with the transition table") {
  for (const std::string& state : statesOf(RecordKind::kOperation)) {
    CHECK(isTerminalOperationState(state) == isTerminalState(RecordKind::kOperation, state));
  }
  CHECK(holdsResources(runtime_state::kStopped));
  CHECK(holdsResources(runtime_state::kPending));
  CHECK_FALSE(holdsResources(runtime_state::kTerminated));
  CHECK_FALSE(holdsResources(runtime_state::kFailed));
  CHECK_FALSE(holdsResources("NO_SUCH_STATE"));
  // A rollout is over in every state the deployment's own progress cannot leave.
  for (const std::string& state : statesOf(RecordKind::kDeployment)) {
    const bool moves_on = state == deployment_state::kPending || state == deployment_state::kInProgress ||
                          state == deployment_state::kPaused;
    CHECK_MESSAGE(isRolloutOver(state) == !moves_on, state);
    if (isTerminalState(RecordKind::kDeployment, state)) CHECK(isRolloutOver(state));
  }
}

TEST_CASE("model: an operation fits its meta instance's state, or the refusal names both") {
  // {type, meta state, active runtime state ("" when none holds resources), fits}
  struct Case {
    const char* type;
    const char* meta;
    const char* runtime;
    bool fits;
  };
  const Case cases[] = {
      {"CREATE", "ACTIVE", "", true},
      {"CREATE", "ACTIVE", "PENDING", true},
      {"CREATE", "ACTIVE", "RUNNING", false},
      {"CREATE", "ACTIVE", "STOPPED", false},
      {"CREATE", "STOPPED", "", false},
      {"UPDATE", "ACTIVE", "RUNNING", true},
      {"UPDATE", "ACTIVE", "STARTING", true},
      {"UPDATE", "ACTIVE", "", false},
      {"UPDATE", "ACTIVE", "PENDING", false},
      {"UPDATE", "STOPPED", "", false},
      {"RELOCATE", "ACTIVE", "RUNNING", true},
      {"RELOCATE", "ACTIVE", "", false},
      {"RELOCATE", "STOPPED", "", false},
      {"STOP", "ACTIVE", "RUNNING", true},
      {"STOP", "ACTIVE", "", true},
      {"STOP", "STOPPED", "", false},
      {"RESTART", "ACTIVE", "RUNNING", true},
      {"RESTART", "ACTIVE", "", true},
      {"RESTART", "STOPPED", "", true},
      {"RESTART", "MARKED_FOR_DELETION", "", false},
      {"DELETE", "ACTIVE", "RUNNING", true},
      {"DELETE", "STOPPED", "", true},
      {"DELETE", "MARKED_FOR_DELETION", "", true},
      {"DELETE", "DELETED", "", false},
      {"STOP", "MARKED_FOR_DELETION", "", false},
  };
  for (const Case& c : cases) {
    const Status fits = checkOperationFits(c.type, c.meta, c.runtime);
    CHECK_MESSAGE(fits.isOk() == c.fits, c.type, " on ", c.meta, "/", c.runtime, ": ", fits.toString());
    if (fits.isOk()) continue;
    CHECK(fits.code() == Code::kConflict);
    CHECK(fits.message().find(c.type) != std::string::npos);
    CHECK(fits.message().find(c.meta) != std::string::npos);
    if (std::string(c.runtime) == "RUNNING") CHECK(fits.message().find("RUNNING") != std::string::npos);
  }
  CHECK(
      checkOperationFits("CREATE", "ACTIVE", "RUNNING").message() ==
      "CREATE needs an ACTIVE instance that runs nowhere; the instance is ACTIVE and its runtime instance is RUNNING");
  CHECK(checkOperationFits("EXPLODE", "ACTIVE", "").code() == Code::kInvalidArgument);
}

TEST_CASE("model: every state names each state of any kind once, sorted") {
  const std::vector<std::string>& every = everyState();
  CHECK(std::is_sorted(every.begin(), every.end()));
  CHECK(std::adjacent_find(every.begin(), every.end()) == every.end());
  for (RecordKind kind : {RecordKind::kCluster, RecordKind::kNode, RecordKind::kPlan, RecordKind::kDeployment,
                          RecordKind::kMetaInstance, RecordKind::kRuntimeInstance, RecordKind::kOperation}) {
    for (const std::string& state : statesOf(kind)) {
      CHECK_MESSAGE(std::binary_search(every.begin(), every.end(), state), state);
    }
  }
  CHECK_FALSE(std::binary_search(every.begin(), every.end(), std::string("DONE")));
}

TEST_CASE("model: a plan's current deployment is its newest unfinished one, else its newest completed one") {
  auto deployments = [](std::initializer_list<const char*> states) {
    std::vector<Deployment> out;
    for (const char* state : states) {
      Deployment d;
      d.deployment_id = "d" + std::to_string(out.size() + 1);
      d.state = state;
      out.push_back(d);
    }
    return out;
  };
  auto current = [](const std::vector<Deployment>& oldest_first) {
    const Deployment* d = currentDeployment(oldest_first);
    return d == nullptr ? std::string() : d->deployment_id;
  };
  CHECK(current({}).empty());
  CHECK(current(deployments({"COMPLETED", "COMPLETED", "FAILED"})) == "d2");
  CHECK(current(deployments({"COMPLETED", "PAUSED", "COMPLETED"})) == "d2");
  CHECK(current(deployments({"IN_PROGRESS", "PENDING", "ROLLED_BACK"})) == "d2");
  CHECK(current(deployments({"FAILED", "CANCELLED"})).empty());
}
