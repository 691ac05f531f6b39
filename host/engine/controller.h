#pragma once
// The deployment controller (docs/architecture.md#deployment-controller, docs/architecture.md#rollouts).
// Level-triggered: each pass looks at every plan's newest unfinished deployment, builds the rollout snapshot, runs the
// plan's strategy script and turns its actions into operations. An action whose operation already exists is a no-op, so
// running a pass twice asks for nothing twice.
//
// Rules the host keeps whatever the strategy says:
// - A newer deployment supersedes an unfinished older one: the older one is CANCELLED
//   ("superseded by <id>") and its operations that were not approved yet are CANCELLED.
// - An instance already running the new deployment's coordinates is adopted by it
//   without an operation (UPDATE only when coordinates change).
// - An ACTIVE instance that runs nowhere (its instance FAILED, or its CREATE was
//   cancelled) and has no operation gets a RESTART (or CREATE) through the policies,
//   unless its last operation FAILED or was REJECTED (then it waits for a person).
// - An instance running on a DRAINING node with no operation gets a RELOCATE (make-before-
//   break, through the policies), requested by whoever drained the node, unless its last
//   RELOCATE FAILED or was REJECTED (then it waits for a person).
// - So does an instance running on a node unreachable for replace_after
//   (docs/architecture.md#losing-a-node), requested by the controller with intent
//   "unreachable", unless a partition holds replacement. Such a RELOCATE that has not started
//   when the node is back (or the instance no longer runs) is cancelled.
// - A rollout one of whose operations a runtime hook vetoes or delays is held PAUSED, its
//   strategy not asked, until the hook lets the operation go (docs/architecture.md#runtime-hooks).
//
// Thread-safety: none; the control loop's thread owns it.

#include <map>
#include <string>

#include "host/core/clock.h"
#include "host/engine/metric_fetcher.h"
#include "host/engine/node_liveness.h"
#include "host/engine/traffic_controller.h"
#include "host/engine/world.h"
#include "host/ledger/ledger.h"
#include "host/lua/strategy/strategy_engine.h"

namespace tide::engine {

struct ControllerOptions {
  std::string actor = "controller";
  // Instances created per pass at most: a strategy asking for 10,000 gets them over
  // several passes (it asks again for what is still missing), so one pass never holds
  // the loop for the whole deployment.
  int max_creates_per_pass = 500;
};

class DeploymentController {
 public:
  // Everything must outlive the controller. `metrics` (may be null: r.metric then never has
  // an answer) gives each pass the metric answers fetched so far and gets the queries the
  // pass's strategies asked (docs/architecture.md#metric-analysis).
  DeploymentController(ledger::Ledger& ledger, lua::StrategyEngine& strategies, const Clock& clock,
                       ControllerOptions options, MetricFetcher* metrics = nullptr,
                       TrafficController* traffic = nullptr);

  // One pass over `world`, whose nodes `unreachable` names cannot be reached; returns how
  // many ledger changes it made.
  int pass(const World& world, const UnreachableNodes& unreachable);

  // Whether the last pass left creations its strategies asked for to the next one.
  bool backlog() const { return creates_cut_; }

  // The rollout snapshot of `deployment` (docs/lua.md), as the strategy sees it.
  Json snapshot(const World& world, const model::Deployment& deployment) const;

 private:
  // The pass itself, between taking the metric answers and requesting what was asked.
  int reconcileAll(const World& world, const UnreachableNodes& unreachable);
  int reconcile(const World& world, const model::Deployment& deployment);
  int supersede(const World& world, const std::vector<model::Deployment>& deployments);
  int adopt(const World& world, const model::Deployment& deployment);
  int repair(const World& world);
  // RELOCATEs for the instances on DRAINING nodes (docs/architecture.md#draining-a-node) and
  // on nodes unreachable for too long (docs/architecture.md#losing-a-node).
  int relocateOffNodes(const World& world, const UnreachableNodes& unreachable);
  // Cancels, with an event saying why, the RELOCATEs asked for because a node was unreachable
  // that have not started and are no longer needed: the node is back and the instance answers
  // there again, or the instance no longer runs. Left waiting (for placement, say), such a
  // RELOCATE would keep its instance from every other operation, a rollout's among them.
  int withdrawRelocations(const World& world, const UnreachableNodes& unreachable);
  int apply(const World& world, const model::Deployment& deployment, const lua::StrategyResult& result);
  // The strategy's actions, one kind each; every one returns how many ledger changes it made.
  int createInstances(const model::Deployment& deployment, int64_t count);
  int requestOperations(const World& world, const model::Deployment& deployment, model::OperationType type,
                        const std::vector<std::string>& names);
  std::vector<std::string> chooseForScaleDown(const World& world, const model::Deployment& deployment, int64_t count);
  int pauseRollout(const model::Deployment& deployment, const std::string& reason);
  // Returns the changes made; sets `hold` when the router does not serve the route yet
  // (docs/architecture.md#traffic): the rest of the strategy's actions wait for a later pass.
  // Sets `hold` to why the rollout waits for the traffic router (docs/architecture.md#traffic).
  int route(const World& world, const model::Deployment& deployment, const Json& weights,
            std::optional<std::string>& hold);
  int completeRollout(const model::Deployment& deployment, const std::string& reason);
  int rollBack(const model::Deployment& deployment, const std::string& reason);
  // An operation asked for on a deployment's behalf: its intent is the deployment, and it is
  // requested by whoever added the deployment (the controller's own actor for a deployment with
  // no recorded author), so the four-eyes rule needs someone else to approve the rollout.
  model::Operation operationFor(const model::Deployment& deployment, model::OperationType type,
                                const std::string& meta_instance) const;
  // Records a strategy error once per distinct message (not on every pass).
  void reportError(const model::Deployment& deployment, const std::string& message);

  ledger::Ledger& ledger_;
  lua::StrategyEngine& strategies_;
  const Clock& clock_;
  ControllerOptions options_;
  MetricFetcher* metrics_;
  TrafficController* traffic_;  // null: no traffic router, route(...) completes at once
  Json metric_answers_;                            // this pass's, from metrics_
  std::vector<model::MetricQuery> metric_asked_;   // by this pass's strategies
  std::map<std::string, std::string> last_error_;  // "plan/deployment" → message
  std::map<std::string, Json> last_route_;         // plan → {deployment, weights} last routed
  int creates_left_ = 0;                           // of this pass's max_creates_per_pass
  bool creates_cut_ = false;                       // this pass created fewer than asked
};

}  // namespace tide::engine
