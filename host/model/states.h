#pragma once
// The one vocabulary of record states and operation types
// (docs/architecture.md#state-transitions): an enum per record kind's state, one for the
// operation types, and the one spelling of each value on the wire (JSON, ledger rows, query
// parameters, Lua tables, CLI output). Code names a state by its enum value; a string
// becomes one only through parse() (or from_json), which refuses what it does not know.
// Which moves between states are legal, and what a state means (holds resources, ends a
// rollout), is decided in transitions.h.

#include <array>
#include <cstddef>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tide::model {

// Each enum lists its values in lifecycle order; Spelling<E> below spells them in the same
// order.
enum class ClusterState { kActive, kInactive };
enum class NodeState { kUnallocated, kAllocated, kCordoned, kDraining, kSanitizing, kEvicted };
enum class PlanState { kActive, kInactive };
enum class DeploymentState { kPending, kInProgress, kPaused, kCompleted, kFailed, kCancelled, kRolledBack };
enum class MetaState { kActive, kStopped, kMarkedForDeletion, kDeleted };
enum class RuntimeState { kPending, kStarting, kRunning, kStopping, kStopped, kTerminated, kFailed };
enum class OperationState {
  kPending,
  kPendingApproval,
  kApproved,
  kRunning,
  kSucceeded,
  kFailed,
  kRejected,
  kCancelled
};
// MRDS's six operation types.
enum class OperationType { kCreate, kUpdate, kRelocate, kStop, kRestart, kDelete };
// What a driver (or a node agent) reports of a workload it runs: drivers::RuntimeStatus. Not
// a record's state; the engine moves a runtime instance's state by what it reads here.
enum class WorkloadState { kPending, kStarting, kRunning, kStopped, kExited, kUnknown };
// What the API shows of an API token: live, revoked, or past its expiry (derived on read).
enum class TokenState { kActive, kRevoked, kExpired };

// What each value is called on the wire (kNames, indexed by the value) and what the
// vocabulary is called in errors (kWhat).
template <class E>
struct Spelling;

template <>
struct Spelling<ClusterState> {
  static constexpr std::string_view kWhat = "cluster state";
  static constexpr std::array<std::string_view, 2> kNames = {"ACTIVE", "INACTIVE"};
};
template <>
struct Spelling<NodeState> {
  static constexpr std::string_view kWhat = "node state";
  static constexpr std::array<std::string_view, 6> kNames = {"UNALLOCATED", "ALLOCATED",  "CORDONED",
                                                             "DRAINING",    "SANITIZING", "EVICTED"};
};
template <>
struct Spelling<PlanState> {
  static constexpr std::string_view kWhat = "plan state";
  static constexpr std::array<std::string_view, 2> kNames = {"ACTIVE", "INACTIVE"};
};
template <>
struct Spelling<DeploymentState> {
  static constexpr std::string_view kWhat = "deployment state";
  static constexpr std::array<std::string_view, 7> kNames = {"PENDING", "IN_PROGRESS", "PAUSED",     "COMPLETED",
                                                             "FAILED",  "CANCELLED",   "ROLLED_BACK"};
};
template <>
struct Spelling<MetaState> {
  static constexpr std::string_view kWhat = "meta instance state";
  static constexpr std::array<std::string_view, 4> kNames = {"ACTIVE", "STOPPED", "MARKED_FOR_DELETION", "DELETED"};
};
template <>
struct Spelling<RuntimeState> {
  static constexpr std::string_view kWhat = "runtime instance state";
  static constexpr std::array<std::string_view, 7> kNames = {"PENDING", "STARTING",   "RUNNING", "STOPPING",
                                                             "STOPPED", "TERMINATED", "FAILED"};
};
template <>
struct Spelling<OperationState> {
  static constexpr std::string_view kWhat = "operation state";
  static constexpr std::array<std::string_view, 8> kNames = {"PENDING",   "PENDING_APPROVAL", "APPROVED", "RUNNING",
                                                             "SUCCEEDED", "FAILED",           "REJECTED", "CANCELLED"};
};
template <>
struct Spelling<OperationType> {
  static constexpr std::string_view kWhat = "operation type";
  static constexpr std::array<std::string_view, 6> kNames = {"CREATE", "UPDATE",  "RELOCATE",
                                                             "STOP",   "RESTART", "DELETE"};
};

