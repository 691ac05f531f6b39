#include "host/sched/placement_index.h"

#include <algorithm>
#include <cstring>

namespace tide::sched {
namespace {

void appendText(std::string& key, const std::string& text) {
  const uint32_t size = static_cast<uint32_t>(text.size());
  key.append(reinterpret_cast<const char*>(&size), sizeof size);
  key.append(text);
}

template <class T>
void appendValue(std::string& key, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  key.append(bytes, sizeof(T));
}

// Everything an index's answers depend on, except exclude_nodes (hidden per query), in an
// unambiguous byte string: texts length-prefixed, numbers by their bytes.
std::string indexKey(const model::Plan& plan, const PlacementOptions& options) {
  std::string key;
  key.reserve(128);
  appendText(key, plan.name);
  appendValue(key, plan.matching_capabilities.size());
  for (const auto& match : plan.matching_capabilities) {
    appendText(key, match.type);
    appendText(key, match.comparator);
    appendValue(key, match.names.size());
    for (const auto& name : match.names) appendText(key, name);
  }
  appendValue(key, plan.applications.size());
  for (const auto& application : plan.applications) {
    appendValue(key, application.resources.cores);
    appendValue(key, application.resources.memory_gib);
    appendValue(key, application.persistent_volumes.size());
    for (const auto& volume : application.persistent_volumes) {
      appendText(key, volume.storage_class);
      appendValue(key, volume.capacity_gib);
    }
  }
  appendValue(key, options.max_per_node);
  appendValue(key, options.bin_pack);
  appendValue(key, options.avoid_nodes_of.size());
  for (const auto& meta : options.avoid_nodes_of) appendText(key, meta);
  return key;
}

}  // namespace

void Tournament::reset(int slots) {
  width_ = 1;
  while (width_ < slots) width_ *= 2;
  tree_.assign(2 * static_cast<size_t>(width_), -1);
}

PlacementIndex::PlacementIndex(const ClusterSnapshot& s, PlanDemand demand, std::string plan,
                               const PlacementOptions& options)
    : demand_(std::move(demand)),
      plan_(std::move(plan)),
      max_per_node_(options.max_per_node),
      bin_pack_(options.bin_pack),
      avoid_metas_(options.avoid_nodes_of.begin(), options.avoid_nodes_of.end()) {
  const size_t nodes = s.nodes_.size();
  const size_t domains = s.domains_.size();
  domain_of_.resize(nodes);
  slot_.resize(nodes);
  eligible_.resize(nodes);
  avoid_.assign(nodes, 0);
  count_.assign(nodes, 0);
  score_.assign(nodes, 0);
  domain_count_.assign(domains, 0);
  if (auto usage = s.plans_.find(plan_); usage != s.plans_.end()) {
    for (const auto& [node, n] : usage->second.per_node) count_[node] = n;
    for (const auto& [domain, n] : usage->second.per_domain) domain_count_[domain] = n;
  }
  for (const auto& meta : options.avoid_nodes_of) {
    auto it = s.nodes_of_meta_.find(meta);
    if (it == s.nodes_of_meta_.end()) continue;
    for (int node : it->second) avoid_[node] = 1;
  }

  std::vector<int> slots(domains, 0);
  for (size_t node = 0; node < nodes; ++node) {
    domain_of_[node] = s.nodes_[node].domain;
    slot_[node] = slots[domain_of_[node]]++;
  }
  domains_.resize(domains);
  for (size_t d = 0; d < domains; ++d) domains_[d].reset(slots[d]);
  top_.reset(static_cast<int>(domains));

  auto node_better = [this](int a, int b) { return nodeBetter(a, b); };
  for (size_t i = 0; i < nodes; ++i) {
    const int node = static_cast<int>(i);
    eligible_[node] = demand_.eligible(s, node);
    if (!eligible_[node]) continue;
    const auto& entry = s.nodes_[node];
    score_[node] = demand_.score(s, node, entry.remaining_cores, entry.remaining_memory);
    const bool fits = count_[node] < max_per_node_ && demand_.coresFit(entry.remaining_cores) &&
                      demand_.memoryFits(entry.remaining_memory) &&
                      demand_.fitVolumes(s, s.volume_free_.data(), node, fit_) < 0;
    if (fits) domains_[domain_of_[node]].put(slot_[node], node);
  }
  auto domain_better = [this](int a, int b) { return domainBetter(a, b); };
  for (size_t d = 0; d < domains; ++d) {
    domains_[d].build(node_better);
    top_.put(static_cast<int>(d), domains_[d].best() >= 0 ? static_cast<int>(d) : -1);
  }
  top_.build(domain_better);
}

int PlacementIndex::best(const std::vector<int>& excluded) {
  auto node_better = [this](int a, int b) { return nodeBetter(a, b); };
  std::vector<int> hidden;
  for (int node : excluded) {
    Tournament& domain = domains_[domain_of_[node]];
    if (domain.at(slot_[node]) != node) continue;  // does not fit anyway, or hidden already
    domain.set(slot_[node], -1, node_better);
    updateDomain(domain_of_[node]);
    hidden.push_back(node);
  }
  const int domain = top_.best();
  const int chosen = domain < 0 ? -1 : domains_[domain].best();
  for (int node : hidden) {
    domains_[domain_of_[node]].set(slot_[node], node, node_better);
    updateDomain(domain_of_[node]);
  }
  return chosen;
}

void PlacementIndex::committed(const ClusterSnapshot& s, const std::string& plan, const std::string& meta, int node) {
  if (plan == plan_) {
    ++count_[node];
    ++domain_count_[domain_of_[node]];
  }
  if (!avoid_metas_.empty() && avoid_metas_.contains(meta)) avoid_[node] = 1;
  refresh(s, node);
}

void PlacementIndex::refresh(const ClusterSnapshot& s, int node) {
  if (eligible_[node]) {
    const auto& entry = s.nodes_[node];
    score_[node] = demand_.score(s, node, entry.remaining_cores, entry.remaining_memory);
    const bool fits = count_[node] < max_per_node_ && demand_.coresFit(entry.remaining_cores) &&
                      demand_.memoryFits(entry.remaining_memory) &&
                      demand_.fitVolumes(s, s.volume_free_.data(), node, fit_) < 0;
    // The slot is set even when it holds the same node: the node's rank may have changed.
    domains_[domain_of_[node]].set(slot_[node], fits ? node : -1, [this](int a, int b) { return nodeBetter(a, b); });
  }
  updateDomain(domain_of_[node]);  // the domain's count may have changed even if the node is not eligible
}

void PlacementIndex::updateDomain(int domain) {
  top_.set(domain, domains_[domain].best() >= 0 ? domain : -1, [this](int a, int b) { return domainBetter(a, b); });
}

// The ranking of docs/architecture.md#score: not avoided first, then the allocation score
// (emptiest first, or fullest with bin_pack), then name (node indexes are in name order).
bool PlacementIndex::nodeBetter(int a, int b) const {
  if (avoid_[a] != avoid_[b]) return avoid_[b] != 0;
  if (score_[a] != score_[b]) return bin_pack_ ? score_[a] < score_[b] : score_[a] > score_[b];
  return a < b;
}

// Spread first: the domain with fewer instances of the plan, then the better best node.
bool PlacementIndex::domainBetter(int a, int b) const {
  if (domain_count_[a] != domain_count_[b]) return domain_count_[a] < domain_count_[b];
  return nodeBetter(domains_[a].best(), domains_[b].best());
}

std::optional<Placement> PlacementIndexes::placeOne(const ClusterSnapshot& s, const model::Plan& plan,
                                                    const PlacementOptions& options) {
  std::string key = indexKey(plan, options);
  std::lock_guard<std::mutex> lock(mutex_);
  auto entry = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
  if (entry == entries_.end()) {
    if (entries_.size() == kMaxIndexes) {
      entries_.erase(std::min_element(entries_.begin(), entries_.end(),
                                      [](const Entry& a, const Entry& b) { return a.last_used < b.last_used; }));
    }
    entries_.push_back({std::move(key), ++clock_, nullptr});
    return std::nullopt;
  }
  entry->last_used = ++clock_;
  if (!entry->index) {
    auto demand = PlanDemand::resolve(s, plan);
    if (!demand.isOk()) return std::nullopt;
    entry->index = std::make_unique<PlacementIndex>(s, std::move(demand).value(), plan.name, options);
  }
  std::vector<int> excluded;
  excluded.reserve(options.exclude_nodes.size());
  for (const auto& name : options.exclude_nodes) {
    if (const int node = s.nodeIndex(name); node >= 0) excluded.push_back(node);
  }
  const int node = entry->index->best(excluded);
  if (node < 0) return std::nullopt;
  const PlanDemand& demand = entry->index->demand();
  PlanDemand::VolumeFit fit;
  (void)demand.fitVolumes(s, s.volume_free_.data(), node, fit);  // fits: the index holds the node
  return demand.placement(s, plan, node, fit);
}

void PlacementIndexes::committed(const ClusterSnapshot& s, const std::string& plan, const std::string& meta, int node) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& entry : entries_) {
    if (entry.index) entry.index->committed(s, plan, meta, node);
  }
}

void PlacementIndexes::resized(const ClusterSnapshot& s, int node) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& entry : entries_) {
    if (entry.index) entry.index->resized(s, node);
  }
}

}  // namespace tide::sched
