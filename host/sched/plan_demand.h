#pragma once
// PlanDemand: what one instance of a plan asks of a node, resolved against one
// ClusterSnapshot so that checking a node never compares names: capability rules as
// per-capability tables, the sum of the applications' resources, and the persistent volumes
// with their storage classes, largest first. Internal to host/sched: the scheduler's full
// scan (scheduler.cpp) and the incremental candidate index (placement_index.h) both judge
// nodes with it, so the two can never disagree about what fits.
//
// A PlanDemand holds no pointer into the plan it was resolved from; it is valid for the
// snapshot it was resolved against (commit() keeps it valid: capabilities and storage
// classes never change after build()). Immutable after resolve(); const methods are
// thread-safe.

#include <string>
#include <vector>

#include "host/core/status.h"
#include "host/model/records.h"
#include "host/sched/placement.h"
#include "host/sched/snapshot.h"

namespace tide::sched {

class PlanDemand {
 public:
  // One matching_capabilities rule, by index into the plan's list.
  struct Rule {
    bool must_have = true;       // false for NOT_IN: the node must have none of `accepted`
    std::vector<char> accepted;  // by capability id
    std::string bound;           // GTE/LTE: the name whose score is the bound; empty if none is known
  };
  // One persistent volume, in plan order (application, then volume).
  struct VolumeRequest {
    double capacity_gib = 0;
    int storage_class = -1;  // index into the snapshot's storage classes; -1: no node has the class
  };
  // Where fitVolumes() put each request on the node it last checked.
  struct VolumeFit {
    std::vector<double> free;  // the node's local volumes after assignment
    std::vector<int> chosen;   // per request (plan order): local volume, as an offset within the node
  };

  // kInvalidArgument for an unknown comparator (naming matching_capabilities[i].comparator).
  static Result<PlanDemand> resolve(const ClusterSnapshot& snapshot, const model::Plan& plan);

  const model::Resources& resources() const { return resources_; }
  const std::vector<Rule>& rules() const { return rules_; }
  const std::vector<VolumeRequest>& requests() const { return requests_; }

  // Whether `node` passes the filters no placement changes: ALLOCATED, cluster ACTIVE and
  // every capability rule.
  bool eligible(const ClusterSnapshot& snapshot, int node) const;
  // The first capability rule `node` fails, or -1.
  int failedRule(const ClusterSnapshot& snapshot, int node) const;
  // Whether this many free cores / GiB of memory hold one instance, with the ledger's
  // tolerance.
  bool coresFit(double cores) const;
  bool memoryFits(double memory) const;
  // The first request (plan order) that finds no room on `node` given the free capacity of
  // every local volume in `volume_free` (indexed like the snapshot's), or -1; `fit` is left
  // describing the assignment. Requests are assigned largest first, each to the local volume
  // of its class with the most free capacity.
  int fitVolumes(const ClusterSnapshot& snapshot, const double* volume_free, int node, VolumeFit& fit) const;
  // The allocation score after placing one instance with `cores` and `memory` remaining:
  // the mean free share of cores and memory. Higher is emptier.
  double score(const ClusterSnapshot& snapshot, int node, double cores, double memory) const;
  // The placement of one instance of `plan` (the plan this was resolved from) on `node`,
  // with volumes as `fit` assigned them.
  Placement placement(const ClusterSnapshot& snapshot, const model::Plan& plan, int node, const VolumeFit& fit) const;

 private:
  model::Resources resources_;
  std::vector<Rule> rules_;
  std::vector<VolumeRequest> requests_;
  std::vector<int> request_order_;  // indexes into requests_, largest first
};

}  // namespace tide::sched
