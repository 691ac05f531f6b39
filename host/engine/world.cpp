#include "host/engine/world.h"

#include <cstdint>

#include <algorithm>

#include "host/model/states.h"
#include "host/model/transitions.h"

namespace tide::engine {

const model::Plan* World::planAsDeployed(const std::string& plan, const std::string& deployment_id) const {
  auto it = plan_by_name.find(plan);
  if (it == plan_by_name.end()) return nullptr;
  const model::Deployment* made = deployment(plan, deployment_id);
  return made ? &model::planAsDeployed(*it->second, *made) : it->second;
}

OperationSummary OperationSummary::of(const model::Operation& op) {
  return OperationSummary{op.meta.id, op.type, op.state, op.intent, op.message};
}

const model::RuntimeInstance* InstanceView::newest() const {
  if (newest_other) return newest_other.get();
  if (active && active->meta.id == newest_id) return &*active;
  return nullptr;
}

std::string InstanceView::effectiveState() const {
  if (meta.state != model::MetaState::kActive) return model::toString(meta.state);
  if (active) return model::toString(active->state);
  if (const auto* runtime = newest(); runtime && runtime->state == model::RuntimeState::kFailed) {
    return model::toString(model::RuntimeState::kFailed);
  }
  return model::toString(model::RuntimeState::kPending);
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

namespace {

// Files a runtime instance under its view, as World::load and refresh both do.
void placeRuntime(InstanceView& view, model::RuntimeInstance r) {
  if (r.meta.id > view.newest_id) {
    view.newest_id = r.meta.id;
    const bool becomes_active = model::holdsResources(r.state) && r.is_active;
    view.newest_other = becomes_active ? nullptr : std::make_unique<model::RuntimeInstance>(r);
  }
  if (!model::holdsResources(r.state)) return;
  if (r.is_active) {
    view.active = std::move(r);
  } else {
    view.passive.push_back(std::move(r));
  }
}

void placeOperation(InstanceView& view, model::Operation o) {
  view.last = OperationSummary::of(o);
  if (!model::isTerminal(o.state)) {
    view.unfinished = std::make_unique<model::Operation>(std::move(o));
  } else {
    view.unfinished.reset();
  }
}

// Tables whose rows the control loop's picture does not hold.
bool outsideTheWorld(const std::string& table) {
  return table == "events" || table == "decisions" || table == "script_versions" || table == "tokens" ||
         table == "schema_version" || table == "audit_checkpoints" || table == "operation_approvals";
}

}  // namespace

Status World::loadInventory(ledger::Ledger& ledger) {
  TIDE_ASSIGN_OR_RETURN(plans, ledger::listAll(ledger.plans(), &ledger::PlanRecords::listPlans));
  TIDE_ASSIGN_OR_RETURN(nodes, ledger::listAll(ledger.inventory(), &ledger::InventoryRecords::listNodes));
  TIDE_ASSIGN_OR_RETURN(clusters, ledger::listAll(ledger.inventory(), &ledger::InventoryRecords::listClusters));
  TIDE_ASSIGN_OR_RETURN(capabilities, ledger::listAll(ledger.inventory(), &ledger::InventoryRecords::listCapabilities));
  plan_by_name.clear();
  for (const auto& p : plans) plan_by_name[p.name] = &p;
  indexNodes();
  return Status::ok();
}

void World::indexNodes() {
  node_by_name.clear();
  node_index_.clear();
  for (size_t i = 0; i < nodes.size(); ++i) {
    node_by_name[nodes[i].name] = &nodes[i];
    node_index_[nodes[i].name] = i;
  }
}

Status World::loadDeployments(ledger::Ledger& ledger) {
  TIDE_ASSIGN_OR_RETURN(auto all, ledger::listAll(ledger.plans(), &ledger::PlanRecords::listDeployments));
  deployments.clear();
  for (auto& d : all) deployments[d.plan].push_back(std::move(d));
  return Status::ok();
}

void World::recomputeRemaining() {
  for (auto& n : nodes) {
    n.remaining = {n.total.cores - n.system_reserved.cores, n.total.memory_gib - n.system_reserved.memory_gib};
  }
  for (const auto& [name, view] : instances) reserve(view, 1);
}

void World::reserve(const InstanceView& view, double sign) {
  auto take = [&](const model::RuntimeInstance& r) {
    auto it = node_index_.find(r.node);
    if (it == node_index_.end()) return;
    model::Node& node = nodes[it->second];
    node.remaining.cores -= sign * r.reservation.cores;
    node.remaining.memory_gib -= sign * r.reservation.memory_gib;
  };
  if (view.active) take(*view.active);
  for (const auto& p : view.passive) take(p);
}

Result<World> World::load(ledger::Ledger& ledger) {
  ledger::Ledger::Snapshot one_moment(ledger);  // no view mixes a newer runtime with an older operation
  World w;
  TIDE_RETURN_IF_ERROR(w.loadInventory(ledger));
  TIDE_RETURN_IF_ERROR(w.loadDeployments(ledger));
  TIDE_ASSIGN_OR_RETURN(auto metas, ledger::listAll(ledger.instances(), &ledger::InstanceRecords::listMetaInstances));
  TIDE_ASSIGN_OR_RETURN(auto runtimes, ledger.instances().currentRuntimeInstances());
  TIDE_ASSIGN_OR_RETURN(auto operations, ledger.operations().latestOperations());
  std::map<std::string, InstanceView> views;
  for (auto& m : metas) {
    if (m.state == model::MetaState::kDeleted) continue;
    std::string name = m.name;
    views[std::move(name)].meta = std::move(m);
  }
  for (auto& r : runtimes) {
    auto it = views.find(r.meta_instance);
    if (it != views.end()) placeRuntime(it->second, std::move(r));
  }
  for (auto& o : operations) {
    auto it = views.find(o.meta_instance);
    if (it != views.end()) placeOperation(it->second, std::move(o));
  }
  for (auto& [name, view] : views) w.addInstance(std::move(view));
  w.recomputeRemaining();
  return w;
}

Status World::refresh(ledger::Ledger& ledger, const std::vector<ledger::RowChange>& changes) {
  ledger::Ledger::Snapshot one_moment(ledger);
  std::vector<int64_t> metas, runtimes, operations;
  bool inventory = false;
  bool deployments_changed = false;
  for (const auto& change : changes) {
    if (change.table == "meta_instances") {
      metas.push_back(change.id);
    } else if (change.table == "runtime_instances") {
      runtimes.push_back(change.id);
    } else if (change.table == "operations") {
      operations.push_back(change.id);
    } else if (change.table == "deployments") {
      deployments_changed = true;
    } else if (!outsideTheWorld(change.table)) {
      inventory = true;  // plans, nodes, clusters, capabilities and their parts
    }
  }
  if (inventory) TIDE_RETURN_IF_ERROR(loadInventory(ledger));
  if (deployments_changed) TIDE_RETURN_IF_ERROR(loadDeployments(ledger));
  if (metas.empty() && runtimes.empty() && operations.empty()) {
    if (inventory) recomputeRemaining();
    return Status::ok();
  }
  TIDE_ASSIGN_OR_RETURN(auto slice, ledger.instances().instanceSlice(metas, runtimes, operations));
  std::map<std::string, InstanceView> fresh;
  for (auto& m : slice.metas) {
    if (auto old = instances.find(m.name); old != instances.end()) {
      if (!inventory) reserve(old->second, -1);
      dropInstance(old);
    }
    if (m.state == model::MetaState::kDeleted) continue;
    InstanceView view;
    view.meta = std::move(m);
    fresh.emplace(view.meta.name, std::move(view));
  }
  for (auto& r : slice.runtimes) {
    auto it = fresh.find(r.meta_instance);
    if (it != fresh.end()) placeRuntime(it->second, std::move(r));
  }
  for (auto& o : slice.operations) {
    auto it = fresh.find(o.meta_instance);
    if (it != fresh.end()) placeOperation(it->second, std::move(o));
  }
  for (auto& [name, view] : fresh) {
    if (!inventory) reserve(view, 1);
    addInstance(std::move(view));
  }
  if (inventory) recomputeRemaining();
  return Status::ok();
}

WorldFeed::WorldFeed(ledger::Ledger& ledger) : ledger_(ledger) {
  subscription_ = ledger_.subscribe([this](const std::vector<ledger::RowChange>& changes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (overflowed_) return;
    if (pending_.size() + changes.size() > kMaxPending) {
      overflowed_ = true;
      pending_.clear();
      return;
    }
    pending_.insert(pending_.end(), changes.begin(), changes.end());
  });
}

WorldFeed::~WorldFeed() { ledger_.unsubscribe(subscription_); }

Status WorldFeed::update(std::optional<World>& world) {
  std::vector<ledger::RowChange> changes;
  bool reload = !world || !ledger_.changesTracked();
  {
    std::lock_guard<std::mutex> lock(mu_);
    changes.swap(pending_);
    reload = reload || overflowed_;
    overflowed_ = false;
  }
  last_dirty_ = changes.size();
  if (!reload) {
    Status refreshed = world->refresh(ledger_, changes);
    if (refreshed.isOk()) return refreshed;
  }
  world.reset();
  auto loaded = World::load(ledger_);
  if (!loaded.isOk()) return loaded.status();
  world = std::move(loaded.value());
  return Status::ok();
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
    if (d->meta.id >= before || d->completed_at.empty() || d->state == model::DeploymentState::kRolledBack) continue;
    if (d->state == model::DeploymentState::kCompleted || d->state == model::DeploymentState::kInProgress ||
        d->state == model::DeploymentState::kPaused)
      return &*d;
  }
  return nullptr;
}

const model::Deployment* World::currentDeployment(const std::string& plan) const {
  auto it = deployments.find(plan);
  return it == deployments.end() ? nullptr : model::currentDeployment(it->second);
}

int64_t World::runningInstances(const std::string& plan) const {
  auto it = running_by_plan_.find(plan);
  return it == running_by_plan_.end() ? 0 : it->second;
}

std::vector<const InstanceView*> World::instancesOf(const std::string& plan) const {
  std::vector<const InstanceView*> out;
  auto names = names_by_plan_.find(plan);
  if (names == names_by_plan_.end()) return out;
  out.reserve(names->second.size());
  for (const std::string& name : names->second) out.push_back(&instances.at(name));
  return out;
}

namespace {

bool running(const InstanceView& view) { return view.active && view.active->state == model::RuntimeState::kRunning; }

bool holdsReservation(const InstanceView& view) {
  if (view.active && view.active->state == model::RuntimeState::kPending) return true;
  for (const auto& p : view.passive) {
    if (p.state == model::RuntimeState::kPending) return true;
  }
  return false;
}

}  // namespace

void World::addInstance(InstanceView view) {
  const std::string& name = view.meta.name;
  names_by_plan_[view.meta.plan].insert(name);
  if (running(view)) ++running_by_plan_[view.meta.plan];
  if (view.unfinished) operating.insert(name);
  if (view.meta.state == model::MetaState::kActive && !view.active && !view.unfinished) unplaced.insert(name);
  if (view.meta.state == model::MetaState::kActive && view.active &&
      view.active->state == model::RuntimeState::kStopped && !view.unfinished) {
    stopped_on_exit.insert(name);
  }
  if (holdsReservation(view)) reserving.insert(name);
  std::string key = name;
  instances.emplace(std::move(key), std::move(view));
}

void World::dropInstance(std::map<std::string, InstanceView>::iterator it) {
  auto names = names_by_plan_.find(it->second.meta.plan);
  if (names != names_by_plan_.end()) {
    names->second.erase(it->first);
    if (names->second.empty()) names_by_plan_.erase(names);
  }
  if (running(it->second)) {
    auto count = running_by_plan_.find(it->second.meta.plan);
    if (count != running_by_plan_.end() && --count->second == 0) running_by_plan_.erase(count);
  }
  operating.erase(it->first);
  unplaced.erase(it->first);
  stopped_on_exit.erase(it->first);
  reserving.erase(it->first);
  instances.erase(it);
}

sched::ClusterSnapshot World::schedulerSnapshot(const std::set<std::string>& unreachable) const {
  std::vector<sched::InstanceFact> facts;
  for (const auto& [name, view] : instances) {
    auto add = [&facts, &name = name, &view = view](const model::RuntimeInstance& r) {
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
  return sched::ClusterSnapshot::build(nodes, clusters, capabilities, std::move(facts), unreachable);
}

}  // namespace tide::engine
