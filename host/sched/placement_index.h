#pragma once
// Incremental placement for the control loop's pattern: place one instance, commit it, place
// the next (docs/architecture.md#scheduling). Internal to host/sched.
//
// A PlacementIndex keeps, for one plan and one set of placement options, which nodes pass
// every filter and how they rank, in a tournament tree per update domain under a tournament
// tree of the domains, so the best node is read at the root. ClusterSnapshot::commit()
// updates the node it placed on in every index (O(log N) each); place() then answers in
// O(log N) instead of filtering all N nodes again.
//
// PlacementIndexes is the snapshot's small cache of them, keyed by everything the answer
// depends on except options.exclude_nodes (hidden for one query instead). A (plan, options)
// seen for the first time is only remembered, and Scheduler::place() scans every node as
// before: one-off placements do not pay for an index. The second time builds the index
// (one scan). When the index finds no node, place() also falls back to the scan, which
// explains the refusal. At most kMaxIndexes are kept; the least recently used goes first.
//
// Thread-safety: PlacementIndexes locks its own mutex, so const Scheduler::place() calls may
// run concurrently; commit() still needs exclusive access to the snapshot.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "host/model/records.h"
#include "host/sched/placement.h"
#include "host/sched/plan_demand.h"
#include "host/sched/snapshot.h"

namespace tide::sched {

// A complete binary tree over a fixed number of slots whose inner nodes hold the better of
// their children's items (-1: empty), so the best item is at the root and changing one slot
// costs O(log slots).
class Tournament {
 public:
  void reset(int slots);
  int best() const { return tree_[1]; }
  int at(int slot) const { return tree_[width_ + slot]; }
  // Sets a slot without updating the tree; build() then computes every inner node.
  void put(int slot, int item) { tree_[width_ + slot] = item; }
  template <class Better>
  void build(Better better) {
    for (int i = width_ - 1; i >= 1; --i) tree_[i] = pick(tree_[2 * i], tree_[2 * i + 1], better);
  }
  template <class Better>
  void set(int slot, int item, Better better) {
    int i = width_ + slot;
    tree_[i] = item;
    for (i /= 2; i >= 1; i /= 2) tree_[i] = pick(tree_[2 * i], tree_[2 * i + 1], better);
  }

 private:
  template <class Better>
  static int pick(int a, int b, Better better) {
    if (a < 0) return b;
    if (b < 0) return a;
    return better(b, a) ? b : a;
  }

  int width_ = 1;
  std::vector<int> tree_ = {-1, -1};
};

class PlacementIndex {
 public:
  // Builds the index over every node: O(N·(R·c + P·v)).
  PlacementIndex(const ClusterSnapshot& snapshot, PlanDemand demand, std::string plan, const PlacementOptions& options);

  const PlanDemand& demand() const { return demand_; }
  // The node place() would choose, ignoring the nodes in `excluded` (snapshot indexes); -1
  // when none fits. O((1 + excluded)·log N).
  int best(const std::vector<int>& excluded);
  // ClusterSnapshot::commit() placed an instance of `plan` (meta instance `meta`) on `node`.
  void committed(const ClusterSnapshot& snapshot, const std::string& plan, const std::string& meta, int node);
  // ClusterSnapshot::commitResize() changed the remaining resources of `node`.
  void resized(const ClusterSnapshot& snapshot, int node) { refresh(snapshot, node); }

 private:
  // Re-judges `node` against the snapshot and puts it back in its place.
  void refresh(const ClusterSnapshot& snapshot, int node);
  void updateDomain(int domain);
  bool nodeBetter(int a, int b) const;
  bool domainBetter(int a, int b) const;

  PlanDemand demand_;
  std::string plan_;
  int max_per_node_ = 1;
  bool bin_pack_ = false;
  std::unordered_set<std::string> avoid_metas_;  // options.avoid_nodes_of
  std::vector<int> domain_of_;                   // by node
  std::vector<int> slot_;                        // by node: its slot in its domain's tournament
  std::vector<char> eligible_;                   // by node: passes the filters no placement changes
  std::vector<char> avoid_;                      // by node: runs one of avoid_metas_
  std::vector<int> count_;                       // by node: instances of the plan
  std::vector<double> score_;                    // by node
  std::vector<int> domain_count_;                // by domain: instances of the plan
  std::vector<Tournament> domains_;              // by domain: its best fitting node
  Tournament top_;                               // the domain holding the best node
  PlanDemand::VolumeFit fit_;                    // scratch
};

class PlacementIndexes {
 public:
  static constexpr size_t kMaxIndexes = 8;

  // One placement of `plan` from an index, or nullopt when the caller must scan every node:
  // the first time this plan and options are seen, when the plan does not resolve (the scan
  // reports why), or when no node fits (the scan explains the refusal).
  std::optional<Placement> placeOne(const ClusterSnapshot& snapshot, const model::Plan& plan,
                                    const PlacementOptions& options);
  // Every index sees a commit (ClusterSnapshot::commit, after it updated the snapshot).
  void committed(const ClusterSnapshot& snapshot, const std::string& plan, const std::string& meta, int node);
  // Every index sees a resize (ClusterSnapshot::commitResize, after it updated the snapshot).
  void resized(const ClusterSnapshot& snapshot, int node);

 private:
  struct Entry {
    std::string key;
    uint64_t last_used = 0;
    std::unique_ptr<PlacementIndex> index;  // null until asked for a second time
  };

  std::mutex mutex_;
  uint64_t clock_ = 0;          // GUARDED_BY(mutex_)
  std::vector<Entry> entries_;  // GUARDED_BY(mutex_)
};

}  // namespace tide::sched
