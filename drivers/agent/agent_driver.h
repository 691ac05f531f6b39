#pragma once
// The `agent` driver (docs/agents.md): a cluster whose nodes are served by node agents. It
// runs nothing itself: it turns ensure/stop/remove into changes of each node's desired
// document in the AgentHub and answers status from what the agents report.
//
// - ensure() records the instance (want running) and returns at once: the last reported
//   status when the agent has applied the instance's latest entry, else PENDING.
// - stop()/remove() record want stopped / drop the entry and wait, up to confirm_timeout, for
//   a report of this epoch that applied the change and shows it STOPPED/EXITED / gone;
//   kUnavailable naming the node when none comes. On an UNREACHABLE node they return OK at
//   once: the entry stays in the document, and the agent applies it when it comes back.
// - Volumes likewise through the document's volumes (removeVolume waits for the volume to
//   leave the report; ensureVolume returns once recorded).
// - status() answers from the node's last report: kUnavailable for every instance of a node
//   that has not reported since the host started; PENDING while the agent has not applied
//   the instance's latest entry; kNotFound when the report does not list it.
// - list() is the last reported inventory of every node of the cluster.
//
// Cluster driver_config (optional): {"confirm_timeout_s": 30}.
// Thread-safe: the state is the hub's.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "drivers/agent/agent_hub.h"
#include "drivers/driver.h"

namespace tide::drivers {

inline constexpr std::chrono::seconds kDefaultConfirmTimeout{30};
inline constexpr std::chrono::seconds kLogFetchTimeout{10};

struct AgentDriverOptions {
  std::chrono::milliseconds confirm_timeout = kDefaultConfirmTimeout;
  std::string cluster;
  // The names of the cluster's nodes, now (from the ledger); list() and unreachableNodes()
  // ask it. Unset: the nodes the hub knows.
  std::function<std::vector<std::string>()> cluster_nodes;
  // The node the ledger placed a runtime instance on (docs/agents.md), for readLog() of an
  // instance removed from its node's document. Unset: such a log is not found.
  std::function<std::optional<std::string>(const std::string& runtime_id)> runtime_node;
};

// Validates an agent cluster's driver_config (null or an object); details name the field.
Result<AgentDriverOptions> parseAgentDriverOptions(const Json& driver_config);

class AgentDriver final : public Driver {
 public:
  // `hub` must outlive the driver.
  AgentDriver(AgentHub& hub, AgentDriverOptions options);

  Status ensureVolume(const VolumeSpec& volume) override;
  Status removeVolume(const VolumeRef& volume) override;
  Result<RuntimeStatus> ensure(const RuntimeSpec& spec) override;
  Status stop(const RuntimeRef& ref) override;
  Status remove(const RuntimeRef& ref) override;
  Result<RuntimeStatus> status(const RuntimeRef& ref) override;
  Result<std::vector<RuntimeRef>> list() override;
  std::vector<UnreachableNode> unreachableNodes() override;

  // The last `max_bytes` of the log of `runtime_id` (on whichever node of the cluster runs
  // it, or on the node the ledger placed it on once it is removed: its agent keeps the log),
  // through the node's agent; kNotFound when no node of the cluster knows the id.
  Result<std::string> readLog(const std::string& runtime_id, size_t max_bytes);
  // readLog's text. An agent posts only the last bytes of a log (docs/agents.md): a slice
  // has no end to go on from, `from` is not honoured, and a slice asked from a cursor does
  // not continue it.
  Result<LogSlice> readLogSlice(const std::string& runtime_id, const std::optional<LogCursor>& from,
                                size_t max_bytes) override;

  AgentHub& hub() { return hub_; }

 private:
  std::vector<std::string> clusterNodes() const;
  // Waits for the node's agent to report `done` of a report that applied `version`.
  Status confirm(const std::string& node, const DocumentVersion& version, const std::string& what,
                 const std::function<bool(const AgentReport&)>& done);

  AgentHub& hub_;
  const AgentDriverOptions options_;
};

}  // namespace tide::drivers
