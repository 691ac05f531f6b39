#include "host/sched/scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "host/sched/placement_index.h"
#include "host/sched/plan_demand.h"

namespace tide::sched {
namespace {

// What a placement's reasons call a node that takes nothing for its state: its record's state,
// or UNREACHABLE, which is no state of the record (the ledger's node stays ALLOCATED) but the
// engine's word for a node whose agent went quiet.
std::string stateWord(bool unreachable, const model::Node& node) {
  return unreachable ? "UNREACHABLE" : model::toString(node.state);
}

// In filter order: a node is counted under the first one it fails.
enum class Filter : uint8_t { kNone, kExcluded, kState, kCluster, kCapability, kMaxPerNode, kCores, kMemory, kVolume };

struct Rejection {
  Filter filter = Filter::kNone;
  int detail = 0;  // kCapability: the rule; kVolume: the volume request
};

// What one place() call changes about a node as it goes.
struct NodeState {
  double cores = 0;
  double memory = 0;
  int count = 0;  // instances of the plan
  bool excluded = false;
  bool avoid = false;
};

struct Candidate {
  int node = 0;
  bool avoid = false;
  double score = 0;
};

struct DomainCandidate {
  int domain = 0;
  int count = 0;  // instances of the plan in the domain
  Candidate best;
};

std::string amount(double value) {
  std::ostringstream out;
  out.precision(10);
  out << value;
  return out.str();
}

constexpr double kResizeTolerance = 1e-9;  // the ledger's tolerance when it checks a reservation

std::string size(const model::Resources& r) {
  return amount(r.cores) + " cores / " + amount(r.memory_gib) + " GiB";
}

std::string joinNames(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out + "]";
}

}  // namespace

// The full computation over every node: the batch path, the first placement of a plan
// and options (before placement_index.h keeps an index for them), and the explanation when
// nothing fits. Works on a copy of everything a placement changes; lives for one call.
class PlacementRun {
 public:
  PlacementRun(const ClusterSnapshot& snapshot, const model::Plan& plan, const PlanDemand& demand,
               const PlacementOptions& options);

  Result<std::vector<Placement>> run(int count);

 private:
  Result<std::vector<Placement>> runOne();
  Rejection rejection(int node);
  double score(int node) const;
  Candidate candidate(int node) const { return {node, state_[node].avoid, score(node)}; }
  bool worse(const Candidate& a, const Candidate& b) const;
  Placement apply(int node);
  std::string failure(size_t placed, int count);
  // The first volume request asking for the same class and capacity as `request`, so
  // that identical requests count as one reason.
  int firstAlike(int request) const;
  std::string describe(Filter filter, int detail, const std::string& subject, int nodes) const;

