#pragma once
// The observer (docs/architecture.md#observer): keeps the ledger's runtime instances matching what the
// drivers report.
//
// Every pass, for each RUNNING runtime instance nobody is operating on:
// - the driver's status: an instance that exited on its own (or vanished) becomes FAILED
//   (releasing its reservation), and the controller then asks for a RESTART;
// - the plan's health check, once per its interval, through a HealthTracker with the
//   check's thresholds: changes of `healthy` (and ready_since) are written.
// And the driver inventories are compared with the ledger: objects the ledger does not
// know are orphans, removed after a grace period (with an event). When more RUNNING
// instances are missing from their driver than the discrepancy threshold allows, the
// observer marks nothing FAILED, raises an alarm event and reports `halted()`: the engine
// stops executing until the disagreement is gone (refuse rather than "repair").
//
// Thread-safety: none; the control loop's thread owns it.

#include <chrono>
#include <map>
#include <set>
#include <string>

#include "host/core/clock.h"
#include "host/engine/driver_set.h"
#include "host/engine/engine_metrics.h"
#include "host/engine/health_probe.h"
#include "host/engine/world.h"
#include "host/ledger/ledger.h"

namespace tide::engine {

struct ObserverOptions {
  std::string actor = "observer";
  std::chrono::seconds orphan_grace{60};
  // More than this many RUNNING instances missing from their driver in one pass halts
  // execution instead of failing them all.
  int discrepancy_threshold = 5;
  size_t max_probes_per_pass = 64;
};

class Observer {
 public:
  // Everything must outlive the observer.
  Observer(ledger::Ledger& ledger, DriverSet& drivers, const Clock& clock, EngineMetrics& metrics,
           ObserverOptions options);

  // `busy` are meta instances an operation is working on right now (left alone).
  // Returns how many ledger changes it made.
  int pass(const World& world, const std::set<std::string>& busy);

  bool halted() const { return halted_; }

 private:
  struct Probe {
    HealthTracker tracker;
    TimePoint next;
  };
  int observe(const World& world, const InstanceView& view, const model::RuntimeInstance& r,
              std::map<std::string, std::set<std::string>>& inventories, int& missing);
  int probe(const World& world, const model::RuntimeInstance& r);
  int collectOrphans(const World& world, const std::map<std::string, std::set<std::string>>& inventories);

  ledger::Ledger& ledger_;
  DriverSet& drivers_;
  const Clock& clock_;
  EngineMetrics& metrics_;
  ObserverOptions options_;
  std::map<int64_t, Probe> probes_;                       // by runtime instance id
  std::map<std::string, TimePoint> orphans_seen_;         // "cluster/id" → first seen
  bool halted_ = false;
};

}  // namespace tide::engine
