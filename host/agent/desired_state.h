#pragma once
// The desired-state document a node agent pulls from its host (docs/agents.md#the-protocol),
// typed once at the edge: the agent works on these structs, never on the JSON.

#include <cstdint>
#include <string>
#include <vector>

#include "drivers/driver.h"
#include "host/core/status.h"

namespace tide::agent {

// Which document an agent has applied: documents are ordered by epoch, then revision.
struct DocumentVersion {
  int64_t epoch = 0;
  int64_t revision = 0;
};

struct DesiredInstance {
  drivers::RuntimeSpec spec;  // node set to the agent's; health_check when the entry has one
  bool want_running = true;   // "running"; false for "stopped"
};

struct DesiredState {
  DocumentVersion version;
  std::vector<DesiredInstance> instances;
  std::vector<drivers::VolumeSpec> volumes;
  std::vector<std::string> logs;  // ids whose log tail the host waits for
};

// The document as the host sent it, for node `node`. kInvalidArgument naming the field
// ("instances[2].want") for a document of another node or one that does not have the
// protocol's shape.
Result<DesiredState> parseDesiredState(const model::Json& document, const std::string& node);

}  // namespace tide::agent
