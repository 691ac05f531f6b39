#include "drivers/registry.h"

#include <filesystem>

#include "drivers/agent/agent_driver.h"
#include "drivers/failpoint/failpoint_driver.h"
#include "drivers/fault/fault_driver.h"
#include "drivers/sim/sim_driver.h"

namespace tide::drivers {
namespace {

// A process cluster's driver_config: {"stop_grace_seconds": N} (optional).
Result<std::unique_ptr<Driver>> makeProcessDriver(const Json& config, const DriverContext& context) {
  ProcessDriverOptions options;
  if (!config.is_null() && !config.is_object()) {
    return Status::invalidArgument("process driver: bad driver_config", {{"driver_config", "must be an object", ""}});
  }
  std::vector<ErrorDetail> problems;
  if (config.is_object()) {
    for (const auto& [key, value] : config.items()) {
      if (key != "stop_grace_seconds") {
        problems.push_back({"driver_config." + key, "unknown key (known: stop_grace_seconds)", ""});
      } else if (!value.is_number() || value.get<double>() < 0 || value.get<double>() > 3600) {
        problems.push_back({"driver_config.stop_grace_seconds", "must be a number of seconds in [0, 3600]", ""});
      } else {
        options.stop_grace = std::chrono::milliseconds(static_cast<int64_t>(value.get<double>() * 1000));
      }
    }
  }
  if (!problems.empty()) return Status::invalidArgument("process driver: bad driver_config", problems);
  if (context.data_dir.empty()) return Status::invalidArgument("process driver: no data dir");
  std::filesystem::path data_dir(context.data_dir);
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

Result<std::unique_ptr<Driver>> makeSimDriver(const Json& config, const DriverContext& context) {
  static const SystemClock kSystemClock;
  TIDE_ASSIGN_OR_RETURN(SimOptions options, parseSimOptions(config));
  options.port_range_start = context.port_range_start;
  options.port_range_end = context.port_range_end;
  options.node_volumes = context.node_volumes;
  const Clock& clock = context.clock != nullptr ? *context.clock : kSystemClock;
  return std::unique_ptr<Driver>(std::make_unique<SimDriver>(std::move(options), clock));
}

Result<std::unique_ptr<Driver>> makeFaultDriver(const Json& config, const DriverContext& context) {
  TIDE_ASSIGN_OR_RETURN(FaultOptions options, parseFaultOptions(config));
  Result<std::unique_ptr<Driver>> inner = makeDriver(options.inner, options.inner_config, context);
  if (!inner.isOk()) return inner.status().withPrefix("fault driver: inner driver " + options.inner);
  return std::unique_ptr<Driver>(std::make_unique<FaultDriver>(std::move(inner).value(), std::move(options)));
}

Result<std::unique_ptr<Driver>> makeAgentDriver(const Json& config, const DriverContext& context) {
  TIDE_ASSIGN_OR_RETURN(AgentDriverOptions options, parseAgentDriverOptions(config));
  if (context.agent_hub == nullptr) {
    return Status::invalidArgument("agent driver: this host serves no node agents (no agent hub)",
                                   {{"driver_kind", "agent clusters need a host that serves agents (tide serve)", ""}});
  }
  options.cluster = context.cluster;
  if (context.cluster_nodes) {
    options.cluster_nodes = [nodes = context.cluster_nodes, cluster = context.cluster] { return nodes(cluster); };
  }
  options.runtime_node = context.runtime_node;
  return std::unique_ptr<Driver>(std::make_unique<AgentDriver>(*context.agent_hub, std::move(options)));
}

}  // namespace

const std::vector<DriverKind>& driverKinds() {
  static const std::vector<DriverKind> kKinds = {
      {"process", "local processes, one logical node per cluster node", makeProcessDriver},
      {"sim", "in-memory runtimes with seeded latencies, failures and health, for scale tests and dry runs",
       makeSimDriver},
      {"fault", "wraps another driver and injects errors, latency, hangs and lost replies", makeFaultDriver},
      {"agent", "node agents (tide agent) run the instances on their own machines", makeAgentDriver},
  };
  return kKinds;
}

Result<std::unique_ptr<Driver>> makeDriver(const std::string& kind, const Json& driver_config,
                                           const DriverContext& context) {
  std::string known;
  for (const DriverKind& entry : driverKinds()) {
    if (entry.kind == kind) return entry.factory(driver_config, context);
    known += (known.empty() ? "" : ", ") + std::string(entry.kind);
  }
  return Status::invalidArgument("unknown driver kind \"" + kind + "\" (known: " + known + ")",
                                 {{"driver_kind", "unknown driver kind; known: " + known, ""}});
}

Result<LogSlice> readInstanceLogSlice(Driver& driver, const std::string& runtime_id,
                                      const std::optional<LogCursor>& from, size_t max_bytes) {
  if (auto* process = dynamic_cast<ProcessDriver*>(&driver)) return process->readLogSlice(runtime_id, from, max_bytes);
  if (auto* fault = dynamic_cast<FaultDriver*>(&driver)) {
    return readInstanceLogSlice(fault->inner(), runtime_id, from, max_bytes);
  }
  if (auto* failpoints = dynamic_cast<FailpointDriver*>(&driver)) {
    return readInstanceLogSlice(failpoints->inner(), runtime_id, from, max_bytes);
  }
  if (auto* agent = dynamic_cast<AgentDriver*>(&driver)) {
    // An agent posts only the last bytes of a log (docs/agents.md): no place to go on from.
    TIDE_ASSIGN_OR_RETURN(std::string text, agent->readLog(runtime_id, max_bytes));
    return LogSlice{.text = std::move(text), .end = std::nullopt, .continues = !from};
  }
  if (dynamic_cast<SimDriver*>(&driver) != nullptr) {
    return Status::unprocessable("the sim driver keeps no logs: its instances run nothing");
  }
  return Status::unprocessable("this cluster's driver keeps no logs");
}

Result<std::string> readInstanceLog(Driver& driver, const std::string& runtime_id, size_t max_bytes) {
  TIDE_ASSIGN_OR_RETURN(LogSlice slice, readInstanceLogSlice(driver, runtime_id, std::nullopt, max_bytes));
  return std::move(slice.text);
}

}  // namespace tide::drivers
