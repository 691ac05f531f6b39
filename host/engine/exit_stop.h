#pragma once
// `tide serve --stop-workloads-on-exit` (docs/architecture.md#stopping-workloads-on-exit): when
// the host stops, it stops the workloads it runs through the process driver and records them
// STOPPED, so that the next host neither finds a discrepancy nor leaves them down.

#include <string>
#include <vector>

#include "host/core/status.h"
#include "host/engine/driver_set.h"
#include "host/ledger/ledger.h"

namespace tide::engine {

struct StoppedWorkloads {
  std::vector<std::string> stopped;  // meta instance names, their runtime now STOPPED
  std::vector<std::string> left;     // "name: why" for each one left running
};

// Stops every RUNNING runtime instance on a cluster of the `process` driver whose meta instance
// has no operation RUNNING (an operation under way resumes from its recorded steps at the next
// start, and owns its instance until then): RUNNING → STOPPING → driver stop → STOPPED, the
// reservation kept. Appends one `host.workloads_stopped` event naming them. Call it after the
// control loop has stopped. A runtime the driver cannot stop stays as it was, in `left`.
Result<StoppedWorkloads> stopWorkloadsOnExit(ledger::Ledger& ledger, DriverSet& drivers, const std::string& actor);

}  // namespace tide::engine
