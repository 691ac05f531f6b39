#include "host/engine/node_liveness.h"

#include <algorithm>
#include <string_view>
#include <vector>

namespace tide::engine {
namespace {

constexpr const char* kPartitionSubject = "partition";

std::string unreachablePrefix(const std::string& node) { return "node " + node + " unreachable since "; }

}  // namespace

std::set<std::string> UnreachableNodes::nodes() const {
  std::set<std::string> out;
  for (const auto& [node, at] : since) out.insert(node);
  return out;
}

std::string UnreachableNodes::healthMessage(const std::string& node) const {
  auto it = since.find(node);
  return unreachablePrefix(node) + (it == since.end() ? std::string("?") : formatTimestamp(it->second));
}

bool isUnreachableMessage(const std::string& message, const std::string& node) {
  // Asked of every running instance each pass: no allocation, and most messages are empty.
  std::string_view rest = message;
  for (std::string_view part :
       {std::string_view("node "), std::string_view(node), std::string_view(" unreachable since ")}) {
    if (rest.substr(0, part.size()) != part) return false;
    rest.remove_prefix(part.size());
  }
  return true;
}

Result<std::optional<model::Event>> latestPartitionAlarm(ledger::Ledger& ledger) {
  // Few: one pair per partition the fleet ever had.
  TIDE_ASSIGN_OR_RETURN(auto events, ledger::listAll(ledger.audit(), &ledger::AuditRecords::listEvents,
                                                     {{"subject", kPartitionSubject}}));
  if (events.empty() || events.back().kind != "alarm.partition") return std::optional<model::Event>();
  return std::optional<model::Event>(events.back());
}

NodeLiveness::NodeLiveness(ledger::Ledger& ledger, DriverSet& drivers, const Clock& clock, EngineMetrics& metrics,
                           LivenessOptions options)
    : ledger_(ledger), drivers_(drivers), clock_(clock), metrics_(metrics), options_(std::move(options)) {}

const UnreachableNodes& NodeLiveness::pass(const World& world) {
  std::map<std::string, TimePoint> now_lost;
  std::set<std::string> clusters;  // of the nodes lost
  for (const auto& [cluster, driver] : drivers_.built()) {
    for (const drivers::UnreachableNode& lost : driver->unreachableNodes()) {
      auto node = world.node_by_name.find(lost.node);
      if (node == world.node_by_name.end()) continue;
      now_lost.emplace(lost.node, lost.since);
      clusters.insert(node->second->cluster);
    }
  }
  for (const auto& [node, since] : now_lost) {
    if (lost_.contains(node)) continue;
    // Best effort: the event only reports what the engine already acts on (lost_ below).
    (void)ledger_.audit().appendEvent(
        "node.unreachable", "node/" + node,
        Json{{"since", formatTimestamp(since)},
             {"message", "its driver has not heard from it since " + formatTimestamp(since)}},
        options_.actor);
  }
  for (const auto& [node, since] : lost_.since) {
    if (now_lost.count(node)) continue;
    // Best effort: as above.
    (void)ledger_.audit().appendEvent("node.reachable", "node/" + node,
                                      Json{{"unreachable_since", formatTimestamp(since)}}, options_.actor);
  }
  lost_.since = std::move(now_lost);

  size_t nodes = 0;  // of the clusters that lost some
  for (const auto& n : world.nodes) nodes += clusters.count(n.cluster);
  const bool partition =
      nodes > 0 && static_cast<double>(lostTogether()) > options_.max_unreachable_share * static_cast<double>(nodes);
  raiseOrClearAlarm(partition);
  // An alarm the ledger could not be asked about, or not told of, holds replacement too.
  lost_.partition = partition || alarm_.value_or(true);

  lost_.to_replace.clear();
  if (!lost_.partition) {
    const TimePoint now = clock_.now();
    for (const auto& [node, since] : lost_.since) {
      if (now - since >= options_.replace_after) lost_.to_replace.insert(node);
    }
  }
  metrics_.observeLiveness(lost_.since.size(), lost_.partition);
  return lost_;
}

size_t NodeLiveness::lostTogether() const {
  std::vector<TimePoint> times;
  for (const auto& [node, since] : lost_.since) times.push_back(since);
  std::sort(times.begin(), times.end());
  size_t most = 0;
  size_t first = 0;
  for (size_t last = 0; last < times.size(); ++last) {
    while (times[last] - times[first] > options_.partition_window) ++first;
    most = std::max(most, last - first + 1);
  }
  return most;
}

void NodeLiveness::raiseOrClearAlarm(bool partition) {
  if (!alarm_) {
    auto latest = latestPartitionAlarm(ledger_);
    if (!latest.isOk()) return;  // asked again next pass; until then nothing is replaced
    alarm_ = latest->has_value();
  }
  if (partition == *alarm_) return;
  Json nodes = Json::array();
  for (const auto& [node, since] : lost_.since) nodes.push_back(node);
  const Status written =
      partition
          ? ledger_.audit().appendEvent(
                "alarm.partition", kPartitionSubject,
                Json{{"nodes", nodes},
                     {"message", std::to_string(nodes.size()) +
                                     " nodes are unreachable, most of them at once: a partition is not a fleet "
                                     "failure; nothing is replaced until they come back"}},
                options_.actor)
          : ledger_.audit().appendEvent("alarm.cleared", kPartitionSubject,
                                        Json{{"alarm", "alarm.partition"}, {"unreachable", nodes}}, options_.actor);
  if (written.isOk()) alarm_ = partition;
}

}  // namespace tide::engine
