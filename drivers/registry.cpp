#include "drivers/registry.h"

#include <filesystem>

#include "drivers/agent/agent_driver.h"
#include "drivers/container/container_driver.h"
#include "drivers/fault/fault_driver.h"
#include "drivers/sim/sim_driver.h"

namespace tide::drivers {
namespace {

// The factories: each kind's parsed config joined with what the host provides.

Result<std::unique_ptr<Driver>> makeProcessDriver(const ProcessDriverConfig& config, const DriverContext& context) {
  if (context.data_dir.empty()) return Status::invalidArgument("process driver: no data dir");
  const std::filesystem::path data_dir(context.data_dir);
  ProcessDriverOptions options;
  options.stop_grace = config.stop_grace;
  options.state_dir = (data_dir / "process").string();
  options.volume_root = context.volume_root.empty() ? (data_dir / "volumes").string() : context.volume_root;
  options.port_range_start = context.port_range_start;
  options.port_range_end = context.port_range_end;
  options.image_catalog = context.image_catalog;
  options.tide_binary = context.tide_binary;
  options.node_volumes = context.node_volumes;
  options.cluster = context.cluster;
  options.run_as = context.run_as;
  options.log_max_bytes = context.log_max_bytes;
  options.log_retention = context.log_retention;
  options.clock = context.clock;
  TIDE_ASSIGN_OR_RETURN(std::unique_ptr<ProcessDriver> driver, ProcessDriver::create(std::move(options)));
  return std::unique_ptr<Driver>(std::move(driver));
}

Result<std::unique_ptr<Driver>> makeContainerDriver(const ContainerDriverConfig& config, const DriverContext& context) {
  if (context.data_dir.empty()) return Status::invalidArgument("container driver: no data dir");
  const std::filesystem::path data_dir(context.data_dir);
  ContainerDriverOptions options;
  options.config = config;
  options.state_dir = (data_dir / "container").string();
  options.volume_root = context.volume_root.empty() ? (data_dir / "volumes").string() : context.volume_root;
  options.port_range_start = context.port_range_start;
  options.port_range_end = context.port_range_end;
  options.node_volumes = context.node_volumes;
  options.cluster = context.cluster;
  options.log_max_bytes = context.log_max_bytes;
  options.log_retention = context.log_retention;
  options.clock = context.clock;
  TIDE_ASSIGN_OR_RETURN(std::unique_ptr<ContainerDriver> driver, ContainerDriver::create(std::move(options)));
  return std::unique_ptr<Driver>(std::move(driver));
}

Result<std::unique_ptr<Driver>> makeSimDriver(const SimOptions& config, const DriverContext& context) {
  static const SystemClock kSystemClock;
  SimOptions options = config;
  options.port_range_start = context.port_range_start;
  options.port_range_end = context.port_range_end;
  options.node_volumes = context.node_volumes;
  const Clock& clock = context.clock != nullptr ? *context.clock : kSystemClock;
  return std::unique_ptr<Driver>(std::make_unique<SimDriver>(std::move(options), clock));
}

Result<std::unique_ptr<Driver>> makeFaultDriver(const FaultOptions& config, const DriverContext& context) {
  Result<std::unique_ptr<Driver>> inner = makeDriver(config.inner, config.inner_config, context);
  if (!inner.isOk()) return inner.status().withPrefix("fault driver: inner driver " + config.inner);
  return std::unique_ptr<Driver>(std::make_unique<FaultDriver>(std::move(inner).value(), config));
}

Result<std::unique_ptr<Driver>> makeAgentDriver(const AgentDriverOptions& config, const DriverContext& context) {
  if (context.agent_hub == nullptr) {
    return Status::invalidArgument("agent driver: this host serves no node agents (no agent hub)",
                                   {{"driver_kind", "agent clusters need a host that serves agents (tide serve)", ""}});
  }
  AgentDriverOptions options = config;
  options.cluster = context.cluster;
  if (context.cluster_nodes) {
    options.cluster_nodes = [nodes = context.cluster_nodes, cluster = context.cluster] { return nodes(cluster); };
  }
  options.runtime_node = context.runtime_node;
  return std::unique_ptr<Driver>(std::make_unique<AgentDriver>(*context.agent_hub, std::move(options)));
}

Result<const DriverKind*> findDriverKind(const std::string& kind) {
  return findKind(driverKinds(), kind, "driver", "driver_kind");
}

}  // namespace

const std::vector<DriverKind>& driverKinds() {
  static const std::vector<DriverKind> kKinds = {
      {"process", "local processes, one logical node per cluster node", parseProcessDriverConfig, makeProcessDriver},
      {"container", "OCI containers run by Podman (runc) on this machine, adopted by label after a restart",
       parseContainerDriverConfig, makeContainerDriver},
      {"sim", "in-memory runtimes with seeded latencies, failures and health, for scale tests and dry runs",
       parseSimOptions, makeSimDriver},
      {"fault", "wraps another driver and injects errors, latency, hangs and lost replies", parseFaultOptions,
       makeFaultDriver},
      {"agent", "node agents (tide agent) run the instances on their own machines", parseAgentDriverOptions,
       makeAgentDriver},
  };
  return kKinds;
}

Result<std::unique_ptr<Driver>> makeDriver(const std::string& kind, const Json& driver_config,
                                           const DriverContext& context) {
  TIDE_ASSIGN_OR_RETURN(const DriverKind* row, findDriverKind(kind));
  return row->make(driver_config, context);
}

Status checkDriverConfig(const std::string& kind, const Json& driver_config) {
  TIDE_ASSIGN_OR_RETURN(const DriverKind* row, findDriverKind(kind));
  return row->check(driver_config);
}

}  // namespace tide::drivers
