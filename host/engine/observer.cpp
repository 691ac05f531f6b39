#include "host/engine/observer.h"

#include <algorithm>
#include <future>

namespace tide::engine {

Observer::Observer(ledger::Ledger& ledger, DriverSet& drivers, const Clock& clock, EngineMetrics& metrics,
                   ObserverOptions options)
    : ledger_(ledger), drivers_(drivers), clock_(clock), metrics_(metrics), options_(std::move(options)) {}

int Observer::pass(const World& world, const std::set<std::string>& busy) {
  const Inventories inventories = listInventories(world);
  const Observation seen = compareWithDrivers(world, busy, inventories);
  if (haltOnDiscrepancy(seen.gone)) return 0;
  int changes = markGone(seen.gone);
  changes += probeHealth(world, seen.running);
  return changes + collectOrphans(world, inventories);
}

Observer::Inventories Observer::listInventories(const World& world) {
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
    auto& ids = inventories[cluster];
    for (const auto& ref : listed.value()) ids.insert(ref.id);
  }
  return inventories;
}

Observer::Observation Observer::compareWithDrivers(const World& world, const std::set<std::string>& busy,
                                                   const Inventories& inventories) {
  Observation seen;
  for (const auto& [name, view] : world.instances) {
    if (busy.count(name)) continue;
    std::vector<const model::RuntimeInstance*> runtimes;
    if (view.active) runtimes.push_back(&*view.active);
    for (const auto& p : view.passive) runtimes.push_back(&p);
    for (const auto* r : runtimes) {
      auto node = world.node_by_name.find(r->node);
      if (node == world.node_by_name.end() || !inventories.count(node->second->cluster)) continue;
      if ((r->state == "STARTING" || r->state == "STOPPING") && !view.unfinished) {
        seen.gone.push_back({&view, *r, "left " + r->state + " by an operation that ended"});
        continue;
      }
      if (r->state != "RUNNING") continue;
      auto driver = drivers_.forNode(r->node);
      if (!driver.isOk()) continue;
      const auto t0 = std::chrono::steady_clock::now();
      auto status = driver.value()->status({std::to_string(r->meta.id), r->node, r->driver_handle});
      metrics_.observeDriverCall("status", status.isOk() || status.status().code() == Code::kNotFound,
                                 std::chrono::steady_clock::now() - t0);
      if (!status.isOk()) {
        if (status.status().code() == Code::kNotFound) seen.gone.push_back({&view, *r, "the driver does not know it"});
        continue;
      }
      const auto& s = status.value();
      if (s.state == "EXITED" || s.state == "STOPPED") {
        seen.gone.push_back(
            {&view, *r,
             "exited with code " + std::to_string(s.exit_code) + (s.message.empty() ? "" : ": " + s.message)});
        continue;
      }
      if (s.state == "RUNNING") seen.running.push_back(r);
    }
  }
  return seen;
}

bool Observer::haltOnDiscrepancy(const std::vector<Gone>& gone) {
  const bool was_halted = halted_;
  halted_ = static_cast<int>(gone.size()) > options_.discrepancy_threshold;
  if (halted_ && !was_halted) {
    Json missing = Json::array();
    for (const auto& g : gone) missing.push_back(Json{{"instance", g.view->meta.name}, {"why", g.why}});
    (void)ledger_.appendEvent(
        "alarm.discrepancy", "engine",
        Json{{"message", std::to_string(gone.size()) + " running instances disagree with their drivers; execution "
                                                       "is halted until they agree again"},
             {"instances", missing}},
        options_.actor);
  } else if (!halted_ && was_halted) {
    (void)ledger_.appendEvent("alarm.cleared", "engine", Json{{"message", "ledger and drivers agree again"}},
                              options_.actor);
  }
  return halted_;
}

