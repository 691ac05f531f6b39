#pragma once
// Losing a node (docs/architecture.md#losing-a-node): each pass, the nodes the drivers
// cannot reach (drivers::Driver::unreachableNodes, the agent driver's nodes whose agent
// missed its heartbeats), what the other stages do about them, and the events that say so.
//
// - A node that becomes unreachable gets a `node.unreachable` event, one that comes back a
//   `node.reachable` event, once per change. What this remembers between passes is lost
//   with the host, which is fine: the drivers say again who is unreachable.
// - A node unreachable for `replace_after` is to be replaced: the controller relocates
//   its instances elsewhere (DeploymentController::pass).
// - A partition: when more than `max_unreachable_share` of the nodes of the clusters that
//   have an unreachable node went unreachable within one `partition_window`, nothing is
//   replaced, and an `alarm.partition` event is raised once (with the nodes); an
//   `alarm.cleared` event follows when it ends. Both have the subject "partition", so the
//   newest of them tells whether the alarm is in force (latestPartitionAlarm); a host that
//   restarts takes that over, and clears an alarm its predecessor raised.
//
// Thread-safety: none; the control loop's thread owns it.

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "host/core/clock.h"
#include "host/engine/driver_set.h"
#include "host/engine/engine_metrics.h"
#include "host/engine/world.h"
#include "host/ledger/ledger.h"

namespace tide::engine {

struct LivenessOptions {
  std::string actor = "controller";
  // How long a node stays unreachable before its instances are replaced elsewhere
  // (host config agents.replace_after_s).
  std::chrono::seconds replace_after{60};
  // More than this share of the nodes lost within one partition_window is a partition, not
  // lost nodes: nothing is replaced (agents.max_unreachable_share, agents.partition_window_s).
  double max_unreachable_share = 0.5;
  std::chrono::seconds partition_window{60};
};

// What one pass knows of the nodes it cannot reach.
struct UnreachableNodes {
  std::map<std::string, TimePoint> since;  // node → unreachable since (its last heartbeat)
  std::set<std::string> to_replace;        // unreachable for replace_after, and no partition
  bool partition = false;                  // the partition alarm is in force

  bool contains(const std::string& node) const { return since.count(node) > 0; }
  std::set<std::string> nodes() const;
  // "node <n> unreachable since <time>": the message of an instance whose health is unknown
  // because its node is unreachable.
  std::string healthMessage(const std::string& node) const;
};

// Whether `message` is the one UnreachableNodes::healthMessage gives instances on `node`.
bool isUnreachableMessage(const std::string& message, const std::string& node);

class NodeLiveness {
 public:
  // Everything must outlive it.
  NodeLiveness(ledger::Ledger& ledger, DriverSet& drivers, const Clock& clock, EngineMetrics& metrics,
               LivenessOptions options);

  // Asks every driver built so far for its unreachable nodes (those `world` knows), records
  // the changes since the last pass as events, and judges the partition. The answer lives
  // until the next call.
  const UnreachableNodes& pass(const World& world);

 private:
  // The most nodes of `lost` whose `since` fall within one partition_window.
  size_t lostTogether() const;
  void raiseOrClearAlarm(bool partition);

  ledger::Ledger& ledger_;
  DriverSet& drivers_;
  const Clock& clock_;
  EngineMetrics& metrics_;
  LivenessOptions options_;
  UnreachableNodes lost_;
  std::optional<bool> alarm_;  // whether alarm.partition is in force; read from the ledger at first
};

// The `alarm.partition` event in force (the newest event of subject "partition", when it is
// one), or null.
Result<std::optional<model::Event>> latestPartitionAlarm(ledger::Ledger& ledger);

}  // namespace tide::engine
