#include "host/sched/snapshot.h"

#include <algorithm>
#include <utility>

#include "host/sched/placement_index.h"

namespace tide::sched {
namespace {

int intern(const std::string& name, std::vector<std::string>& names, std::unordered_map<std::string, int>& index) {
  auto [it, inserted] = index.try_emplace(name, static_cast<int>(names.size()));
  if (inserted) names.push_back(name);
  return it->second;
}

}  // namespace

ClusterSnapshot ClusterSnapshot::build(std::vector<model::Node> nodes, std::vector<model::Cluster> clusters,
                                       std::vector<model::Capability> capabilities, std::vector<InstanceFact> instances,
                                       const std::set<std::string>& unreachable) {
  ClusterSnapshot s;
  for (auto& cluster : clusters) s.cluster_states_.emplace(std::move(cluster.name), cluster.state);
  for (auto& capability : capabilities) {
    CapabilityEntry& entry = s.capabilities_[s.internCapability(capability.name)];
    entry.type = std::move(capability.type);
    entry.score = capability.score;
    entry.known = true;
  }

  std::stable_sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  nodes.erase(std::unique(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.name == b.name; }),
              nodes.end());
  s.nodes_.reserve(nodes.size());
  for (auto& node : nodes) {
    NodeEntry entry;
    entry.remaining_cores = node.remaining.cores;
    entry.remaining_memory = node.remaining.memory_gib;
    const double cores = node.total.cores - node.system_reserved.cores;
    const double memory = node.total.memory_gib - node.system_reserved.memory_gib;
    entry.per_core = cores > 0 ? 1 / cores : 0;
    entry.per_gib = memory > 0 ? 1 / memory : 0;
    entry.domain = s.internDomain(node.update_domain);
    entry.first_capability = static_cast<int>(s.node_capabilities_.size());
    entry.capability_count = static_cast<int>(node.capabilities.size());
    for (const auto& name : node.capabilities) s.node_capabilities_.push_back(s.internCapability(name));
    entry.first_volume = static_cast<int>(s.volume_free_.size());
    entry.volume_count = static_cast<int>(node.local_volumes.size());
    for (const auto& volume : node.local_volumes) {
      s.volume_free_.push_back(volume.capacity_gib);
      s.volume_class_.push_back(s.internStorageClass(volume.storage_class));
    }
    entry.unreachable = unreachable.count(node.name) > 0;
    entry.allocated = node.state == model::NodeState::kAllocated && !entry.unreachable;
    auto cluster = s.cluster_states_.find(node.cluster);
    entry.cluster_active = cluster != s.cluster_states_.end() && cluster->second == model::ClusterState::kActive;
    s.node_index_.emplace(node.name, static_cast<int>(s.nodes_.size()));
    s.nodes_.push_back(entry);
    s.records_.push_back(std::move(node));
  }

  for (const auto& fact : instances) {
    const int node = s.nodeIndex(fact.node);
    int domain = -1;
    if (!fact.update_domain.empty()) {
      domain = s.internDomain(fact.update_domain);
    } else if (node >= 0) {
      domain = s.nodes_[node].domain;
    }
    s.count(fact.plan, fact.meta_instance, node, domain);
    if (node < 0) continue;
    for (const auto& use : fact.volumes) {
      const int volume = s.volumeFor(node, use);
      if (volume >= 0) s.volume_free_[volume] -= use.capacity_gib;
    }
  }
  return s;
}

Status ClusterSnapshot::commit(const std::string& plan, const std::string& meta_instance, const Placement& placement) {
  const int node = nodeIndex(placement.node);
  if (node < 0) return Status::notFound("node '" + placement.node + "' is not in the scheduling snapshot");
  NodeEntry& entry = nodes_[node];
  entry.remaining_cores -= placement.reservation.cores;
  entry.remaining_memory -= placement.reservation.memory_gib;
  records_[node].remaining = {entry.remaining_cores, entry.remaining_memory};
  for (const auto& assignment : placement.volumes) {
    const int volume = volumeFor(node, {assignment.storage_class, assignment.capacity_gib, assignment.local_volume});
    if (volume >= 0) volume_free_[volume] -= assignment.capacity_gib;
  }
  count(plan, meta_instance, node, entry.domain);
  indexes().committed(*this, plan, meta_instance, node);
  return Status::ok();
}

