#pragma once
// What one pass of the control loop sees (docs/architecture.md#the-control-loop): the ledger's plans, deployments,
// inventory and live instances, read once and indexed, so every decision of the pass is
// made over one consistent-enough picture without per-record queries.
//
// The picture may be stale by the time it is acted on; every write the engine makes is
// checked again by the ledger (transitions, one unfinished operation, reservations), so a
// stale decision fails instead of corrupting anything, and the next pass sees the truth.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "host/core/status.h"
#include "host/ledger/ledger.h"
#include "host/sched/snapshot.h"

namespace tide::engine {

using Json = nlohmann::json;

// One meta instance with what the loop needs to know about it.
struct InstanceView {
  model::MetaInstance meta;
  std::optional<model::RuntimeInstance> active;  // live and active
  std::vector<model::RuntimeInstance> passive;   // live and passive (RELOCATE in progress)
  std::optional<model::RuntimeInstance> newest;  // newest runtime instance, any state
  std::optional<model::Operation> unfinished;    // the one non-terminal operation
  std::optional<model::Operation> last;          // the newest operation, finished or not

  // PENDING when nothing runs yet, the active runtime's state, or the meta instance's
  // STOPPED; FAILED when the newest runtime failed and nothing replaced it.
  std::string effectiveState() const;
  bool healthy() const { return active && active->state == "RUNNING" && active->healthy; }
  // The coordinates it runs, or would run: the active runtime's, else `fallback`.
  Json coordinates(const Json& fallback) const;
};

struct World {
  std::vector<model::Plan> plans;
  std::map<std::string, const model::Plan*> plan_by_name;
  std::map<std::string, std::vector<model::Deployment>> deployments;  // by plan, oldest first
  std::vector<model::Node> nodes;
  std::map<std::string, const model::Node*> node_by_name;
  std::vector<model::Cluster> clusters;
  std::vector<model::Capability> capabilities;
  std::map<std::string, InstanceView> instances;  // live (not DELETED) meta instances, by name

  static Result<World> load(ledger::Ledger& ledger);

  const model::Deployment* deployment(const std::string& plan, const std::string& id) const;
  // The plan `deployment` belongs to, or null.
  const model::Plan* planOf(const model::Deployment& deployment) const;
  // The newest COMPLETED deployment of `plan` other than `except`, or null.
  // The rollback target of `except` (docs/architecture.md#rollouts): the newest earlier deployment that
  // completed and was not rolled back since.
  const model::Deployment* lastCompleted(const std::string& plan, const std::string& except = "") const;
  std::vector<const InstanceView*> instancesOf(const std::string& plan) const;
  // The scheduler's view: nodes, clusters, capabilities and every live runtime instance.
  sched::ClusterSnapshot schedulerSnapshot() const;
};

// {"<payload_name>": coordinates, ...}: the deployment's coordinates as a runtime carries them.
Json coordinatesOf(const model::Deployment& deployment);

}  // namespace tide::engine
