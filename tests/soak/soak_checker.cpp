#include "tests/soak/soak_checker.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "host/model/transitions.h"

namespace tide::soak {
namespace {

bool isUnfinishedOperationState(model::OperationState state) { return model::isUnfinished(state); }

// Whether a driver object in `state` is a workload that runs or is on its way to running.
bool runsOrStarts(const std::string& state) { return state == "RUNNING" || state == "STARTING" || state == "PENDING"; }

std::string seconds(std::chrono::milliseconds d) { return std::to_string(d.count() / 1000) + " s"; }

}  // namespace

SoakChecker::SoakChecker(ledger::Ledger& ledger, InventoryReader inventory, CheckerLimits limits)
    : ledger_(ledger), inventory_(std::move(inventory)), limits_(limits) {}

std::vector<Finding> SoakChecker::check(SteadyTime now) {
  ++rounds_;
  std::vector<Finding> fresh;
  auto report = [&](const Finding& finding) {
    if (!reported_.insert(finding.key).second) return;
    violations_.push_back(finding);
    fresh.push_back(finding);
  };
  for (const Finding& broken : ledgerInvariants()) report(broken);
  for (const Finding& race : writersThatRaced()) report(race);
  for (const Finding& killed : instancesRemovedUnderfoot()) report(killed);

  // Suspicions: each becomes a violation once it outlasted its allowance.
  std::map<std::string, std::pair<Finding, std::chrono::milliseconds>> suspicions;
  for (Finding& f : driversAgainstLedger()) {
    std::string key = f.key;
    suspicions.emplace(key, std::make_pair(std::move(f), limits_.disagreement_allowance));
  }
  for (Finding& f : unfinishedOperations()) {
    std::string key = f.key;
    suspicions.emplace(key, std::make_pair(std::move(f), limits_.stuck_after));
  }
  for (auto it = suspected_since_.begin(); it != suspected_since_.end();) {
    it = suspicions.count(it->first) ? std::next(it) : suspected_since_.erase(it);
  }
  for (auto& [key, suspicion] : suspicions) {
    const SteadyTime since = suspected_since_.emplace(key, now).first->second;
    if (now - since <= suspicion.second) continue;
    Finding lasting = suspicion.first;
    lasting.what += " (for " + seconds(std::chrono::duration_cast<std::chrono::milliseconds>(now - since)) + ")";
    report(lasting);
  }
  return fresh;
}

std::vector<Finding> SoakChecker::currentFindings() {
  std::vector<Finding> all = ledgerInvariants();
  for (Finding& f : driversAgainstLedger()) all.push_back(std::move(f));
  for (Finding& f : unfinishedOperations()) {
    f.what = "unfinished at the end: " + f.what;
    all.push_back(std::move(f));
  }
  return all;
}

std::vector<Finding> SoakChecker::ledgerInvariants() {
  auto violations = ledger_.checkInvariants();
  if (!violations.isOk()) return {{"ledger-unreadable", "checkInvariants failed: " + violations.status().toString()}};
  std::vector<Finding> out;
  for (const std::string& v : *violations) out.push_back({"invariant " + v, "ledger invariant: " + v});
  return out;
}

std::vector<Finding> SoakChecker::driversAgainstLedger() {
  // The drivers first: whatever they hold was reserved in the ledger before it was started,
  // so the ledger read second knows it, unless it ended in between (a suspicion that clears).
  auto inventory = inventory_();
  if (!inventory.isOk()) return {};
  auto current = ledger_.instances().currentRuntimeInstances();
  auto nodes = ledger::listAll(ledger_.inventory(), &ledger::InventoryRecords::listNodes);
  if (!current.isOk() || !nodes.isOk()) return {};

  std::map<std::string, const model::RuntimeInstance*> live;  // by runtime id, not TERMINATED/FAILED
  std::map<std::string, model::Resources> reserved;            // by node
  for (const auto& r : *current) {
    if (!model::holdsResources(r.state)) continue;
    live.emplace(std::to_string(r.meta.id), &r);
    reserved[r.node].cores += r.reservation.cores;
    reserved[r.node].memory_gib += r.reservation.memory_gib;
  }
  std::vector<Finding> out;
  std::map<std::string, std::vector<std::string>> running_by_meta;
  std::map<std::string, const InventoryObject*> held;  // by runtime id
  for (const InventoryObject& object : *inventory) {
    held.emplace(object.runtime_id, &object);
    const std::string where = object.cluster + "/" + object.runtime_id;
    auto known = live.find(object.runtime_id);
    if (known == live.end()) {
      out.push_back({"leak " + where, "leak: driver " + object.cluster + " holds runtime " + object.runtime_id + " (" +
                                          object.state + ") that the ledger holds no reservation for"});
      continue;
    }
    if (runsOrStarts(object.state)) running_by_meta[known->second->meta_instance].push_back(object.runtime_id);
  }
  for (const auto& [meta, ids] : running_by_meta) {
    if (ids.size() < 2) continue;
    std::string list;
    for (const auto& id : ids) list += (list.empty() ? "" : ", ") + id;
    out.push_back({"duplicate " + meta, "duplicate: " + meta + " runs " + std::to_string(ids.size()) +
                                            " runtimes in its driver (" + list + ")"});
  }
  for (const auto& [id, r] : live) {
    if (r->state != model::RuntimeState::kRunning) continue;
    auto object = held.find(id);
    if (object == held.end() || object->second->state != "RUNNING") {
      out.push_back({"lost " + id, "lost: runtime " + id + " of " + r->meta_instance + " is RUNNING in the ledger, " +
                                       (object == held.end() ? "unknown to" : object->second->state + " in") +
                                       " its driver"});
    }
  }
  for (const model::Node& node : *nodes) {
    const model::Resources& used = reserved[node.name];
    const double cores = node.total.cores - node.system_reserved.cores - used.cores;
    const double memory = node.total.memory_gib - node.system_reserved.memory_gib - used.memory_gib;
    if (std::fabs(cores - node.remaining.cores) > 1e-6 || std::fabs(memory - node.remaining.memory_gib) > 1e-6) {
      out.push_back({"reservation " + node.name,
                     "reservations: node " + node.name + " has " + std::to_string(node.remaining.cores) +
                         " cores remaining, its live runtime instances leave " + std::to_string(cores)});
    }
  }
  return out;
}

std::vector<Finding> SoakChecker::unfinishedOperations() {
  std::vector<Finding> out;
  waiting_for_placement_ = 0;
  auto latest = ledger_.operations().latestOperations();
  if (!latest.isOk()) return out;
  for (const model::Operation& op : *latest) {
    if (!isUnfinishedOperationState(op.state)) continue;
    if (op.state == model::OperationState::kPending && op.message.rfind("waiting for placement", 0) == 0) {
      ++waiting_for_placement_;
      continue;
    }
    // The same state and attempt for longer than an attempt may take: nothing moves it.
    const std::string id = std::to_string(op.meta.id);
    out.push_back({"stuck " + id + " " + model::toString(op.state) + " " + std::to_string(op.attempts),
                   "stuck: operation " + id + " (" + model::toString(op.type) + " of " + op.meta_instance + ") " +
                       model::toString(op.state) + " at attempt " + std::to_string(op.attempts) + ": " + op.message});
  }
  return out;
}

std::vector<Finding> SoakChecker::writersThatRaced() {
  // Every FAILED operation, each round: one fails long after it was created, so no id marks
  // where the new ones start. They are few.
  auto failed = ledger::listAll(ledger_.operations(), &ledger::OperationRecords::listOperations, {{"state", "FAILED"}});
  if (!failed.isOk()) return {};
  std::vector<Finding> out;
  for (const model::Operation& op : *failed) {
    if (op.message.find(" cannot move from ") == std::string::npos) continue;
    const std::string id = std::to_string(op.meta.id);
    out.push_back({"race " + id, "race: operation " + id + " (" + model::toString(op.type) + " of " + op.meta_instance +
                                     ") FAILED on a transition another writer had made impossible: " + op.message});
  }
  return out;
}

std::vector<Finding> SoakChecker::instancesRemovedUnderfoot() {
  std::vector<Finding> out;
  ledger::ListOptions options;
  options.limit = ledger::kMaxPageSize;
  options.filters = {{"kind", "runtime_instance.state"}};
  options.after = events_read_;
  while (true) {
    auto page = ledger_.audit().listEvents(options);
    if (!page.isOk()) return out;
    for (const model::Event& event : page->items) {
      events_read_ = std::max(events_read_, event.seq);
      if (event.data.value("to", "") != "FAILED" || event.data.value("message", "") != "the driver does not know it") {
        continue;
      }
      out.push_back({"removed " + event.subject,
                     "removed underfoot: " + event.subject + " of " + event.data.value("instance", "") + " on " +
                         event.data.value("node", "") + " was " + event.data.value("from", "") +
                         " in the ledger when its driver no longer had it " +
                         "(event " + std::to_string(event.seq) + ")"});
    }
    if (page->next_after == 0) return out;
    options.after = page->next_after;
  }
}

Result<std::vector<InventoryObject>> readInventory(const std::string& cluster, drivers::Driver& driver) {
  TIDE_ASSIGN_OR_RETURN(std::vector<drivers::RuntimeRef> refs, driver.list());
  TIDE_ASSIGN_OR_RETURN(std::vector<drivers::RuntimeAnswer> answers, driver.statusAll(refs));
  std::vector<InventoryObject> out;
  for (size_t i = 0; i < refs.size() && i < answers.size(); ++i) {
    if (!answers[i].isOk()) continue;
    out.push_back({cluster, refs[i].id, model::toString(answers[i]->state)});
  }
  return out;
}

}  // namespace tide::soak