  const ClusterSnapshot& s_;
  const model::Plan& plan_;
  const PlanDemand& demand_;
  const PlacementOptions& options_;
  std::vector<const model::PersistentVolume*> volumes_;  // the plan's, in request order
  std::vector<NodeState> state_;                         // by node
  std::vector<int> domain_count_;                        // by domain
  // Free capacity per local volume: the snapshot's, or (for batches) a copy updated as
  // instances are placed.
  const double* volume_free_ = nullptr;
  std::vector<double> volume_free_copy_;
  PlanDemand::VolumeFit fit_;
};

PlacementRun::PlacementRun(const ClusterSnapshot& snapshot, const model::Plan& plan, const PlanDemand& demand,
                           const PlacementOptions& options)
    : s_(snapshot), plan_(plan), demand_(demand), options_(options) {
  for (const auto& application : plan_.applications) {
    for (const auto& volume : application.persistent_volumes) volumes_.push_back(&volume);
  }
  volume_free_ = s_.volume_free_.data();

  const size_t nodes = s_.nodes_.size();
  state_.resize(nodes);
  for (size_t i = 0; i < nodes; ++i) {
    state_[i].cores = s_.nodes_[i].remaining_cores;
    state_[i].memory = s_.nodes_[i].remaining_memory;
  }
  domain_count_.assign(s_.domains_.size(), 0);
  if (auto usage = s_.plans_.find(plan_.name); usage != s_.plans_.end()) {
    for (const auto& [node, n] : usage->second.per_node) state_[node].count = n;
    for (const auto& [domain, n] : usage->second.per_domain) domain_count_[domain] = n;
  }
  for (const auto& name : options_.exclude_nodes) {
    if (int node = s_.nodeIndex(name); node >= 0) state_[node].excluded = true;
  }
  for (const auto& meta : options_.avoid_nodes_of) {
    auto it = s_.nodes_of_meta_.find(meta);
    if (it == s_.nodes_of_meta_.end()) continue;
    for (int node : it->second) state_[node].avoid = true;
  }
}

Rejection PlacementRun::rejection(int node) {
  const auto& entry = s_.nodes_[node];
  const NodeState& state = state_[node];
  if (state.excluded) return {Filter::kExcluded};
  if (!entry.allocated) return {Filter::kState};
  if (!entry.cluster_active) return {Filter::kCluster};
  if (int rule = demand_.failedRule(s_, node); rule >= 0) return {Filter::kCapability, rule};
  if (state.count >= options_.max_per_node) return {Filter::kMaxPerNode};
  if (!demand_.coresFit(state.cores)) return {Filter::kCores};
  if (!demand_.memoryFits(state.memory)) return {Filter::kMemory};
  if (int failed = demand_.fitVolumes(s_, volume_free_, node, fit_); failed >= 0) return {Filter::kVolume, failed};
  return {};
}

double PlacementRun::score(int node) const { return demand_.score(s_, node, state_[node].cores, state_[node].memory); }

// The heaps below are max-heaps under this ordering: the best candidate is on top.
bool PlacementRun::worse(const Candidate& a, const Candidate& b) const {
  if (a.avoid != b.avoid) return a.avoid;
  if (a.score != b.score) return options_.bin_pack ? a.score > b.score : a.score < b.score;
  return a.node > b.node;
}

Placement PlacementRun::apply(int node) {
  const auto& entry = s_.nodes_[node];
  (void)demand_.fitVolumes(s_, volume_free_, node, fit_);  // fits: rejection() just passed on the same state
  if (!volume_free_copy_.empty()) {
    std::copy(fit_.free.begin(), fit_.free.end(), volume_free_copy_.begin() + entry.first_volume);
  }
  NodeState& state = state_[node];
  state.cores -= demand_.resources().cores;
  state.memory -= demand_.resources().memory_gib;
  ++state.count;
  ++domain_count_[entry.domain];
  return demand_.placement(s_, plan_, node, fit_);
}

Result<std::vector<Placement>> PlacementRun::run(int count) {
  if (count == 1) return runOne();
  if (!demand_.requests().empty()) {
    volume_free_copy_ = s_.volume_free_;
    volume_free_ = volume_free_copy_.data();
  }
  auto worse_node = [this](const Candidate& a, const Candidate& b) { return worse(a, b); };
  auto worse_domain = [this](const DomainCandidate& a, const DomainCandidate& b) {
    if (a.count != b.count) return a.count > b.count;
    return worse(a.best, b.best);
  };

  std::vector<std::vector<Candidate>> by_domain(s_.domains_.size());
  for (size_t node = 0; node < s_.nodes_.size(); ++node) {
    const int index = static_cast<int>(node);
    if (rejection(index).filter == Filter::kNone) by_domain[s_.nodes_[node].domain].push_back(candidate(index));
  }
  std::vector<DomainCandidate> domains;
  for (size_t d = 0; d < by_domain.size(); ++d) {
    if (by_domain[d].empty()) continue;
    std::make_heap(by_domain[d].begin(), by_domain[d].end(), worse_node);
    domains.push_back({static_cast<int>(d), domain_count_[d], by_domain[d].front()});
  }
  std::make_heap(domains.begin(), domains.end(), worse_domain);

  std::vector<Placement> placements;
  const size_t most = s_.nodes_.size() * static_cast<size_t>(options_.max_per_node);
  placements.reserve(std::min(static_cast<size_t>(count), most));
  while (placements.size() < static_cast<size_t>(count) && !domains.empty()) {
    std::pop_heap(domains.begin(), domains.end(), worse_domain);
    const int domain = domains.back().domain;
    domains.pop_back();
    auto& heap = by_domain[domain];
    std::pop_heap(heap.begin(), heap.end(), worse_node);
    const int node = heap.back().node;
    heap.pop_back();

    placements.push_back(apply(node));
    if (rejection(node).filter == Filter::kNone) {
      heap.push_back(candidate(node));
      std::push_heap(heap.begin(), heap.end(), worse_node);
    }
    if (!heap.empty()) {
      domains.push_back({domain, domain_count_[domain], heap.front()});
      std::push_heap(domains.begin(), domains.end(), worse_domain);
    }
  }
  if (placements.size() < static_cast<size_t>(count)) return Status::unprocessable(failure(placements.size(), count));
  return placements;
}

// The same choice as run() makes first, by one scan instead of building heaps.
Result<std::vector<Placement>> PlacementRun::runOne() {
  int best = -1;
  int best_count = 0;
  Candidate best_candidate;
  for (size_t node = 0; node < s_.nodes_.size(); ++node) {
    const int index = static_cast<int>(node);
    const int in_domain = domain_count_[s_.nodes_[node].domain];
    if (best >= 0 && in_domain > best_count) continue;  // loses on spread whatever else holds
    if (rejection(index).filter != Filter::kNone) continue;
    const Candidate c = candidate(index);
    if (best < 0 || in_domain < best_count || worse(best_candidate, c)) {
      best = index;
      best_count = in_domain;
      best_candidate = c;
    }
  }
  if (best < 0) return Status::unprocessable(failure(0, 1));
  return std::vector<Placement>{apply(best)};
}

std::string PlacementRun::failure(size_t placed, int count) {
  std::string message =
      std::to_string(placed) + " of " + std::to_string(count) + " instances of plan '" + plan_.name + "' fit";
  if (s_.nodes_.empty()) return message + "; there are no nodes";

  // (filter, detail, state or cluster name) -> nodes; the map keeps filter order for ties.
  std::map<std::tuple<Filter, int, std::string>, int> tally;
  for (size_t node = 0; node < s_.nodes_.size(); ++node) {
    Rejection r = rejection(static_cast<int>(node));
    if (r.filter == Filter::kNone) continue;
    if (r.filter == Filter::kVolume) r.detail = firstAlike(r.detail);
    const auto& record = s_.records_[node];
    const std::string subject = r.filter == Filter::kState     ? stateWord(s_.nodes_[node].unreachable, record)
                                : r.filter == Filter::kCluster ? record.cluster
                                                               : std::string();
    ++tally[{r.filter, r.detail, subject}];
  }
  std::vector<std::pair<int, std::tuple<Filter, int, std::string>>> ranked;
  for (const auto& [key, nodes] : tally) ranked.emplace_back(nodes, key);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });

  message += "; of " + std::to_string(s_.nodes_.size()) + (s_.nodes_.size() == 1 ? " node" : " nodes");
  for (size_t i = 0; i < ranked.size(); ++i) {
    const auto& [filter, detail, subject] = ranked[i].second;
    message += (i ? "; " : ", ") + describe(filter, detail, subject, ranked[i].first);
  }
  return message;
}

