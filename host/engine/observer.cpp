#include "host/engine/observer.h"

#include <algorithm>

namespace tide::engine {
namespace {

// The health checks of `meta_instance`'s applications in the plan its deployment was made
// with, in start order; empty when none has one.
std::vector<model::ApplicationCheck> healthChecksOf(const World& world, const std::string& meta_instance) {
  const model::MetaInstance& meta = world.instances.at(meta_instance).meta;
  const model::Plan* plan = world.planAsDeployed(meta.plan, meta.deployment_id);
  return plan == nullptr ? std::vector<model::ApplicationCheck>{} : model::healthChecksOf(*plan);
}

// Why an instance its driver reports unhealthy is so.
std::string unhealthyBecause(const std::string& driver_message) {
  return driver_message.empty() ? "unhealthy, says the driver" : driver_message;
}

}  // namespace

Observer::Observer(ledger::Ledger& ledger, DriverSet& drivers, const Clock& clock, EngineMetrics& metrics,
                   ObserverOptions options)
    : ledger_(ledger),
      drivers_(drivers),
      clock_(clock),
      metrics_(metrics),
      options_(std::move(options)),
      probe_pool_(options_.probe_threads) {}

int Observer::pass(const World& world, const std::set<std::string>& busy, const UnreachableNodes& unreachable) {
  const Slice slice = nextSlice(world);
  Inventories inventories;
  if (slice.starts_round) {
    inventories = listInventories(world, unreachable);
    listed_clusters_.clear();
    for (const auto& [cluster, ids] : inventories) listed_clusters_.insert(cluster);
  }
  const Observation seen = compareWithDrivers(world, slice, busy, unreachable);
  if (haltOnDiscrepancy(seen.gone)) return 1;  // the same slice again once resumed
  judged_up_to_ = slice.ends_round ? std::string() : slice.views.back()->meta.name;
  if (slice.ends_round) acknowledged_.clear();
  int changes = markGone(seen.gone);
  changes += probeHealth(world, slice, seen.running, busy);
  changes += markHealthUnknown(seen.unknown, unreachable);
  if (slice.starts_round) changes += collectOrphans(world, inventories);
  return changes;
}

Observer::Slice Observer::nextSlice(const World& world) const {
  Slice slice;
  slice.starts_round = judged_up_to_.empty();
  auto it = world.instances.upper_bound(judged_up_to_);
  if (it == world.instances.end()) {
    it = world.instances.begin();  // the instance it stopped after is gone, and so are all after it
    slice.starts_round = true;
  }
  for (; it != world.instances.end() && slice.views.size() < std::max<size_t>(1, options_.slice); ++it) {
    slice.views.push_back(&it->second);
  }
  slice.ends_round = it == world.instances.end();
  return slice;
}

Observer::Inventories Observer::listInventories(const World& world, const UnreachableNodes& unreachable) {
  Inventories inventories;
  std::set<std::string> clusters;
  for (const auto& n : world.nodes) {
    if (!n.cluster.empty()) clusters.insert(n.cluster);
  }
  for (const auto& cluster : clusters) {
    auto driver = drivers_.forCluster(cluster);
    if (!driver.isOk()) continue;
    auto listed = metrics_.timeDriverCall("list", [&] { return driver.value()->list(); });
    if (!listed.isOk()) continue;
    auto& refs = inventories[cluster];
    for (const auto& ref : listed.value()) {
      if (!unreachable.contains(ref.node)) refs.emplace(ref.id, ref);
    }
  }
  return inventories;
}

Observer::Observation Observer::compareWithDrivers(const World& world, const Slice& slice,
                                                   const std::set<std::string>& busy,
                                                   const UnreachableNodes& unreachable) {
  Observation seen;
  // Who is asked about, in the world's order, and the batch of each cluster.
  struct Asked {
    const InstanceView* view;
    const model::RuntimeInstance* runtime;
    const std::string* cluster;
    size_t index;  // in the cluster's batch
  };
  std::vector<Asked> asked;
  std::map<std::string, std::vector<drivers::RuntimeRef>> batches;
  for (const InstanceView* v : slice.views) {
    const InstanceView& view = *v;
    if (busy.count(view.meta.name)) continue;
    std::vector<const model::RuntimeInstance*> runtimes;
    if (view.active) runtimes.push_back(&*view.active);
    for (const auto& p : view.passive) runtimes.push_back(&p);
    for (const auto* r : runtimes) {
      auto node = world.node_by_name.find(r->node);
      if (node == world.node_by_name.end() || !listed_clusters_.count(node->second->cluster)) continue;
      if (unreachable.contains(r->node)) {
        if (r->state == model::RuntimeState::kRunning) seen.unknown.push_back(r);
        continue;
      }
      if ((r->state == model::RuntimeState::kStarting || r->state == model::RuntimeState::kStopping) &&
          !view.unfinished) {
        seen.gone.push_back({&view, *r, "left " + model::toString(r->state) + " by an operation that ended"});
        continue;
      }
      if (r->state != model::RuntimeState::kRunning) continue;
      auto& batch = batches[node->second->cluster];
      asked.push_back({&view, r, &node->second->cluster, batch.size()});
      batch.push_back({std::to_string(r->meta.id), r->node, r->driver_handle});
    }
  }

  // A cluster whose driver cannot answer is not judged this pass.
  std::map<std::string, std::vector<drivers::RuntimeAnswer>> answers;
  for (const auto& [cluster, refs] : batches) {
    auto driver = drivers_.forCluster(cluster);
    if (!driver.isOk()) continue;
    auto answered =
        metrics_.timeDriverCall("status_all", [&driver, &refs = refs] { return driver.value()->statusAll(refs); });
    if (!answered.isOk() || answered->size() != refs.size()) continue;
    answers.emplace(cluster, std::move(answered).value());
  }

  for (const Asked& a : asked) {
    auto batch = answers.find(*a.cluster);
    if (batch == answers.end()) continue;
    const drivers::RuntimeAnswer& status = batch->second[a.index];
    if (!status.isOk()) {
      if (status.status().code() == Code::kNotFound)
        seen.gone.push_back({a.view, *a.runtime, "the driver does not know it"});
      continue;
    }
    const auto& s = status.value();
    if (model::hasEnded(s.state)) {
      seen.gone.push_back(
          {a.view, *a.runtime,
           "exited with code " + std::to_string(s.exit_code) + (s.message.empty() ? "" : ": " + s.message)});
      continue;
    }
    if (s.state == model::WorkloadState::kRunning) seen.running.push_back({a.runtime, s.healthy, s.message});
  }
  return seen;
}

void Observer::acknowledge(const std::set<std::string>& instances) {
  acknowledged_.insert(instances.begin(), instances.end());
}

bool Observer::haltOnDiscrepancy(const std::vector<Gone>& gone) {
  const auto unacknowledged = std::count_if(gone.begin(), gone.end(),
                                            [this](const Gone& g) { return !acknowledged_.count(g.view->meta.name); });
  if (unacknowledged <= options_.discrepancy_threshold) return false;
  Json missing = Json::array();
  for (const auto& g : gone) missing.push_back(Json{{"instance", g.view->meta.name}, {"why", g.why}});
  // A halt not written still stops this pass; the next one, seeing the discrepancy, halts again.
  (void)ledger_.audit().haltControlLoop(
      "alarm.discrepancy",
      std::to_string(unacknowledged) + " running instances disagree with their drivers (threshold " +
          std::to_string(options_.discrepancy_threshold) + "); the control loop is halted until an admin resumes it",
      Json{{"instances", missing}}, options_.actor);
  return true;
}

int Observer::markGone(const std::vector<Gone>& gone) {
  int changes = 0;
  for (const auto& g : gone) {
    // With the generation the pass read: an executor that took the instance over since
    // (STOPPING it, say) wins, and the next pass judges what it left. The ledger first, the
    // driver after: a judgement the write refuses is stale, and acting on it in the driver
    // removed an instance an executor had just started (the soak's "removed underfoot").
    if (!ledger_
             .instances().setRuntimeInstanceState(g.runtime.meta.id, model::RuntimeState::kFailed, g.runtime.meta.generation,
                                      options_.actor, g.why)
             .isOk()) {
      continue;
    }
    ++changes;
    probes_.erase(g.runtime.meta.id);
    // FAILED, it is done with, so out of its driver too, however it was judged: left STARTING
    // or STOPPING it may still run; one that exited is still the driver's record (for a node
    // agent's cluster, an entry of the node's document that wants it running, which an older
    // agent starts again). Its log outlives the removal (docs/architecture.md#observer).
    // Should this remove fail, the observer removes it as an orphan after the grace period.
    auto driver = drivers_.forNode(g.runtime.node);
    if (driver.isOk()) {
      // Best effort: see above.
      (void)metrics_.timeDriverCall("remove", [&] {
        return driver.value()->remove({std::to_string(g.runtime.meta.id), g.runtime.node, g.runtime.driver_handle});
      });
    }
  }
  return changes;
}

bool Observer::recordHealth(const model::RuntimeInstance& r, bool healthy, const std::string& message) {
  return healthy != r.healthy && writeHealth(r, healthy, healthy ? "" : message);
}

bool Observer::writeHealth(const model::RuntimeInstance& r, bool healthy, const std::string& message) {
  ledger::RuntimeUpdate update;
  update.healthy = healthy;
  update.ready_since = healthy ? formatTimestamp(clock_.now()) : "";
  update.message = message;
  return ledger_.instances().updateRuntimeInstance(r.meta.id, update, r.meta.generation, options_.actor).isOk();
}

int Observer::markHealthUnknown(const std::vector<const model::RuntimeInstance*>& unknown,
                                const UnreachableNodes& unreachable) {
  int changes = 0;
  for (const model::RuntimeInstance* r : unknown) {
    probes_.erase(r->meta.id);
    const std::string message = unreachable.healthMessage(r->node);
    if ((r->healthy || r->message != message) && writeHealth(*r, false, message)) ++changes;
  }
  return changes;
}

void Observer::stop() { probe_pool_.stop(); }

void Observer::waitForProbes() { probe_pool_.waitIdle(); }

int Observer::recordProbeResults(const World& world, const std::set<std::string>& busy) {
  int changes = 0;
  for (auto& [id, result] : probe_pool_.collect()) {
    auto probe = probes_.find(id);
    if (probe == probes_.end()) continue;  // no longer running when it was last judged
    Probe& p = probe->second;
    p.tracker.record(result);
    // Written to the instance as this pass sees it, when nobody else works on it.
    auto view = world.instances.find(p.meta_instance);
    if (view == world.instances.end() || busy.count(p.meta_instance)) continue;
    const model::RuntimeInstance* r = nullptr;
    if (view->second.active && view->second.active->meta.id == id) r = &*view->second.active;
    for (const auto& passive : view->second.passive) {
      if (passive.meta.id == id) r = &passive;
    }
    if (r != nullptr && r->state == model::RuntimeState::kRunning &&
        recordHealth(*r, p.tracker.healthy(), result.message))
      ++changes;
  }
  return changes;
}

int Observer::probeHealth(const World& world, const Slice& slice, const std::vector<Running>& running,
                          const std::set<std::string>& busy) {
  const TimePoint now = clock_.now();
  int changes = recordProbeResults(world, busy);
  size_t submitted = 0;
  for (const Running& seen : running) {
    const model::RuntimeInstance* r = seen.runtime;
    if (isUnreachableMessage(r->message, r->node)) {
      // Its node is back: its health is known again, by its driver's word or, until its
      // check says otherwise, as when it started (healthy without a check).
      const bool healthy = seen.reported_healthy.value_or(healthChecksOf(world, r->meta_instance).empty());
      const std::string why =
          seen.reported_healthy ? unhealthyBecause(seen.message) : "not checked since its node came back";
      if (writeHealth(*r, healthy, healthy ? "" : why)) ++changes;
      continue;
    }
    if (seen.reported_healthy) {
      // The driver knows: its word, with no probe and no thresholds.
      probes_.erase(r->meta.id);
      if (recordHealth(*r, *seen.reported_healthy, unhealthyBecause(seen.message))) ++changes;
      continue;
    }
    std::vector<model::ApplicationCheck> checks = healthChecksOf(world, r->meta_instance);
    if (checks.empty()) continue;
    // The first application's check sets the interval and thresholds of the instance's probe;
    // each probe runs every application's check (docs/architecture.md#applications).
    const model::HealthCheck* check = &checks.front().check;
    auto it = probes_.find(r->meta.id);
    if (it == probes_.end()) {
      it = probes_.emplace(r->meta.id, Probe{drivers::HealthTracker(*check, r->healthy), now, r->meta_instance}).first;
    }
    // Due, and not still running from an earlier pass: its result is recorded by the first
    // pass that finds it finished.
    if (it->second.next > now || submitted >= options_.max_probes_per_pass) continue;
    drivers::ProbeJob job{*check, {}, {checks.begin() + 1, checks.end()}, checks.front().application};
    job.target.ports = r->ports;
    if (!probe_pool_.submit(r->meta.id, std::move(job))) continue;
    ++submitted;
    it->second.next = now + std::chrono::milliseconds(static_cast<int64_t>(check->interval_seconds * 1000));
  }
  // Forget trackers of the slice's instances that are no longer running.
  if (probes_.empty()) return changes;
  std::set<int64_t> still;
  for (const Running& seen : running) still.insert(seen.runtime->meta.id);
  for (auto it = probes_.begin(); it != probes_.end();) {
    const std::string& meta = it->second.meta_instance;
    const bool in_slice = (slice.starts_round || meta >= slice.views.front()->meta.name) &&
                          (slice.ends_round || meta <= slice.views.back()->meta.name);
    it = in_slice && !still.count(it->first) ? probes_.erase(it) : std::next(it);
  }
  return changes;
}

int Observer::collectOrphans(const World& world, const Inventories& inventories) {
  std::set<std::string> known;
  for (const auto& [name, view] : world.instances) {
    if (view.active) known.insert(std::to_string(view.active->meta.id));
    for (const auto& p : view.passive) known.insert(std::to_string(p.meta.id));
  }
  const TimePoint now = clock_.now();
  std::set<std::string> present;
  int changes = 0;
  for (const auto& [cluster, refs] : inventories) {
    for (const auto& [id, ref] : refs) {
      if (known.count(id)) continue;
      const std::string key = cluster + "/" + id;
      present.insert(key);
      auto [it, first] = orphans_seen_.emplace(key, now);
      if (first) {
        // Best effort: the grace period runs from orphans_seen_, whether or not this is written.
        (void)ledger_.audit().appendEvent("driver.orphan", "runtime/" + id,
                                  Json{{"cluster", cluster},
                                       {"message", "the driver runs something the ledger does not; removing it after " +
                                                       std::to_string(options_.orphan_grace.count()) + " s"}},
                                  options_.actor);
        continue;
      }
      if (now - it->second < options_.orphan_grace) continue;
      auto driver = drivers_.forCluster(cluster);
      if (!driver.isOk()) continue;
      const drivers::RuntimeRef& orphan = ref;  // clang's C++20 captures no structured binding
      if (metrics_.timeDriverCall("remove", [&] { return driver.value()->remove(orphan); }).isOk()) {
        // Best effort: the removal itself happened; the event only reports it.
        (void)ledger_.audit().appendEvent("driver.orphan_removed", "runtime/" + id, Json{{"cluster", cluster}}, options_.actor);
        orphans_seen_.erase(it);
        ++changes;
      }
    }
  }
  // Forget only what an inventory read this pass no longer shows: a cluster whose list()
  // failed says nothing, and forgetting its orphans would restart their grace period on
  // every failed read (a flaky runtime's orphans were never removed).
  for (auto it = orphans_seen_.begin(); it != orphans_seen_.end();) {
    const std::string cluster = it->first.substr(0, it->first.find('/'));
    const bool gone = inventories.count(cluster) && !present.count(it->first);
    it = gone ? orphans_seen_.erase(it) : std::next(it);
  }
  return changes;
}

}  // namespace tide::engine
