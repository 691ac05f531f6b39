#pragma once
// ClusterSnapshot: the inventory and the live placements the scheduler decides over,
// indexed once so that placement never searches by name or touches SQL.
//
// The engine builds one per pass from ledger list results (nodes carry `remaining` as the
// ledger derives it, so reservations of live instances are already subtracted; volume
// usage is not, and comes from the instance facts). The ledger re-checks cores and memory
// when it writes a reservation, so a stale snapshot makes that write fail rather than
// over-commit a node; it does not re-check volume capacity.
//
// commit() also keeps current the candidate indexes that place() builds for plans it is
// asked to place again and again (placement_index.h); a copy of a snapshot starts without
// them.
//
// Thread-safety: const methods may run concurrently; commit() needs exclusive access.

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "host/core/status.h"
#include "host/model/records.h"
#include "host/sched/placement.h"

namespace tide::sched {

class Scheduler;         // scheduler.h
class PlacementRun;      // scheduler.cpp: the working state of one full Scheduler::place() scan
class PlanDemand;        // plan_demand.h
class PlacementIndex;    // placement_index.h
class PlacementIndexes;  // placement_index.h

class ClusterSnapshot {
 public:
  // Indexes ledger records. Nodes are kept in name order (the scheduler's tie-break); a
  // repeated node name keeps its first record. A node whose cluster is not listed counts
  // as being in a cluster that is not ACTIVE. A fact naming an unknown node still counts
  // toward its plan's update domain when the fact names one. The nodes named in
  // `unreachable` (their agents went quiet) take no placement, whatever their state.
  // Cost: O(N log N + V + F·v) for N nodes, V local volumes, F facts of v volumes each.
  static ClusterSnapshot build(std::vector<model::Node> nodes, std::vector<model::Cluster> clusters,
                               std::vector<model::Capability> capabilities, std::vector<InstanceFact> instances,
                               const std::set<std::string>& unreachable = {});

  // Records an instance placed after the snapshot was built, typically once the ledger
  // has written its reservation, so the next place() sees it: subtracts the reservation,
  // charges the volumes, counts it for its plan, node and update domain.
  // kNotFound when the placement names a node the snapshot does not hold.
  Status commit(const std::string& plan, const std::string& meta_instance, const Placement& placement);
  // Records that an instance on `node` now reserves `to` instead of `from` (an in-place
  // resize the ledger has written), so the next place() sees the node's new remaining
  // resources. kNotFound when the snapshot does not hold the node.
  Status commitResize(const std::string& node, const model::Resources& from, const model::Resources& to);

  size_t nodeCount() const { return nodes_.size(); }
  // The node as listed, with `remaining` kept current by commit(); nullptr if unknown.
  const model::Node* findNode(const std::string& name) const;
  // Instances of `plan` on `node` (facts and commits).
  int instancesOn(const std::string& plan, const std::string& node) const;
  // Free capacity of the node's local volume mounted at `local_volume`; -1 if unknown.
  double volumeFree(const std::string& node, const std::string& local_volume) const;

 private:
  friend class Scheduler;
  friend class PlacementRun;
  friend class PlanDemand;
  friend class PlacementIndex;
  friend class PlacementIndexes;

  // Owns the snapshot's PlacementIndexes. A copy (or a moved-to snapshot) starts with none:
  // they are a cache, rebuilt on demand.
  class IndexesSlot {
   public:
    IndexesSlot();
    IndexesSlot(const IndexesSlot&);
    IndexesSlot& operator=(const IndexesSlot&);
    ~IndexesSlot();
    PlacementIndexes* get() const { return indexes_.get(); }

   private:
    std::unique_ptr<PlacementIndexes> indexes_;
  };

  // What placement reads for every node, kept small so a scan stays in cache; the full
  // record is records_[same index].
  struct NodeEntry {
    double remaining_cores = 0;
    double remaining_memory = 0;
    double per_core = 0;       // 1 / allocatable cores (total - system reserved); 0 if none
    double per_gib = 0;        // 1 / allocatable memory; 0 if none
    int domain = 0;            // index into domains_
    int first_capability = 0;  // [first_capability, +capability_count) of node_capabilities_
    int capability_count = 0;
    int first_volume = 0;  // [first_volume, +volume_count) of volume_free_ / volume_class_
    int volume_count = 0;
    bool allocated = false;  // state is ALLOCATED
    bool unreachable = false;  // named unreachable to build(): takes nothing either
    bool cluster_active = false;
  };
  struct CapabilityEntry {
    std::string name;
    std::string type;
    int64_t score = 0;
    bool known = false;  // listed among the capabilities (a bare name on a node is not)
  };
  // Instances of one plan per node and per update domain.
  struct PlanUsage {
    std::unordered_map<int, int> per_node;
    std::unordered_map<int, int> per_domain;
  };

  int internCapability(const std::string& name);
  int internDomain(const std::string& name);
  int internStorageClass(const std::string& name);
  int nodeIndex(const std::string& name) const;  // -1 if unknown
  PlacementIndexes& indexes() const { return *indexes_.get(); }
  // The local volume (global index) that takes `use` on node `node`; -1 if none fits the class.
  int volumeFor(int node, const VolumeUse& use) const;
  void count(const std::string& plan, const std::string& meta_instance, int node, int domain);

  std::vector<NodeEntry> nodes_;        // sorted by name
  std::vector<model::Node> records_;    // parallel to nodes_
  std::vector<int> node_capabilities_;  // ids into capabilities_, grouped by node
  std::unordered_map<std::string, int> node_index_;
  std::vector<std::string> domains_;
  std::unordered_map<std::string, int> domain_index_;
  std::vector<CapabilityEntry> capabilities_;
  std::unordered_map<std::string, int> capability_index_;
  std::vector<std::string> storage_classes_;
  std::unordered_map<std::string, int> storage_class_index_;
  std::unordered_map<std::string, model::ClusterState> cluster_states_;  // name -> state
  std::vector<double> volume_free_;                              // per local volume, grouped by node
  std::vector<int> volume_class_;                                // per local volume: index into storage_classes_
  std::unordered_map<std::string, PlanUsage> plans_;
  std::unordered_map<std::string, std::vector<int>> nodes_of_meta_;  // meta instance -> node indexes
  IndexesSlot indexes_;
};

}  // namespace tide::sched
