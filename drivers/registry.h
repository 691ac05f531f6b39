#pragma once
// Which driver runs a cluster: one explicit table from driver kind ("process", "container",
// "sim", "fault", "agent") to the kind's config parser and factory, in the shape every extension family
// shares (extension_table.h). Adding a driver means adding a row in registry.cpp, nothing else.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "drivers/driver.h"
#include "drivers/extension_table.h"
#include "drivers/process/launch.h"
#include "drivers/process/process_driver.h"
#include "host/core/clock.h"

namespace tide::drivers {

class AgentHub;

// What the factories get from the host besides the cluster's own driver_config.
struct DriverContext {
  std::string data_dir;     // process state lives in <data_dir>/process, container state in <data_dir>/container
  std::string volume_root;  // empty: <data_dir>/volumes
  int port_range_start = 30000;
  int port_range_end = 32767;
  ImageCatalog image_catalog;
  std::optional<WorkloadUser> run_as;  // process workloads run as this user
  size_t log_max_bytes = 10 << 20;
  std::chrono::hours log_retention{24};
  std::string tide_binary;
  NodeVolumesFn node_volumes;
  std::string cluster;  // the cluster being built, scopes list() of process and container drivers
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

// A row of the driver table: kind, summary, the kind's driver_config parser, its factory.
using DriverKind = ExtensionKind<Driver, DriverContext>;

// Every kind tide can build, in a fixed order.
const std::vector<DriverKind>& driverKinds();

// A driver of `kind` configured by `driver_config` (null or an object). kInvalidArgument
// for an unknown kind (the message lists the known ones) or a bad driver_config (details
// name the field); what the factory returns otherwise.
Result<std::unique_ptr<Driver>> makeDriver(const std::string& kind, const Json& driver_config,
                                           const DriverContext& context);

// What makeDriver would say of `kind` and `driver_config`, building nothing.
Status checkDriverConfig(const std::string& kind, const Json& driver_config);

}  // namespace tide::drivers
