#include "host/agent/health_monitor.h"

#include <algorithm>

namespace tide::agent {
namespace {

constexpr double kStartingIntervalSeconds = 0.5;

std::chrono::milliseconds probeInterval(const model::HealthCheck& check, bool healthy) {
  const double seconds = healthy ? check.interval_seconds : std::min(check.interval_seconds, kStartingIntervalSeconds);
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace

HealthMonitor::HealthMonitor(const Clock& clock, size_t probe_threads) : clock_(clock), pool_(probe_threads) {}

HealthMonitor::~HealthMonitor() { stop(); }

void HealthMonitor::pump(const std::vector<ProbeSubject>& subjects) {
  std::lock_guard<std::mutex> lock(mu_);
  const TimePoint now = clock_.now();
  std::map<int64_t, Watch*> by_key;
  for (auto& [id, watch] : watches_) by_key[watch.key] = &watch;
  for (const auto& [key, result] : pool_.collect()) {
    auto it = by_key.find(key);
    if (it == by_key.end()) continue;  // its instance was forgotten while the probe ran
    Watch& watch = *it->second;
    watch.tracker.record(result);
    watch.next_probe = now + probeInterval(watch.check, watch.tracker.healthy());
  }

  std::map<std::string, Watch> kept;
  for (const ProbeSubject& subject : subjects) {
    auto it = watches_.find(subject.id);
    if (it != watches_.end() && it->second.handle == subject.handle) {
      kept.emplace(subject.id, std::move(it->second));
    } else {
      kept.emplace(subject.id, Watch{next_key_++, subject.handle, subject.check, drivers::HealthTracker(subject.check), now});
    }
    Watch& watch = kept.at(subject.id);
    if (watch.next_probe <= now && !pool_.inFlight(watch.key)) {
      // While a probe is in flight nothing else is submitted; its result sets the next time.
      if (pool_.submit(watch.key, drivers::ProbeJob{watch.check, subject.target, {}, ""}))
        watch.next_probe = TimePoint::max();
    }
  }
  watches_ = std::move(kept);
}

std::optional<bool> HealthMonitor::healthy(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = watches_.find(id);
  if (it == watches_.end()) return std::nullopt;
  return it->second.tracker.healthy();
}

void HealthMonitor::stop() { pool_.stop(); }

}  // namespace tide::agent