int PlacementRun::firstAlike(int request) const {
  const model::PersistentVolume& wanted = *volumes_[request];
  for (int i = 0; i < request; ++i) {
    const model::PersistentVolume& other = *volumes_[i];
    if (other.storage_class == wanted.storage_class && other.capacity_gib == wanted.capacity_gib) return i;
  }
  return request;
}

std::string PlacementRun::describe(Filter filter, int detail, const std::string& subject, int nodes) const {
  const bool one = nodes == 1;
  const std::string n = std::to_string(nodes) + " ";
  const std::string is = one ? "is " : "are ";
  const std::string lack = one ? "lacks " : "lack ";
  switch (filter) {
    case Filter::kExcluded: return n + is + "excluded by the request";
    case Filter::kState: return n + is + subject;
    case Filter::kCluster: {
      auto it = s_.cluster_states_.find(subject);
      if (it == s_.cluster_states_.end()) return n + is + "in unknown cluster '" + subject + "'";
      return n + is + "in " + model::toString(it->second) + " cluster '" + subject + "'";
    }
    case Filter::kCapability: {
      const PlanDemand::Rule& rule = demand_.rules()[detail];
      const model::CapabilityMatch& match = plan_.matching_capabilities[detail];
      const std::string type = "capability type " + match.type;
      const std::string names = joinNames(match.names);
      if (match.comparator == "NOT_IN") return n + (one ? "has " : "have ") + type + " in " + names + " (NOT_IN)";
      if (match.comparator == "EQ" && match.names.size() == 1) return n + lack + type + " = " + match.names[0];
      if (match.comparator == "IN" || match.comparator == "EQ") return n + lack + type + " in " + names;
      const std::string op = match.comparator == "GTE" ? " ≥ " : " ≤ ";
      if (rule.bound.empty()) {
        return n + lack + type + op + names + " (none of them is a known " + match.type + " capability)";
      }
      return n + lack + type + op + rule.bound;
    }
    case Filter::kMaxPerNode:
      return n + "already " + (one ? "runs " : "run ") + std::to_string(options_.max_per_node) + " instance" +
             (options_.max_per_node == 1 ? "" : "s") + " of the plan (max_per_node)";
    case Filter::kCores: return n + lack + amount(demand_.resources().cores) + " free cores";
    case Filter::kMemory: return n + lack + amount(demand_.resources().memory_gib) + " GiB free memory";
    case Filter::kVolume: {
      const model::PersistentVolume& volume = *volumes_[detail];
      return n + lack + "a " + volume.storage_class + " volume with " + amount(volume.capacity_gib) + " GiB free";
    }
    case Filter::kNone: break;
  }
  return n + "rejected";
}

