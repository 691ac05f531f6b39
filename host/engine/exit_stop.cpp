#include "host/engine/exit_stop.h"

#include <map>
#include <set>

#include "host/model/states.h"

namespace tide::engine {
namespace {

// Stops one RUNNING workload and records it STOPPED (node and reservation kept, so the next
// start restarts it where it was). An error leaves it as far as it got: RUNNING, or STOPPING
// with no operation, which the next host's observer judges (and removes).
Status stopAndRecord(ledger::Ledger& ledger, DriverSet& drivers, const model::RuntimeInstance& r,
                     const std::string& actor) {
  TIDE_ASSIGN_OR_RETURN(auto driver, drivers.forNode(r.node));
  TIDE_ASSIGN_OR_RETURN(
      auto stopping, ledger.instances().setRuntimeInstanceState(r.meta.id, model::RuntimeState::kStopping, r.meta.generation, actor,
                                                    "stopping: the host exits (--stop-workloads-on-exit)"));
  TIDE_RETURN_IF_ERROR(driver->stop({std::to_string(r.meta.id), r.node, r.driver_handle}));
  return ledger
      .instances().setRuntimeInstanceState(r.meta.id, model::RuntimeState::kStopped, stopping.meta.generation, actor,
                               "stopped by the host on exit (--stop-workloads-on-exit)")
      .status();
}

}  // namespace

Result<StoppedWorkloads> stopWorkloadsOnExit(ledger::Ledger& ledger, DriverSet& drivers, const std::string& actor) {
  TIDE_ASSIGN_OR_RETURN(auto clusters, ledger::listAll(ledger.inventory(), &ledger::InventoryRecords::listClusters));
  std::set<std::string> process_clusters;
  for (const auto& c : clusters) {
    if (c.driver_kind == "process") process_clusters.insert(c.name);
  }
  TIDE_ASSIGN_OR_RETURN(auto nodes, ledger::listAll(ledger.inventory(), &ledger::InventoryRecords::listNodes));
  std::map<std::string, bool> runs_processes;  // by node
  for (const auto& n : nodes) runs_processes[n.name] = process_clusters.count(n.cluster) > 0;
  TIDE_ASSIGN_OR_RETURN(auto under_way, ledger::listAll(ledger.operations(), &ledger::OperationRecords::listOperations,
                                                        {{"state", model::toString(model::OperationState::kRunning)}}));
  std::set<std::string> busy;
  for (const auto& op : under_way) busy.insert(op.meta_instance);
  TIDE_ASSIGN_OR_RETURN(auto running, ledger::listAll(ledger.instances(), &ledger::InstanceRecords::listRuntimeInstances,
                                                      {{"state", model::toString(model::RuntimeState::kRunning)}}));

  StoppedWorkloads result;
  for (const model::RuntimeInstance& r : running) {
    if (!runs_processes[r.node] || busy.count(r.meta_instance)) continue;
    if (Status stopped = stopAndRecord(ledger, drivers, r, actor); !stopped.isOk()) {
      result.left.push_back(r.meta_instance + ": " + stopped.message());
      continue;
    }
    result.stopped.push_back(r.meta_instance);
  }
  if (!result.stopped.empty() || !result.left.empty()) {
    TIDE_RETURN_IF_ERROR(ledger.audit().appendEvent(
        "host.workloads_stopped", "host",
        model::Json{{"stopped", result.stopped}, {"left_running", result.left}, {"count", result.stopped.size()}},
        actor));
  }
  return result;
}

}  // namespace tide::engine