int Observer::markGone(const std::vector<Gone>& gone) {
  int changes = 0;
  for (const auto& g : gone) {
    auto driver = drivers_.forNode(g.runtime.node);
    if (driver.isOk() && g.runtime.state != "RUNNING") {
      (void)driver.value()->remove({std::to_string(g.runtime.meta.id), g.runtime.node, g.runtime.driver_handle});
    }
    if (ledger_.setRuntimeInstanceState(g.runtime.meta.id, "FAILED", std::nullopt, options_.actor, g.why).isOk()) {
      ++changes;
      probes_.erase(g.runtime.meta.id);
    }
  }
  return changes;
}

int Observer::probeHealth(const World& world, const std::vector<const model::RuntimeInstance*>& running) {
  const TimePoint now = clock_.now();
  std::vector<std::pair<const model::RuntimeInstance*, const model::HealthCheck*>> due;
  for (const auto* r : running) {
    auto plan = world.plan_by_name.find(world.instances.at(r->meta_instance).meta.plan);
    if (plan == world.plan_by_name.end() || plan->second->applications.empty()) continue;
    const auto& check = plan->second->applications[0].health_check;
    if (!check) continue;
    auto it = probes_.find(r->meta.id);
    if (it == probes_.end()) {
      it = probes_.emplace(r->meta.id, Probe{HealthTracker(*check, r->healthy), now}).first;
    }
    if (it->second.next > now || due.size() >= options_.max_probes_per_pass) continue;
    due.emplace_back(r, &*check);
  }
  std::vector<std::future<ProbeResult>> results;
  for (const auto& [r, check] : due) {
    ProbeTarget target;
    target.ports = r->ports;
    results.push_back(std::async(std::launch::async, [check = *check, target] { return probeOnce(check, target); }));
  }
  int changes = 0;
  for (size_t i = 0; i < due.size(); ++i) {
    const auto& [r, check] = due[i];
    ProbeResult result = results[i].get();
    Probe& p = probes_.at(r->meta.id);
    p.next = now + std::chrono::milliseconds(static_cast<int64_t>(check->interval_seconds * 1000));
    p.tracker.record(result);
    if (p.tracker.healthy() == r->healthy) continue;
    ledger::Ledger::RuntimeUpdate update;
    update.healthy = p.tracker.healthy();
    update.ready_since = p.tracker.healthy() ? formatTimestamp(clock_.now()) : "";
    update.message = p.tracker.healthy() ? "" : result.message;
    if (ledger_.updateRuntimeInstance(r->meta.id, update, options_.actor).isOk()) ++changes;
  }
  // Forget trackers of instances that are no longer running.
  for (auto it = probes_.begin(); it != probes_.end();) {
    bool still = std::any_of(running.begin(), running.end(), [&](auto* r) { return r->meta.id == it->first; });
    it = still ? std::next(it) : probes_.erase(it);
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
  for (const auto& [cluster, ids] : inventories) {
    for (const auto& id : ids) {
      if (known.count(id)) continue;
      const std::string key = cluster + "/" + id;
      present.insert(key);
      auto [it, first] = orphans_seen_.emplace(key, now);
      if (first) {
        (void)ledger_.appendEvent("driver.orphan", "runtime/" + id,
                                  Json{{"cluster", cluster},
                                       {"message", "the driver runs something the ledger does not; removing it after " +
                                                       std::to_string(options_.orphan_grace.count()) + " s"}},
                                  options_.actor);
        continue;
      }
      if (now - it->second < options_.orphan_grace) continue;
      auto driver = drivers_.forCluster(cluster);
      if (!driver.isOk()) continue;
      // The node is unknown to the ledger's live view; the process driver keys by id.
      if (driver.value()->remove({id, "", ""}).isOk()) {
        (void)ledger_.appendEvent("driver.orphan_removed", "runtime/" + id, Json{{"cluster", cluster}}, options_.actor);
        orphans_seen_.erase(it);
        ++changes;
      }
    }
  }
  for (auto it = orphans_seen_.begin(); it != orphans_seen_.end();) {
    it = present.count(it->first) ? std::next(it) : orphans_seen_.erase(it);
  }
  return changes;
}

}  // namespace tide::engine