Result<std::vector<Placement>> Scheduler::place(const model::Plan& plan, int count,
                                                const PlacementOptions& options) const {
  if (count < 0) return Status::invalidArgument("instance count must not be negative", {{"count", "< 0", ""}});
  if (options.max_per_node < 1) {
    return Status::invalidArgument("max_per_node must be at least 1", {{"max_per_node", "< 1", ""}});
  }
  if (count == 1) {
    if (auto placed = snapshot_.indexes().placeOne(snapshot_, plan, options)) {
      return std::vector<Placement>{std::move(*placed)};
    }
  }
  TIDE_ASSIGN_OR_RETURN(PlanDemand demand, PlanDemand::resolve(snapshot_, plan));
  if (count == 0) return std::vector<Placement>{};
  return PlacementRun(snapshot_, plan, demand, options).run(count);
}

model::Resources instanceResources(const model::Plan& plan) {
  model::Resources out;
  for (const auto& application : plan.applications) {
    out.cores += application.resources.cores;
    out.memory_gib += application.resources.memory_gib;
  }
  return out;
}

bool sameResources(const model::Resources& a, const model::Resources& b) {
  return std::abs(a.cores - b.cores) <= kResizeTolerance && std::abs(a.memory_gib - b.memory_gib) <= kResizeTolerance;
}

Status Scheduler::checkResize(const std::string& node_name, const model::Resources& from,
                              const model::Resources& to) const {
  const model::Node* node = snapshot_.findNode(node_name);
  if (node == nullptr) return Status::notFound("node '" + node_name + "' is not in the scheduling snapshot");
  const double lack_cores = to.cores - from.cores - node->remaining.cores;
  const double lack_memory = to.memory_gib - from.memory_gib - node->remaining.memory_gib;
  if (lack_cores <= kResizeTolerance && lack_memory <= kResizeTolerance) return Status::ok();
  std::string lacks;
  if (lack_cores > kResizeTolerance) lacks = amount(lack_cores) + " cores";
  if (lack_memory > kResizeTolerance) lacks += (lacks.empty() ? "" : " and ") + amount(lack_memory) + " GiB of memory";
  return Status(Code::kUnprocessable, "node '" + node_name + "' cannot hold the instance at " + size(to) +
                                          " instead of " + size(from) + ": it lacks " + lacks + " (" +
                                          size(node->remaining) + " left)");
}

std::vector<std::string> Scheduler::chooseScaleDown(const std::vector<InstanceFact>& instances, int count) const {
  if (count <= 0 || instances.empty()) return {};

  std::unordered_map<std::string, int> domain_index;
  std::vector<int> remaining;  // instances left per domain
  std::vector<int> domain_of;  // per instance
  for (const auto& fact : instances) {
    std::string domain = fact.update_domain;
    if (domain.empty()) {
      if (const model::Node* node = snapshot_.findNode(fact.node)) domain = node->update_domain;
    }
    auto [it, inserted] = domain_index.try_emplace(domain, static_cast<int>(remaining.size()));
    if (inserted) remaining.push_back(0);
    ++remaining[it->second];
    domain_of.push_back(it->second);
  }
  // Within a domain: newest first, then by name.
  auto before = [&](int a, int b) {
    if (instances[a].created_at != instances[b].created_at) return instances[a].created_at > instances[b].created_at;
    return instances[a].meta_instance < instances[b].meta_instance;
  };

  const size_t wanted = std::min(static_cast<size_t>(count), instances.size());
  std::vector<std::string> chosen;
  chosen.reserve(wanted);
  for (bool healthy : {false, true}) {
    // queues[d]: this round's instances in domain d, in removal order; next[d] its head.
    std::vector<std::vector<int>> queues(remaining.size());
    for (size_t i = 0; i < instances.size(); ++i) {
      if (instances[i].healthy == healthy) queues[domain_of[i]].push_back(static_cast<int>(i));
    }
    for (auto& queue : queues) std::sort(queue.begin(), queue.end(), before);
    std::vector<size_t> next(queues.size(), 0);
    while (chosen.size() < wanted) {
      int pick = -1;
      for (size_t d = 0; d < queues.size(); ++d) {
        if (next[d] == queues[d].size()) continue;
        if (pick < 0 || remaining[d] > remaining[pick] ||
            (remaining[d] == remaining[pick] && before(queues[d][next[d]], queues[pick][next[pick]]))) {
          pick = static_cast<int>(d);
        }
      }
      if (pick < 0) break;
      chosen.push_back(instances[queues[pick][next[pick]++]].meta_instance);
      --remaining[pick];
    }
  }
  return chosen;
}

}  // namespace tide::sched
