#pragma once
// Which driver runs a cluster: one explicit table from driver kind ("process", "sim", "fault", "agent")
// to a factory. Adding a driver means adding a row in registry.cpp, nothing else.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drivers/driver.h"
#include "drivers/process/launch.h"
#include "drivers/process/process_driver.h"
#include "host/core/clock.h"

namespace tide::drivers {

class AgentHub;

// What the factories get from the host besides the cluster's own driver_config.
struct DriverContext {
  std::string data_dir;     // process state lives in <data_dir>/process
  std::string volume_root;  // empty: <data_dir>/volumes
  int port_range_start = 30000;
  int port_range_end = 32767;
  ImageCatalog image_catalog;
  std::optional<WorkloadUser> run_as;  // process workloads run as this user
  size_t log_max_bytes = 10 << 20;
  std::chrono::hours log_retention{24};
  std::string tide_binary;
  NodeVolumesFn node_volumes;
  std::string cluster;  // the cluster being built, scopes list() of process drivers
  // The host's clock, which sim drivers measure their latencies on; must outlive the drivers.
  // nullptr: the system clock.
  const Clock* clock = nullptr;
  // The host's node agents (docs/agents.md); agent clusters cannot be built without it.
  AgentHub* agent_hub = nullptr;
  // The names of a cluster's nodes, now; agent drivers list and watch these.
  std::function<std::vector<std::string>(const std::string& cluster)> cluster_nodes;
  // The node the ledger placed runtime instance `id` on, if it knows the id; agent drivers
  // ask it for the log of an instance no node's document lists any more.
  std::function<std::optional<std::string>(const std::string& id)> runtime_node;
};

using DriverFactory = Result<std::unique_ptr<Driver>> (*)(const Json& driver_config, const DriverContext& context);

struct DriverKind {
  std::string_view kind;
  std::string_view summary;
  DriverFactory factory;
};

// Every kind tide can build, in a fixed order.
const std::vector<DriverKind>& driverKinds();

// A driver of `kind` configured by `driver_config` (null or an object). kInvalidArgument
// for an unknown kind (the message lists the known ones) or a bad driver_config (details
// name the field); what the factory returns otherwise.
Result<std::unique_ptr<Driver>> makeDriver(const std::string& kind, const Json& driver_config,
                                           const DriverContext& context);

// The last `max_bytes` of a runtime instance's log, for `tide logs`: looks through fault
// drivers to the driver underneath. kUnprocessable when that driver keeps no logs (sim
// drivers among them).
Result<std::string> readInstanceLog(Driver& driver, const std::string& runtime_id, size_t max_bytes);
// As readInstanceLog without `from`; with it, what follows that place (ProcessDriver::readLogSlice).
// A slice of an agent's instance has no end: the agent hands out only a log's last bytes, so
// `from` is not honoured and the text is those bytes.
Result<LogSlice> readInstanceLogSlice(Driver& driver, const std::string& runtime_id,
                                      const std::optional<LogCursor>& from, size_t max_bytes);

}  // namespace tide::drivers
