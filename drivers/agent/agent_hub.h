#pragma once
// The host's side of its node agents (docs/agents.md): per node, the desired document the
// agent pulls, the last report it posted, when it was last heard from, and the log tails the
// host waits for. The agent driver writes documents and reads reports; the API's agent routes
// serve documents and take reports; node views ask about reachability.
//
// - Persistence: <dir>/epoch.json and one <dir>/<node>.json per node holding its instances
//   and volumes (never the reports or log requests), each written temp + fsync + rename +
//   fsync of the dir before the change is visible to agents. open() loads them and bumps the
//   epoch, so a host restart serves the same documents under a new epoch.
// - Revisions: every change of a node's document (instances, volumes, log requests) bumps its
//   revision by one and wakes the node's long polls.
// - Reachability: a node is UNREACHABLE once its last report is older than the heartbeat TTL;
//   a node not heard from since open() counts from open(). Time is the injected Clock's.
// - Waits (long polls, confirmations, log tails) are bounded and measured on the steady clock:
//   they are durations a remote party is given, not points on the host's clock.
//
// Thread-safe: one mutex over the nodes, a condition variable per node. A node's file is
// written outside that mutex, under a per-node lock, so a slow disk holds up changes of that
// node only.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "drivers/agent/agent_protocol.h"
#include "host/core/clock.h"

namespace tide::drivers {

inline constexpr std::chrono::seconds kDefaultHeartbeatTtl{10};

struct AgentHubOptions {
  std::chrono::milliseconds heartbeat_ttl = kDefaultHeartbeatTtl;
};

// What node views show about a node's agent.
struct AgentNodeState {
  bool reachable = false;
  std::optional<TimePoint> last_heartbeat;  // empty: not heard from since the host started
  std::string agent_version;
  std::optional<model::Resources> resources;  // as last reported
};

class AgentHub {
 public:
  // Opens (creating) `dir`, loads every node's document and bumps the epoch. kInternal when
  // the dir cannot be created or a file is unreadable or corrupt (the message names it).
  // `clock` must outlive the hub.
  static Result<std::unique_ptr<AgentHub>> open(const std::string& dir, const Clock& clock,
                                                AgentHubOptions options = {});

  int64_t epoch() const { return epoch_; }
  const Clock& clock() const { return clock_; }

  // --- the desired side (the agent driver) ---
  // Records `instance` in its node's document (replacing the entry of its id). The revision
  // bumps only when the entry changed. Returns the node's version after the call; kInternal
  // when the document could not be persisted (the change is then not made).
  Result<DocumentVersion> setInstance(const DesiredInstance& instance);
  // Drops the instance from its node's document (to be removed); idempotent.
  Result<DocumentVersion> removeInstance(const std::string& node, const std::string& id);
  Result<DocumentVersion> setVolume(const VolumeSpec& volume);
  Result<DocumentVersion> removeVolume(const std::string& node, const std::string& id);
  // The entry of `id` in `node`'s document and the revision that last changed it.
  std::optional<std::pair<DesiredInstance, int64_t>> desiredInstance(const std::string& node,
                                                                     const std::string& id) const;

  DesiredDocument document(const std::string& node) const;
  // The node's document once it differs from `known` (at once when it already does, or when
  // `known` is empty), else after `wait` or when `cancelled()` (checked a few times a second)
  // holds: the same document then.
  DesiredDocument waitForDocument(const std::string& node, std::optional<DocumentVersion> known,
                                  std::chrono::milliseconds wait, const std::function<bool()>& cancelled = nullptr);

  // --- the reported side (the API's report route) ---
  // Takes `report` as the node's heartbeat and its observed state, whatever its epoch.
  // Returns the node's current version, for the agent to poll again when it is behind.
  DocumentVersion report(const std::string& node, AgentReport report);
  // The node's last report since the host started; empty when none came.
  std::optional<AgentReport> lastReport(const std::string& node) const;
  // Waits until `node` posted a report of this epoch that applied revision `revision` or a
  // later one and satisfies `done`; false after `timeout`.
  bool waitForReport(const std::string& node, int64_t revision, const std::function<bool(const AgentReport&)>& done,
                     std::chrono::milliseconds timeout);

  AgentNodeState nodeState(const std::string& node) const;
  // Empty when the node is reachable; else since when it is not heard from.
  std::optional<UnreachableNode> unreachable(const std::string& node) const;
  // Every node with a document or a report.
  std::vector<std::string> nodes() const;

  // --- log tails (`tide logs`) ---
  // Asks the node's agent for the log of `id` (the next document carries the request) and
  // waits up to `timeout` for its post. The last `max_bytes` of it; kUnavailable naming the
  // node when the node is unreachable or the agent did not send it in time.
  Result<std::string> fetchLog(const std::string& node, const std::string& id, size_t max_bytes,
                               std::chrono::milliseconds timeout);
  // The agent's post of a log tail; ignored when nobody waits for it.
  void postLog(const std::string& node, const std::string& id, std::string text);

 private:
  struct LogRequest {
    int waiters = 0;
    std::optional<std::string> text;
  };
  struct Node {
    DesiredDocument document;                   // logs filled on read, from log_requests
    std::map<std::string, int64_t> changed_at;  // instance id → revision of its last change
    std::optional<AgentReport> last_report;
    std::optional<TimePoint> last_heartbeat;
    std::map<std::string, LogRequest> log_requests;
    std::condition_variable changed;  // document, report or log post
    // Held across a change of the document (read, persist, install), so changes of one node
    // apply one at a time, each persisted before anyone sees it. Taken before mu_.
    std::mutex change_mu;
  };

  AgentHub(std::string dir, const Clock& clock, AgentHubOptions options, int64_t epoch);
  Node& nodeLocked(const std::string& node) const;  // REQUIRES: mu_ held; creates the entry
  DesiredDocument documentLocked(const Node& entry) const;  // REQUIRES: mu_ held
  // Applies `edit` to a copy of the node's document; when it changed anything, persists it
  // and installs it with the next revision. REQUIRES: mu_ not held.
  Result<DocumentVersion> change(const std::string& node, const std::string& instance_id,
                                 const std::function<bool(DesiredDocument&)>& edit);
  void bumpLocked(Node& entry);  // REQUIRES: mu_ held; a new revision, pollers woken

  const std::string dir_;
  const Clock& clock_;
  const AgentHubOptions options_;
  const int64_t epoch_;
  const TimePoint started_at_;
  mutable std::mutex mu_;
  mutable std::map<std::string, std::unique_ptr<Node>> nodes_;  // GUARDED_BY(mu_), by name
};

}  // namespace tide::drivers