Status ClusterSnapshot::commitResize(const std::string& node_name, const model::Resources& from,
                                     const model::Resources& to) {
  const int node = nodeIndex(node_name);
  if (node < 0) return Status::notFound("node '" + node_name + "' is not in the scheduling snapshot");
  NodeEntry& entry = nodes_[node];
  entry.remaining_cores -= to.cores - from.cores;
  entry.remaining_memory -= to.memory_gib - from.memory_gib;
  records_[node].remaining = {entry.remaining_cores, entry.remaining_memory};
  indexes().resized(*this, node);
  return Status::ok();
}

ClusterSnapshot::IndexesSlot::IndexesSlot() : indexes_(std::make_unique<PlacementIndexes>()) {}
ClusterSnapshot::IndexesSlot::IndexesSlot(const IndexesSlot&) : IndexesSlot() {}
ClusterSnapshot::IndexesSlot& ClusterSnapshot::IndexesSlot::operator=(const IndexesSlot&) {
  indexes_ = std::make_unique<PlacementIndexes>();
  return *this;
}
ClusterSnapshot::IndexesSlot::~IndexesSlot() = default;

const model::Node* ClusterSnapshot::findNode(const std::string& name) const {
  const int node = nodeIndex(name);
  return node < 0 ? nullptr : &records_[node];
}

int ClusterSnapshot::instancesOn(const std::string& plan, const std::string& node) const {
  auto usage = plans_.find(plan);
  const int index = nodeIndex(node);
  if (usage == plans_.end() || index < 0) return 0;
  auto it = usage->second.per_node.find(index);
  return it == usage->second.per_node.end() ? 0 : it->second;
}

double ClusterSnapshot::volumeFree(const std::string& node, const std::string& local_volume) const {
  const int index = nodeIndex(node);
  if (index < 0) return -1;
  const auto& volumes = records_[index].local_volumes;
  for (size_t i = 0; i < volumes.size(); ++i) {
    if (volumes[i].mount_path == local_volume) return volume_free_[nodes_[index].first_volume + i];
  }
  return -1;
}

int ClusterSnapshot::internCapability(const std::string& name) {
  auto [it, inserted] = capability_index_.try_emplace(name, static_cast<int>(capabilities_.size()));
  if (inserted) capabilities_.push_back({name, "", 0, false});
  return it->second;
}

int ClusterSnapshot::internDomain(const std::string& name) { return intern(name, domains_, domain_index_); }

int ClusterSnapshot::internStorageClass(const std::string& name) {
  return intern(name, storage_classes_, storage_class_index_);
}

int ClusterSnapshot::nodeIndex(const std::string& name) const {
  auto it = node_index_.find(name);
  return it == node_index_.end() ? -1 : it->second;
}

int ClusterSnapshot::volumeFor(int node, const VolumeUse& use) const {
  const NodeEntry& entry = nodes_[node];
  auto cls = storage_class_index_.find(use.storage_class);
  if (cls == storage_class_index_.end()) return -1;
  int best = -1;
  for (int i = 0; i < entry.volume_count; ++i) {
    const int volume = entry.first_volume + i;
    if (volume_class_[volume] != cls->second) continue;
    if (!use.local_volume.empty() && records_[node].local_volumes[i].mount_path == use.local_volume) return volume;
    if (best < 0 || volume_free_[volume] > volume_free_[best]) best = volume;
  }
  return best;
}

void ClusterSnapshot::count(const std::string& plan, const std::string& meta_instance, int node, int domain) {
  PlanUsage& usage = plans_[plan];
  if (node >= 0) {
    ++usage.per_node[node];
    if (!meta_instance.empty()) nodes_of_meta_[meta_instance].push_back(node);
  }
  if (domain >= 0) ++usage.per_domain[domain];
}

}  // namespace tide::sched
