#pragma once
// Scheduler: where new instances of a plan go and which instances a scale-down removes
// (docs/architecture.md#scheduling). A pure, in-memory decision over a ClusterSnapshot: no SQL, no clock, no
// side effects. The caller reserves the result in the ledger (which re-checks capacity)
// and then ClusterSnapshot::commit()s it if it places more in the same pass.
//
// place() filters every node, in this order, and counts each rejected node under the
// first filter it fails:
//   1. not in options.exclude_nodes
//   2. state ALLOCATED (not UNALLOCATED, CORDONED, DRAINING, SANITIZING, EVICTED)
//   3. its cluster is ACTIVE
//   4. every matching_capabilities rule of the plan:
//        IN / EQ  the node has one of the names;   NOT_IN  it has none of them;
//        GTE      it has a capability of the rule's type scoring >= the lowest score among
//                 the names;  LTE  <= the highest. Names that are not known capabilities
//                 of that type set no bound; a GTE/LTE rule with no such name matches no node.
//   5. fewer than options.max_per_node instances of the plan already on it
//   6. remaining cores, then memory, >= the sum of the plan's applications' resources
//   7. every persistent volume fits a local volume of its storage class; volumes are
//      assigned largest first, each to the local volume of its class with the most free
//      capacity, and each consumes that capacity
// and then picks, for each instance in turn, the best surviving node by:
//   1. fewest instances of the plan in the node's update domain (spread)
//   2. runs none of options.avoid_nodes_of (soft anti-affinity)
//   3. least-allocated: most remaining (cores/allocatable + memory/allocatable)/2 after
//      placement; or the least of it with options.bin_pack
//   4. node name
// Each placement updates the node's remaining resources, volume capacity, per-node and
// per-domain counts before the next is chosen, so one batch never over-commits.
//
// place(count = 1) is what the control loop asks for, once per operation, with a commit()
// in between: the second time the snapshot sees the same plan and options (all but
// exclude_nodes), it builds a candidate index for them (placement_index.h) that commit()
// keeps current, so later calls skip the scan. Answers are the scan's, exactly; when the
// index finds no node, the scan runs to explain why.
//
// Complexity, for N nodes in D update domains, R capability rules, c capabilities per
// node, v local volumes per node, P volumes per plan, X excluded nodes and a key of K bytes
// (the plan's rules and resources, and options.avoid_nodes_of):
//   place(count = 1), the first time for a plan and options, or when nothing fits:
//                       O(N·(R·c + P·v)) time, O(N) memory.
//   place(count = 1) again (indexed): O(K + P·v + (1 + X)·(log N + log D)); the index is
//                       built once, O(N·(R·c + P·v)), and takes O(N + D) memory.
//   place(count = k > 1): O(N·(R·c + P·v) + k·(log N + log D + P·v)) time, O(N + V) memory,
//                       allocated once per call; capability rules are resolved to a
//                       per-capability table once per call, not per node or instance.
//   ClusterSnapshot::commit(): O(I·(log N + log D + P·v)) for I <= 8 indexes kept.
//   chooseScaleDown(n instances, k): O(n log n + k·D).
//
// Thread-safety: const; any number of threads may call it while nobody commit()s to the
// snapshot (the snapshot's index cache has its own lock). The snapshot must outlive the
// Scheduler.

#include <string>
#include <vector>

#include "host/core/status.h"
#include "host/model/records.h"
#include "host/sched/placement.h"
#include "host/sched/snapshot.h"

namespace tide::sched {

// What one instance of `plan` reserves: the sum of its applications' resources.
model::Resources instanceResources(const model::Plan& plan);
// Whether two reservations are equal, within the ledger's tolerance.
bool sameResources(const model::Resources& a, const model::Resources& b);

class Scheduler {
 public:
  explicit Scheduler(const ClusterSnapshot& snapshot) : snapshot_(snapshot) {}

  // `count` placements for new instances of `plan`, best first; all or nothing.
  // kUnprocessable when fewer than `count` fit: the message says how many fit and how
  // many nodes each filter rejected ("2 of 5 instances of plan 'web' fit; of 9 nodes,
  // 3 lack capability type GPU ≥ nvidia-p100; 2 lack 4 free cores; 1 is CORDONED").
  // kInvalidArgument for count < 0, max_per_node < 1 or an unknown comparator.
  Result<std::vector<Placement>> place(const model::Plan& plan, int count, const PlacementOptions& options = {}) const;

  // The meta instance names of `count` instances to remove from `instances` (the live
  // instances of one plan), in removal order: unhealthy first; then from the update domain
  // that holds the most of the remaining ones; then newest (created_at) first; then by
  // name. All of them when count >= instances.size(). A fact with no update domain takes
  // its node's from the snapshot.
  std::vector<std::string> chooseScaleDown(const std::vector<InstanceFact>& instances, int count) const;

  // Whether `node` can hold an instance that runs there with reservation `from` at `to`
  // instead, in place (an UPDATE to a deployment whose plan asks for other resources:
  // docs/architecture.md#changing-a-plan): the growth must fit the node's remaining cores and
  // memory; a shrink always fits. Only resources are judged: the instance is there already,
  // so the node's state and capabilities are not. kUnprocessable naming the node, the sizes
  // and what it lacks; kNotFound for a node the snapshot does not hold.
  Status checkResize(const std::string& node, const model::Resources& from, const model::Resources& to) const;

 private:
  const ClusterSnapshot& snapshot_;
};

}  // namespace tide::sched