template <>
struct Spelling<WorkloadState> {
  static constexpr std::string_view kWhat = "workload state";
  static constexpr std::array<std::string_view, 6> kNames = {"PENDING", "STARTING", "RUNNING",
                                                             "STOPPED", "EXITED",   "UNKNOWN"};
};

template <>
struct Spelling<TokenState> {
  static constexpr std::string_view kWhat = "token state";
  static constexpr std::array<std::string_view, 3> kNames = {"ACTIVE", "REVOKED", "EXPIRED"};
};

// The enums above, and nothing else.
template <class E>
concept Vocabulary = std::is_enum_v<E> && requires {
  Spelling<E>::kNames;
};

// Every value of E, in lifecycle order.
template <Vocabulary E>
constexpr auto valuesOf() {
  std::array<E, Spelling<E>::kNames.size()> values{};
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<E>(i);
  return values;
}

// The wire spelling of `value` ("RUNNING"). A std::string, so it concatenates and binds.
template <Vocabulary E>
const std::string& spellingOf(E value) {
  static const auto kStrings = [] {
    std::array<std::string, Spelling<E>::kNames.size()> strings;
    for (std::size_t i = 0; i < strings.size(); ++i) strings[i] = std::string(Spelling<E>::kNames[i]);
    return strings;
  }();
  return kStrings[static_cast<std::size_t>(value)];
}

// spellingOf as plain functions, one per vocabulary: a function template named toString would
// tie with the generic ones other libraries call unqualified (doctest's), found by ADL.
inline const std::string& toString(ClusterState value) { return spellingOf(value); }
inline const std::string& toString(NodeState value) { return spellingOf(value); }
inline const std::string& toString(PlanState value) { return spellingOf(value); }
inline const std::string& toString(DeploymentState value) { return spellingOf(value); }
inline const std::string& toString(MetaState value) { return spellingOf(value); }
inline const std::string& toString(RuntimeState value) { return spellingOf(value); }
inline const std::string& toString(OperationState value) { return spellingOf(value); }
inline const std::string& toString(OperationType value) { return spellingOf(value); }
inline const std::string& toString(WorkloadState value) { return spellingOf(value); }
inline const std::string& toString(TokenState value) { return spellingOf(value); }

// Every value's wire spelling, in lifecycle order: what a query parameter or body field may say.
template <Vocabulary E>
const std::vector<std::string>& namesOf() {
  static const std::vector<std::string> kNames(Spelling<E>::kNames.begin(), Spelling<E>::kNames.end());
  return kNames;
}

// The value `text` spells exactly (case matters), nullopt for any other text.
template <Vocabulary E>
constexpr std::optional<E> parse(std::string_view text) {
  for (std::size_t i = 0; i < Spelling<E>::kNames.size(); ++i) {
    if (Spelling<E>::kNames[i] == text) return static_cast<E>(i);
  }
  return std::nullopt;
}

// A value as its wire string; reading one back throws std::invalid_argument naming the
// string when it is not one of E's ("unknown operation state 'BOGUS'"), never guessing.
template <Vocabulary E>
void to_json(nlohmann::json& j, E value) {
  j = toString(value);
}
template <Vocabulary E>
void from_json(const nlohmann::json& j, E& value) {
  const std::string text = j.is_string() ? j.get<std::string>() : j.dump();
  const std::optional<E> parsed = parse<E>(text);
  if (!parsed) throw std::invalid_argument("unknown " + std::string(Spelling<E>::kWhat) + " '" + text + "'");
  value = *parsed;
}

// For logs and test failure messages.
template <Vocabulary E>
std::ostream& operator<<(std::ostream& out, E value) {
  return out << toString(value);
}

}  // namespace tide::model
