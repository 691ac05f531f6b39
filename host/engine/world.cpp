#include "host/engine/world.h"

#include <cstdint>

#include <algorithm>

namespace tide::engine {

const model::Plan* World::planOf(const model::Deployment& deployment) const {
  auto it = plan_by_name.find(deployment.plan);
  return it == plan_by_name.end() ? nullptr : it->second;
}

std::string InstanceView::effectiveState() const {
  if (meta.state != "ACTIVE") return meta.state;
  if (active) return active->state;
  if (newest && newest->state == "FAILED") return "FAILED";
  return "PENDING";
}

Json InstanceView::coordinates(const Json& fallback) const {
  if (active) return active->coordinates;
  return fallback;
}

Json coordinatesOf(const model::Deployment& deployment) {
  Json out = Json::object();
  for (const auto& p : deployment.payload_coordinates) out[p.payload_name] = p.coordinates;
  return out;
}

Result<World> World::load(ledger::Ledger& ledger) {
  World w;
  TIDE_ASSIGN_OR_RETURN(w.plans, ledger::listAll(ledger, &ledger::Ledger::listPlans));
  TIDE_ASSIGN_OR_RETURN(auto deployments, ledger::listAll(ledger, &ledger::Ledger::listDeployments));
  TIDE_ASSIGN_OR_RETURN(w.nodes, ledger::listAll(ledger, &ledger::Ledger::listNodes));
  TIDE_ASSIGN_OR_RETURN(w.clusters, ledger::listAll(ledger, &ledger::Ledger::listClusters));
  TIDE_ASSIGN_OR_RETURN(w.capabilities, ledger::listAll(ledger, &ledger::Ledger::listCapabilities));
  TIDE_ASSIGN_OR_RETURN(auto metas, ledger::listAll(ledger, &ledger::Ledger::listMetaInstances));
  TIDE_ASSIGN_OR_RETURN(auto runtimes, ledger.currentRuntimeInstances());
  TIDE_ASSIGN_OR_RETURN(auto operations, ledger.latestOperations());

  for (const auto& p : w.plans) w.plan_by_name[p.name] = &p;
  for (auto& d : deployments) w.deployments[d.plan].push_back(std::move(d));
  for (const auto& n : w.nodes) w.node_by_name[n.name] = &n;
  for (auto& m : metas) {
    if (m.state == "DELETED") continue;
    InstanceView view;
    view.meta = std::move(m);
    w.instances.emplace(view.meta.name, std::move(view));
  }
  for (auto& r : runtimes) {
    auto it = w.instances.find(r.meta_instance);
    if (it == w.instances.end()) continue;
    InstanceView& view = it->second;
    if (!view.newest || view.newest->meta.id < r.meta.id) view.newest = r;
    if (!model::holdsResources(r.state)) continue;
    if (r.is_active) {
      view.active = std::move(r);
    } else {
      view.passive.push_back(std::move(r));
    }
  }
  for (auto& o : operations) {
    auto it = w.instances.find(o.meta_instance);
    if (it == w.instances.end()) continue;
    if (!model::isTerminalOperationState(o.state)) it->second.unfinished = o;
    it->second.last = std::move(o);
  }
  return w;
}

const model::Deployment* World::deployment(const std::string& plan, const std::string& id) const {
  auto it = deployments.find(plan);
  if (it == deployments.end()) return nullptr;
  for (const auto& d : it->second) {
    if (d.deployment_id == id) return &d;
  }
  return nullptr;
}

const model::Deployment* World::lastCompleted(const std::string& plan, const std::string& except) const {
  auto it = deployments.find(plan);
  if (it == deployments.end()) return nullptr;
  // Only deployments older than `except` count (a restore re-opens an earlier one; it is
  // still the rollback target of the newer ones). One being restored completed before.
  int64_t before = INT64_MAX;
  for (const auto& d : it->second) {
    if (d.deployment_id == except) before = d.meta.id;
  }
  for (auto d = it->second.rbegin(); d != it->second.rend(); ++d) {
    if (d->meta.id >= before || d->completed_at.empty() || d->state == "ROLLED_BACK") continue;
    if (d->state == "COMPLETED" || d->state == "IN_PROGRESS" || d->state == "PAUSED") return &*d;
  }
  return nullptr;
}

std::vector<const InstanceView*> World::instancesOf(const std::string& plan) const {
  std::vector<const InstanceView*> out;
  for (const auto& [name, view] : instances) {
    if (view.meta.plan == plan) out.push_back(&view);
  }
  return out;
}

sched::ClusterSnapshot World::schedulerSnapshot() const {
  std::vector<sched::InstanceFact> facts;
  for (const auto& [name, view] : instances) {
    auto add = [&](const model::RuntimeInstance& r) {
      sched::InstanceFact fact;
      fact.meta_instance = name;
      fact.plan = view.meta.plan;
      fact.node = r.node;
      fact.healthy = r.healthy;
      fact.created_at = view.meta.meta.created_at;
      for (const auto& v : r.volumes) {
        fact.volumes.push_back(
            {v.value("storage_class", ""), v.value("capacity_gib", 0.0), v.value("local_volume", "")});
      }
      facts.push_back(std::move(fact));
    };
    if (view.active) add(*view.active);
    for (const auto& p : view.passive) add(p);
  }
  return sched::ClusterSnapshot::build(nodes, clusters, capabilities, std::move(facts));
}

}  // namespace tide::engine
