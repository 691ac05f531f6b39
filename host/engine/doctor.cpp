#include "host/engine/doctor.h"

#include <map>
#include <set>

#include "host/model/states.h"
#include "host/model/transitions.h"

namespace tide::engine {
namespace {

// What the ledger says about runtime instances and operations, indexed for the inventory checks.
struct LedgerView {
  std::map<std::string, model::RuntimeInstance> runtimes;  // by id as drivers name them
  std::set<std::string> under_way;                         // meta instances with an unfinished operation
  std::map<std::string, std::string> cluster_of_node;
};

Result<LedgerView> readLedgerView(ledger::Ledger& ledger) {
  LedgerView view;
  TIDE_ASSIGN_OR_RETURN(auto runtimes, ledger::listAll(ledger.instances(), &ledger::InstanceRecords::listRuntimeInstances));
  for (auto& r : runtimes) view.runtimes.emplace(std::to_string(r.meta.id), std::move(r));
  for (model::OperationState state : model::valuesOf<model::OperationState>()) {
    if (!model::isUnfinished(state)) continue;
    TIDE_ASSIGN_OR_RETURN(
        auto operations, ledger::listAll(ledger.operations(), &ledger::OperationRecords::listOperations, {{"state", model::toString(state)}}));
    for (const auto& op : operations) view.under_way.insert(op.meta_instance);
  }
  TIDE_ASSIGN_OR_RETURN(auto nodes, ledger::listAll(ledger.inventory(), &ledger::InventoryRecords::listNodes));
  for (const auto& n : nodes) view.cluster_of_node[n.name] = n.cluster;
  return view;
}

// Whether a driver's status says something runs (or is about to) under that id.
bool isAlive(const drivers::RuntimeAnswer& answer) {
  if (!answer.isOk()) return false;
  using enum model::WorkloadState;
  const model::WorkloadState state = answer->state;
  return state == kRunning || state == kStarting || state == kPending;
}

// One cluster's inventory against the ledger: leaks, duplicates and missing instances.
void examineCluster(const std::string& cluster, drivers::Driver& driver, const LedgerView& view,
                    DoctorReport& report) {
  auto listed = driver.list();
  if (!listed.isOk()) {
    report.findings.push_back({"driver", false, "cluster/" + cluster,
                               "the driver could not list its runtimes: " + listed.status().toString()});
    return;
  }
  auto answers = driver.statusAll(*listed);
  if (!answers.isOk() || answers->size() != listed->size()) {
    report.findings.push_back({"driver", false, "cluster/" + cluster,
                               "the driver could not tell its runtimes' status: " +
                                   (answers.isOk() ? std::string("answers do not match") : answers.status().toString())});
    return;
  }
  ++report.clusters;
  report.driver_runtimes += static_cast<int>(listed->size());
  std::map<std::string, std::vector<std::string>> alive_by_meta;
  std::set<std::string> alive;
  for (size_t i = 0; i < listed->size(); ++i) {
    if (!isAlive((*answers)[i])) continue;
    const std::string& id = (*listed)[i].id;
    alive.insert(id);
    auto record = view.runtimes.find(id);
    if (record == view.runtimes.end()) {
      report.findings.push_back({"leak", true, "runtime/" + id,
                                 "cluster " + cluster + " runs runtime " + id + ", which the ledger has no record of"});
      continue;
    }
    const model::RuntimeInstance& r = record->second;
    if (!model::holdsResources(r.state)) {
      report.findings.push_back({"leak", true, "runtime/" + id,
                                 "cluster " + cluster + " runs runtime " + id + " of " + r.meta_instance +
                                     ", which the ledger has as " + model::toString(r.state)});
      continue;
    }
    alive_by_meta[r.meta_instance].push_back(id);
  }
  for (const auto& [meta, ids] : alive_by_meta) {
    if (ids.size() < 2 || view.under_way.count(meta)) continue;
    std::string list;
    for (const auto& id : ids) list += (list.empty() ? "" : ", ") + id;
    report.findings.push_back({"duplicate", true, "meta_instance/" + meta,
                               "meta instance " + meta + " runs " + std::to_string(ids.size()) + " runtimes (" + list +
                                   ") in cluster " + cluster + " with no operation under way"});
  }
  // A runtime the driver cannot answer about now (kUnavailable: a node agent that has not
  // reported since the host started) is neither missing nor found: its node is skipped, once said.
  std::map<std::string, std::string> unanswered_nodes;
  for (const auto& [id, r] : view.runtimes) {
    if (r.state != model::RuntimeState::kRunning || alive.count(id)) continue;
    auto node = view.cluster_of_node.find(r.node);
    if (node == view.cluster_of_node.end() || node->second != cluster) continue;
    if (unanswered_nodes.count(r.node)) continue;
    if (auto answer = driver.status({id, r.node, r.driver_handle}); answer.status().code() == Code::kUnavailable) {
      unanswered_nodes.emplace(r.node, answer.status().message());
      continue;
    }
    report.findings.push_back({"missing", false, "runtime/" + id,
                               "runtime instance " + id + " of " + r.meta_instance + " is RUNNING on " + r.node +
                                   " in the ledger, but cluster " + cluster + " does not run it"});
  }
  for (const auto& [node, why] : unanswered_nodes) {
    report.findings.push_back({"unchecked", false, "node/" + node,
                               "the runtimes of node " + node + " are not checked: " + why});
  }
}

}  // namespace

int DoctorReport::violations() const {
  int n = 0;
  for (const Finding& f : findings) n += f.violation;
  return n;
}

Result<DoctorReport> examine(ledger::Ledger& ledger, DriverSet& drivers) {
  DoctorReport report;
  TIDE_ASSIGN_OR_RETURN(auto violations, ledger.findInvariantViolations());
  for (auto& v : violations) report.findings.push_back({v.rule, true, "ledger", std::move(v.message)});
  TIDE_ASSIGN_OR_RETURN(LedgerView view, readLedgerView(ledger));
  for (const auto& [id, r] : view.runtimes) {
    report.live_runtime_instances += model::holdsResources(r.state);
    // The control loop reserves a PENDING runtime instance for the operation that will start
    // it (InstanceRecords::reserveForOperation); once no operation is under way, nothing will start it
    // or release what it holds.
    if (r.state == model::RuntimeState::kPending && !view.under_way.count(r.meta_instance)) {
      report.findings.push_back({"reservation", true, "ledger",
                                 "runtime instance " + id + " of " + r.meta_instance + " (PENDING on node " + r.node +
                                     ") holds a reservation no operation will use or release"});
    }
  }
  TIDE_ASSIGN_OR_RETURN(auto clusters, ledger::listAll(ledger.inventory(), &ledger::InventoryRecords::listClusters));
  for (const model::Cluster& cluster : clusters) {
    auto driver = drivers.forCluster(cluster.name);
    if (!driver.isOk()) {
      report.findings.push_back({"driver", false, "cluster/" + cluster.name,
                                 "no driver for the cluster: " + driver.status().toString()});
      continue;
    }
    examineCluster(cluster.name, **driver, view, report);
  }
  return report;
}

model::Json doctorReportJson(const DoctorReport& report) {
  model::Json findings = model::Json::array();
  for (const Finding& f : report.findings) {
    findings.push_back({{"kind", f.kind},
                        {"severity", f.violation ? "violation" : "warning"},
                        {"subject", f.subject},
                        {"message", f.message}});
  }
  const int violations = report.violations();
  return {{"sound", violations == 0},
          {"violations", violations},
          {"warnings", static_cast<int>(report.findings.size()) - violations},
          {"checked",
           {{"clusters", report.clusters},
            {"driver_runtimes", report.driver_runtimes},
            {"live_runtime_instances", report.live_runtime_instances}}},
          {"findings", std::move(findings)}};
}

}  // namespace tide::engine
