#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "host/model/records.h"
#include "host/model/transitions.h"

using namespace tide;
using namespace tide::model;

namespace {

// The value a test names by its wire string.
template <Vocabulary E>
E as(std::string_view text) {
  const std::optional<E> value = parse<E>(text);
  REQUIRE_MESSAGE(value.has_value(), text);
  return *value;
}

template <RecordState E>
void checkReachableAndTerminal() {
  const auto states = valuesOf<E>();
  for (size_t i = 1; i < states.size(); ++i) {
    bool reachable = false;
    for (E from : states) reachable = reachable || checkTransition(from, states[i]).isOk();
    CHECK_MESSAGE(reachable, recordKindName(recordKindOf<E>()), " state ", states[i], " is unreachable");
  }
  for (E from : states) {
    if (!isTerminal(from)) continue;
    for (E to : states) CHECK_FALSE(checkTransition(from, to).isOk());
  }
}

}  // namespace

TEST_CASE("model: every state of every kind is reachable or initial, and terminal states lead nowhere") {
  checkReachableAndTerminal<ClusterState>();
  checkReachableAndTerminal<NodeState>();
  checkReachableAndTerminal<PlanState>();
  checkReachableAndTerminal<DeploymentState>();
  checkReachableAndTerminal<MetaState>();
  checkReachableAndTerminal<RuntimeState>();
  checkReachableAndTerminal<OperationState>();
}

TEST_CASE("model: transition checks name both states and what is allowed") {
  CHECK(checkTransition(as<NodeState>("ALLOCATED"), as<NodeState>("CORDONED")).isOk());
  CHECK(checkTransition(as<NodeState>("CORDONED"), as<NodeState>("ALLOCATED")).isOk());
  Status bad = checkTransition(as<NodeState>("UNALLOCATED"), as<NodeState>("CORDONED"));
  CHECK(bad.code() == Code::kConflict);
  CHECK(bad.message().find("UNALLOCATED to CORDONED") != std::string::npos);
  CHECK(bad.message().find("ALLOCATED, EVICTED") != std::string::npos);
  Result<OperationState> bogus = parseState<OperationState>("BOGUS");
  CHECK(bogus.status().code() == Code::kInvalidArgument);
  CHECK(bogus.status().message().find("operation has no state 'BOGUS' (states: PENDING, ") != std::string::npos);
  CHECK(checkTransition(as<DeploymentState>("CANCELLED"), as<DeploymentState>("IN_PROGRESS")).code() ==
        Code::kConflict);
  CHECK(checkTransition(as<DeploymentState>("COMPLETED"), as<DeploymentState>("IN_PROGRESS")).isOk());  // a restore
  CHECK(checkTransition(as<RuntimeState>("FAILED"), as<RuntimeState>("STARTING")).code() == Code::kConflict);
  CHECK(isTerminal(as<OperationState>("SUCCEEDED")));
  CHECK_FALSE(isTerminal(as<OperationState>("RUNNING")));
}

TEST_CASE("model: the state predicates agree with the transition table") {
  for (OperationState state : valuesOf<OperationState>()) {
    CHECK(isUnfinished(state) == !isTerminal(state));
    if (isInFlight(state) || isBeforeRunning(state)) CHECK(isUnfinished(state));
  }
  CHECK(holdsResources(RuntimeState::kStopped));
  CHECK(holdsResources(RuntimeState::kPending));
  CHECK_FALSE(holdsResources(RuntimeState::kTerminated));
  CHECK_FALSE(holdsResources(RuntimeState::kFailed));
  for (RuntimeState state : valuesOf<RuntimeState>()) {
    if (runsOrStarts(state)) CHECK(holdsResources(state));
  }
  // A rollout is over in every state the deployment's own progress cannot leave.
  for (DeploymentState state : valuesOf<DeploymentState>()) {
    const bool moves_on = state == DeploymentState::kPending || state == DeploymentState::kInProgress ||
                          state == DeploymentState::kPaused;
    CHECK_MESSAGE(isRolloutOver(state) == !moves_on, state);
    if (isTerminal(state)) CHECK(isRolloutOver(state));
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
  auto runtime = [](const char* state) {
    return std::string(state).empty() ? std::nullopt : std::optional<RuntimeState>(as<RuntimeState>(state));
  };
  for (const Case& c : cases) {
    const Status fits = checkOperationFits(as<OperationType>(c.type), as<MetaState>(c.meta), runtime(c.runtime));
    CHECK_MESSAGE(fits.isOk() == c.fits, c.type, " on ", c.meta, "/", c.runtime, ": ", fits.toString());
    if (fits.isOk()) continue;
    CHECK(fits.code() == Code::kConflict);
    CHECK(fits.message().find(c.type) != std::string::npos);
    CHECK(fits.message().find(c.meta) != std::string::npos);
    if (std::string(c.runtime) == "RUNNING") CHECK(fits.message().find("RUNNING") != std::string::npos);
  }
  CHECK(
      checkOperationFits(OperationType::kCreate, MetaState::kActive, RuntimeState::kRunning).message() ==
      "CREATE needs an ACTIVE instance that runs nowhere; the instance is ACTIVE and its runtime instance is RUNNING");
  CHECK_FALSE(parse<OperationType>("EXPLODE").has_value());
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
      d.state = as<DeploymentState>(state);
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
