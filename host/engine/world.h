#pragma once
// What one pass of the control loop sees (docs/architecture.md#the-control-loop): the ledger's plans, deployments,
// inventory and live instances, read once and indexed, so every decision of the pass is
// made over one consistent-enough picture without per-record queries.
//
// The picture may be stale by the time it is acted on; every write the engine makes is
// checked again by the ledger (transitions, one unfinished operation, reservations), so a
// stale decision fails instead of corrupting anything, and the next pass sees the truth.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "host/core/status.h"
#include "host/ledger/ledger.h"
#include "host/sched/snapshot.h"

namespace tide::engine {

using Json = nlohmann::json;

// What the loop reads of an operation that is not the one in progress: the newest one a
// meta instance had, which a strategy sees as `last_operation`.
struct OperationSummary {
  int64_t id = 0;
  model::OperationType type = model::OperationType::kCreate;
  model::OperationState state = model::OperationState::kPending;
  std::string intent;
  std::string message;

  static OperationSummary of(const model::Operation& op);
};

// One meta instance with what the loop needs to know about it. There is one per live meta
// instance, so it holds only what a pass reads, and what most instances lack costs a
// pointer (docs/architecture.md#the-control-loop): at 100,000 instances every
// 100 bytes here are 10 MB.
struct InstanceView {
  model::MetaInstance meta;
  std::optional<model::RuntimeInstance> active;  // live and active
  std::vector<model::RuntimeInstance> passive;   // live and passive (RELOCATE in progress)
  std::unique_ptr<model::Operation> unfinished;  // the one non-terminal operation, or null
  std::optional<OperationSummary> last;          // the newest operation, finished or not
  // The newest runtime instance, any state: `active` most of the time, which is not copied.
  int64_t newest_id = 0;
  std::unique_ptr<model::RuntimeInstance> newest_other;  // the newest when it is not `active`

  // The newest runtime instance, any state, or null when it never had one.
  const model::RuntimeInstance* newest() const;
  // PENDING when nothing runs yet, the active runtime's state, or the meta instance's
  // STOPPED; FAILED when the newest runtime failed and nothing replaced it.
  std::string effectiveState() const;
  bool healthy() const { return active && active->state == model::RuntimeState::kRunning && active->healthy; }
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
  // The names of the instances a stage of the loop looks at, kept with `instances` (in
  // the same order), so that a pass over a quiet fleet touches none of the others:
  std::set<std::string> operating;  // with an unfinished operation (approval, dispatch)
  std::set<std::string> unplaced;   // ACTIVE, nothing active, no unfinished operation (repair)
  std::set<std::string> reserving;  // holding a PENDING runtime instance (reservations to release)
  // ACTIVE, its active runtime STOPPED by a host that exited with --stop-workloads-on-exit,
  // no unfinished operation (repair: started again; docs/architecture.md#stopping-workloads-on-exit)
  std::set<std::string> stopped_on_exit;

  static Result<World> load(ledger::Ledger& ledger);
  // Brings this picture up to date with the rows `changes` name (the ledger's change feed
  // since the last load or refresh): instances are re-read one by one, the inventory
  // (plans, nodes, clusters, capabilities) and deployments only when rows of theirs
  // changed. Nodes' remaining resources follow the instances' reservations in memory.
  // On error the picture is unusable: load() again.
  Status refresh(ledger::Ledger& ledger, const std::vector<ledger::RowChange>& changes);

  const model::Deployment* deployment(const std::string& plan, const std::string& id) const;
  // The plan as deployment `deployment_id` of `plan` was made with
  // (docs/architecture.md#changing-a-plan): its snapshot; the plan as it is now when that
  // deployment is unknown or has none (an instance's "user" operations); null for an unknown plan.
  const model::Plan* planAsDeployed(const std::string& plan, const std::string& deployment_id) const;
  // The newest COMPLETED deployment of `plan` other than `except`, or null.
  // The rollback target of `except` (docs/architecture.md#rollouts): the newest earlier deployment that
  // completed and was not rolled back since.
  const model::Deployment* lastCompleted(const std::string& plan, const std::string& except = "") const;
  // The deployment `plan` is rolled toward: its newest unfinished one, else its newest
  // COMPLETED one; null when it has neither. What its traffic follows and /metrics calls
  // the plan's desired instances.
  const model::Deployment* currentDeployment(const std::string& plan) const;
  std::vector<const InstanceView*> instancesOf(const std::string& plan) const;
  // The instances of `plan` whose active runtime instance is RUNNING; kept as instances
  // come and go, so asking costs a lookup, not a walk over the plan's instances.
  int64_t runningInstances(const std::string& plan) const;
  // The scheduler's view: nodes, clusters, capabilities and every live runtime instance.
  // The nodes in `unreachable` show the state UNREACHABLE, so nothing is placed there
  // (docs/architecture.md#losing-a-node).
  sched::ClusterSnapshot schedulerSnapshot(const std::set<std::string>& unreachable = {}) const;

 private:
  Status loadInventory(ledger::Ledger& ledger);
  Status loadDeployments(ledger::Ledger& ledger);
  // Node remaining resources: total − system reserved − the reservations of the live
  // runtime instances in `instances`, all recomputed, or adjusted for one view.
  void recomputeRemaining();
  void reserve(const InstanceView& view, double sign);
  void indexNodes();

  void addInstance(InstanceView view);
  void dropInstance(std::map<std::string, InstanceView>::iterator it);

  std::map<std::string, size_t> node_index_;                    // name → position in `nodes`
  std::map<std::string, std::set<std::string>> names_by_plan_;  // plan → its instances' names
  std::map<std::string, int64_t> running_by_plan_;              // plan → runningInstances(plan), when > 0
};

// Collects the ledger's change feed for the control loop between passes. Subscribes at
// construction and unsubscribes at destruction; thread-safe.
class WorldFeed {
 public:
  explicit WorldFeed(ledger::Ledger& ledger);
  ~WorldFeed();
  WorldFeed(const WorldFeed&) = delete;
  WorldFeed& operator=(const WorldFeed&) = delete;

  // The picture to start a pass from: `world` loaded the first time (or after an error, or
  // when the ledger cannot tell what changed, or more changed than is worth replaying),
  // refreshed from the changes since otherwise.
  Status update(std::optional<World>& world);
  // How many rows the last update() refreshed (the pass's dirty set), for /metrics.
  size_t lastDirty() const { return last_dirty_; }

 private:
  static constexpr size_t kMaxPending = 200000;

  ledger::Ledger& ledger_;
  int subscription_ = 0;
  std::mutex mu_;
  std::vector<ledger::RowChange> pending_;          // REQUIRES: mu_ is held
  bool overflowed_ = false;                         // REQUIRES: mu_ is held
  size_t last_dirty_ = 0;
};

// {"<payload_name>": coordinates, ...}: the deployment's coordinates as a runtime carries them.
Json coordinatesOf(const model::Deployment& deployment);

}  // namespace tide::engine
