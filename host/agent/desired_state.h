#pragma once
// The desired-state document a node agent pulls from its host (docs/agents.md#the-protocol),
// typed once at the edge: the agent works on these structs, never on the JSON. The JSON is
// read by the protocol's own reader (drivers/agent/agent_protocol.h), the one the host's
// documents are written for.

#include <cstdint>
#include <string>
#include <vector>

#include "drivers/agent/agent_protocol.h"
#include "drivers/driver.h"
#include "host/core/status.h"

namespace tide::agent {

// Which document an agent has applied: documents are ordered by epoch, then revision.
using DocumentVersion = drivers::DocumentVersion;

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
