#include "host/sched/plan_demand.h"

#include <algorithm>

#include "host/sched/scheduler.h"

namespace tide::sched {
namespace {

constexpr double kEpsilon = 1e-9;  // the ledger's tolerance when it re-checks a reservation

}  // namespace

Result<PlanDemand> PlanDemand::resolve(const ClusterSnapshot& s, const model::Plan& plan) {
  PlanDemand out;
  const auto& capabilities = s.capabilities_;
  for (size_t i = 0; i < plan.matching_capabilities.size(); ++i) {
    const model::CapabilityMatch& match = plan.matching_capabilities[i];
    Rule rule;
    rule.accepted.assign(capabilities.size(), 0);
    const std::string& comparator = match.comparator;
    if (comparator == "IN" || comparator == "EQ" || comparator == "NOT_IN") {
      rule.must_have = comparator != "NOT_IN";
      for (const auto& name : match.names) {
        auto it = s.capability_index_.find(name);
        if (it != s.capability_index_.end()) rule.accepted[it->second] = 1;
      }
    } else if (comparator == "GTE" || comparator == "LTE") {
      const bool at_least = comparator == "GTE";
      int64_t bound = 0;
      for (const auto& name : match.names) {
        auto it = s.capability_index_.find(name);
        if (it == s.capability_index_.end()) continue;
        const auto& capability = capabilities[it->second];
        if (!capability.known || capability.type != match.type) continue;
        if (rule.bound.empty() || (at_least ? capability.score < bound : capability.score > bound)) {
          bound = capability.score;
          rule.bound = name;
        }
      }
      for (size_t id = 0; id < capabilities.size() && !rule.bound.empty(); ++id) {
        const auto& capability = capabilities[id];
        rule.accepted[id] = capability.known && capability.type == match.type &&
                            (at_least ? capability.score >= bound : capability.score <= bound);
      }
    } else {
      return Status::invalidArgument("plan '" + plan.name + "': unknown comparator '" + comparator + "'",
                                     {{"matching_capabilities[" + std::to_string(i) + "].comparator",
                                       "must be one of IN, NOT_IN, EQ, GTE, LTE", ""}});
    }
    out.rules_.push_back(std::move(rule));
  }

  out.resources_ = instanceResources(plan);
  for (const auto& application : plan.applications) {
    for (const auto& volume : application.persistent_volumes) {
      auto cls = s.storage_class_index_.find(volume.storage_class);
      out.requests_.push_back({volume.capacity_gib, cls == s.storage_class_index_.end() ? -1 : cls->second});
    }
  }
  out.request_order_.resize(out.requests_.size());
  for (size_t i = 0; i < out.requests_.size(); ++i) out.request_order_[i] = static_cast<int>(i);
  std::stable_sort(out.request_order_.begin(), out.request_order_.end(),
                   [&](int a, int b) { return out.requests_[a].capacity_gib > out.requests_[b].capacity_gib; });
  return out;
}

bool PlanDemand::eligible(const ClusterSnapshot& s, int node) const {
  const auto& entry = s.nodes_[node];
  return entry.allocated && entry.cluster_active && failedRule(s, node) < 0;
}

int PlanDemand::failedRule(const ClusterSnapshot& s, int node) const {
  const auto& entry = s.nodes_[node];
  const int* first = s.node_capabilities_.data() + entry.first_capability;
  for (size_t i = 0; i < rules_.size(); ++i) {
    const auto& accepted = rules_[i].accepted;
    const bool has = std::any_of(first, first + entry.capability_count, [&](int id) { return accepted[id] != 0; });
    if (has != rules_[i].must_have) return static_cast<int>(i);
  }
  return -1;
}

bool PlanDemand::coresFit(double cores) const { return cores + kEpsilon >= resources_.cores; }

bool PlanDemand::memoryFits(double memory) const { return memory + kEpsilon >= resources_.memory_gib; }

int PlanDemand::fitVolumes(const ClusterSnapshot& s, const double* volume_free, int node, VolumeFit& fit) const {
  if (requests_.empty()) return -1;
  const auto& entry = s.nodes_[node];
  fit.free.assign(volume_free + entry.first_volume, volume_free + entry.first_volume + entry.volume_count);
  fit.chosen.resize(requests_.size());
  for (int request : request_order_) {
    const VolumeRequest& wanted = requests_[request];
    int best = -1;
    for (int i = 0; i < entry.volume_count; ++i) {
      if (s.volume_class_[entry.first_volume + i] != wanted.storage_class) continue;
      if (best < 0 || fit.free[i] > fit.free[best]) best = i;
    }
    if (best < 0 || fit.free[best] + kEpsilon < wanted.capacity_gib) return request;
    fit.free[best] -= wanted.capacity_gib;
    fit.chosen[request] = best;
  }
  return -1;
}

double PlanDemand::score(const ClusterSnapshot& s, int node, double cores, double memory) const {
  const auto& entry = s.nodes_[node];
  return ((cores - resources_.cores) * entry.per_core + (memory - resources_.memory_gib) * entry.per_gib) / 2;
}

Placement PlanDemand::placement(const ClusterSnapshot& s, const model::Plan& plan, int node,
                                const VolumeFit& fit) const {
  const model::Node& record = s.records_[node];
  Placement out{record.name, s.domains_[s.nodes_[node].domain], resources_, {}};
  if (requests_.empty()) return out;
  out.volumes.reserve(requests_.size());
  size_t request = 0;
  for (const auto& application : plan.applications) {
    for (const auto& volume : application.persistent_volumes) {
      out.volumes.push_back({application.payload_name, volume.mount_path, volume.storage_class, volume.capacity_gib,
                             record.local_volumes[fit.chosen[request++]].mount_path});
    }
  }
  return out;
}

}  // namespace tide::sched
