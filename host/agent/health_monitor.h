#pragma once
// A node agent's health checks (docs/agents.md#the-protocol): the agent probes its RUNNING
// instances on its own machine and reports the verdict, since the host may not reach them.
// Each instance is probed at its check's interval (at most every 0.5 s until it first turns
// healthy, as the host's executor does while an instance starts), one probe of it at a time;
// the verdict follows the check's thresholds (drivers::HealthTracker), unhealthy until it passes.
//
// Probes run on a ProbePool: pump() submits what is due and takes what finished, and never
// waits for a probe, so a slow check delays only its own verdict.
//
// Thread-safety: pump() and stop() from one thread at a time; healthy() from any thread.

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "drivers/health/health_probe.h"
#include "drivers/health/probe_pool.h"
#include "host/core/clock.h"

namespace tide::agent {

// A RUNNING instance whose desired entry has a health check.
struct ProbeSubject {
  std::string id;
  std::string handle;  // a new handle (the instance was started again) starts the verdict over
  model::HealthCheck check;
  drivers::ProbeTarget target;
};

class HealthMonitor {
 public:
  HealthMonitor(const Clock& clock, size_t probe_threads);
  ~HealthMonitor();  // stop()s
  HealthMonitor(const HealthMonitor&) = delete;
  HealthMonitor& operator=(const HealthMonitor&) = delete;

  // Watches exactly `subjects` from now on (an instance no longer listed is forgotten, with
  // its verdict), records the probes that finished and submits those that are due.
  void pump(const std::vector<ProbeSubject>& subjects);
  // The verdict on `id`: nullopt when it is not watched, false until its probes pass it.
  std::optional<bool> healthy(const std::string& id) const;
  // Cancels the probes in flight (an exec probe's process group is killed) and waits for them.
  void stop();

 private:
  struct Watch {
    int64_t key = 0;  // the probe pool's key for this instance
    std::string handle;
    model::HealthCheck check;
    drivers::HealthTracker tracker;
    TimePoint next_probe{};
  };

  const Clock& clock_;
  drivers::ProbePool pool_;
  int64_t next_key_ = 1;
  mutable std::mutex mu_;
  std::map<std::string, Watch> watches_;  // GUARDED_BY(mu_), by runtime id
};

}  // namespace tide::agent
