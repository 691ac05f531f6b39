#include "drivers/agent/agent_driver.h"

#include <algorithm>

#include "host/core/json_reader.h"
#include "host/model/transitions.h"

namespace tide::drivers {
namespace {

const ReportedInstance* findReported(const AgentReport& report, const std::string& id) {
  for (const ReportedInstance& instance : report.instances) {
    if (instance.id == id) return &instance;
  }
  return nullptr;
}

bool stoppedOrGone(const AgentReport& report, const std::string& id) {
  const ReportedInstance* instance = findReported(report, id);
  return instance == nullptr || model::hasEnded(instance->status.state);
}

RuntimeStatus pending() {
  RuntimeStatus status;
  status.state = model::WorkloadState::kPending;
  return status;
}

}  // namespace

Result<AgentDriverOptions> parseAgentDriverOptions(const Json& config) {
  AgentDriverOptions options;
  if (config.is_null()) return options;
  JsonProblems problems;
  JsonReader r(config, "driver_config", problems);
  r.onlyKeys({"confirm_timeout_s"});
  if (auto seconds = r.number("confirm_timeout_s", JsonNeed::kOptional, {0, 3600, true},
                              "must be a number of seconds in (0, 3600]")) {
    options.confirm_timeout = std::chrono::milliseconds(static_cast<int64_t>(*seconds * 1000));
  }
  if (!problems.empty()) return problems.toStatus("agent driver: bad driver_config");
  return options;
}

AgentDriver::AgentDriver(AgentHub& hub, AgentDriverOptions options) : hub_(hub), options_(std::move(options)) {}

std::vector<std::string> AgentDriver::clusterNodes() const {
  return options_.cluster_nodes ? options_.cluster_nodes() : hub_.nodes();
}

Status AgentDriver::confirm(const std::string& node, const DocumentVersion& version, const std::string& what,
                            const std::function<bool(const AgentReport&)>& done) {
  if (hub_.waitForReport(node, version.revision, done, options_.confirm_timeout)) return Status::ok();
  return Status::unavailable("the agent of node " + node + " did not report " + what + " within " +
                             std::to_string(options_.confirm_timeout.count() / 1000) + " s");
}

Status AgentDriver::ensureVolume(const VolumeSpec& volume) {
  if (volume.id.empty() || volume.node.empty()) return Status::invalidArgument("a volume needs an id and a node");
  return hub_.setVolume(volume).status();
}

Status AgentDriver::removeVolume(const VolumeRef& volume) {
  TIDE_ASSIGN_OR_RETURN(DocumentVersion version, hub_.removeVolume(volume.node, volume.id));
  if (hub_.unreachable(volume.node)) return Status::ok();
  return confirm(volume.node, version, "volume " + volume.id + " removed", [&](const AgentReport& report) {
    return std::none_of(report.volumes.begin(), report.volumes.end(),
                        [&](const ReportedVolume& v) { return v.id == volume.id; });
  });
}

Result<RuntimeStatus> AgentDriver::ensure(const RuntimeSpec& spec) {
  if (spec.id.empty() || spec.node.empty()) return Status::invalidArgument("an instance needs an id and a node");
  if (spec.pod) return noPods("agent", *spec.pod);
  TIDE_RETURN_IF_ERROR(hub_.setInstance({spec, kWantRunning}).status());
  Result<RuntimeStatus> reported = status({spec.id, spec.node, ""});
  if (!reported.isOk()) return pending();
  return reported;
}

Status AgentDriver::stop(const RuntimeRef& ref) {
  auto desired = hub_.desiredInstance(ref.node, ref.id);
  if (!desired) return Status::ok();  // removed, or never ensured: nothing runs under the host's word
  desired->first.want = kWantStopped;
  TIDE_ASSIGN_OR_RETURN(DocumentVersion version, hub_.setInstance(desired->first));
  if (hub_.unreachable(ref.node)) return Status::ok();
  return confirm(ref.node, version, "instance " + ref.id + " stopped",
                 [&](const AgentReport& report) { return stoppedOrGone(report, ref.id); });
}

Status AgentDriver::remove(const RuntimeRef& ref) {
  TIDE_ASSIGN_OR_RETURN(DocumentVersion version, hub_.removeInstance(ref.node, ref.id));
  if (hub_.unreachable(ref.node)) return Status::ok();
  return confirm(ref.node, version, "instance " + ref.id + " removed",
                 [&](const AgentReport& report) { return findReported(report, ref.id) == nullptr; });
}

Result<RuntimeStatus> AgentDriver::status(const RuntimeRef& ref) {
  std::optional<AgentReport> report = hub_.lastReport(ref.node);
  if (!report) return Status::unavailable("the agent of node " + ref.node + " has not reported since the host started");
  // An entry the agent has not applied yet: what it reports of the id is from before.
  if (auto desired = hub_.desiredInstance(ref.node, ref.id);
      desired && (report->epoch != hub_.epoch() || report->applied_revision < desired->second)) {
    if (const ReportedInstance* instance = findReported(*report, ref.id);
        instance != nullptr && desired->first.want == kWantRunning &&
        instance->status.state == model::WorkloadState::kRunning) {
      return instance->status;
    }
    // An agent that has stopped heartbeating will not apply it soon: say so now, rather than
    // let the operation that waits on it wait out its deadline.
    if (hub_.unreachable(ref.node)) {
      return Status::unavailable("node " + ref.node + " is unreachable: its agent has not applied instance " + ref.id +
                                 " and misses its heartbeats");
    }
    return pending();
  }
  const ReportedInstance* instance = findReported(*report, ref.id);
  if (instance == nullptr) return Status::notFound("the agent of node " + ref.node + " does not report instance " + ref.id);
  return instance->status;
}

Result<std::vector<RuntimeRef>> AgentDriver::list() {
  std::vector<RuntimeRef> refs;
  for (const std::string& node : clusterNodes()) {
    std::optional<AgentReport> report = hub_.lastReport(node);
    if (!report) continue;
    for (const ReportedInstance& instance : report->instances) refs.push_back({instance.id, node, instance.status.handle});
  }
  return refs;
}

std::vector<UnreachableNode> AgentDriver::unreachableNodes() {
  std::vector<UnreachableNode> out;
  for (const std::string& node : clusterNodes()) {
    if (auto lost = hub_.unreachable(node)) out.push_back(*lost);
  }
  return out;
}

Result<LogSlice> AgentDriver::readLogSlice(const std::string& runtime_id, const std::optional<LogCursor>& from,
                                           size_t max_bytes) {
  TIDE_ASSIGN_OR_RETURN(std::string text, readLog(runtime_id, max_bytes));
  return LogSlice{.text = std::move(text), .end = std::nullopt, .continues = !from};
}

Result<std::string> AgentDriver::readLog(const std::string& runtime_id, size_t max_bytes) {
  const std::vector<std::string> nodes = clusterNodes();
  for (const std::string& node : nodes) {
    std::optional<AgentReport> report = hub_.lastReport(node);
    if (hub_.desiredInstance(node, runtime_id) || (report && findReported(*report, runtime_id) != nullptr)) {
      return hub_.fetchLog(node, runtime_id, max_bytes, kLogFetchTimeout);
    }
  }
  // Removed (it exited and is FAILED, say): its agent's process driver keeps the log for its
  // log retention.
  if (std::optional<std::string> placed = options_.runtime_node ? options_.runtime_node(runtime_id) : std::nullopt;
      placed && std::find(nodes.begin(), nodes.end(), *placed) != nodes.end()) {
    return hub_.fetchLog(*placed, runtime_id, max_bytes, kLogFetchTimeout);
  }
  return Status::notFound("no agent of this cluster knows instance " + runtime_id);
}

}  // namespace tide::drivers
