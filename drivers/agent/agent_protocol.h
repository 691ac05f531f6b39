#pragma once
// The two documents host and node agent exchange (docs/agents.md#the-protocol), as types and
// their JSON: the desired state of a node the host serves, and the report an agent posts.
// Both sides (the host's AgentHub, `tide agent`) convert through these functions only.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "drivers/driver.h"
#include "host/core/status.h"

namespace tide::drivers {

inline constexpr const char* kWantRunning = "running";
inline constexpr const char* kWantStopped = "stopped";

// One instance a node should run (want "running") or keep stopped (want "stopped").
// spec.node is the document's node.
struct DesiredInstance {
  RuntimeSpec spec;
  std::string want = kWantRunning;
};

// Where a node's document stands: `epoch` grows at every start of the host, `revision` at
// every change of the document within an epoch.
struct DocumentVersion {
  int64_t epoch = 0;
  int64_t revision = 0;
  bool operator==(const DocumentVersion&) const = default;
};

struct DesiredDocument {
  std::string node;
  DocumentVersion version;
  std::vector<DesiredInstance> instances;  // by id, ascending
  std::vector<VolumeSpec> volumes;         // by id, ascending
  std::vector<std::string> logs;           // runtime ids whose log tail the host waits for
};

struct ReportedInstance {
  std::string id;
  RuntimeStatus status;  // state RUNNING | STOPPED | EXITED (| STARTING | PENDING | UNKNOWN)
};

struct ReportedVolume {
  std::string id;
  bool ready = false;
  std::string message;
};

struct AgentReport {
  std::string agent_version;
  int64_t epoch = 0;
  int64_t applied_revision = 0;
  std::optional<model::Resources> resources;  // the machine's, when the agent measured them
  std::vector<ReportedInstance> instances;    // the agent's whole inventory
  std::vector<ReportedVolume> volumes;
};

Json desiredToJson(const DesiredDocument& document);
// kInvalidArgument naming the first bad field ("instances[2].want", ...).
Result<DesiredDocument> desiredFromJson(const Json& json);

Json reportToJson(const AgentReport& report);
// kInvalidArgument with one detail per bad field ("instances[0].state", ...); nothing is
// taken from a report with a bad field.
Result<AgentReport> reportFromJson(const Json& json);

// The entry of one instance in a desired document, and back (used for the host's files too).
Json desiredInstanceToJson(const DesiredInstance& instance);
Json volumeToJson(const VolumeSpec& volume);

}  // namespace tide::drivers
