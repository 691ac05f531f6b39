#pragma once
// The observer (docs/architecture.md#observer): keeps the ledger's runtime instances matching what the
// drivers report.
//
// Every pass, for each RUNNING runtime instance nobody is operating on:
// - the driver's status: an instance that exited on its own (or vanished) becomes FAILED
//   (releasing its reservation), and the controller then asks for a RESTART; once FAILED it
//   is removed from its driver (which keeps its log), so no driver holds on to it;
// - its health: the driver's word when its status carries one (RuntimeStatus::healthy),
//   else the plan's health check, once per its interval, through a HealthTracker with the
//   check's thresholds, on a bounded pool of probe threads: changes of `healthy` (and
//   ready_since) are written. A pass only starts the probes that are due and records the
//   ones that finished since the last pass: it never waits for a probe, so a probe that
//   hangs up to its timeout delays that instance's verdict, not the control loop.
// And the driver inventories are compared with the ledger: objects the ledger does not
// know are orphans, removed after a grace period (with an event).
//
// A pass judges a slice of the fleet, at most `slice` instances in name order going on
// where the last pass stopped, so that its cost does not follow the fleet's size; a fleet
// no larger than a slice is judged whole every pass. Each driver is asked in one
// statusAll() for the slice's instances of its cluster, and for its inventory (one list())
// on the pass that starts a round over the fleet. When more RUNNING instances of a slice
// are missing from their driver than the discrepancy threshold allows, the observer marks
// nothing FAILED and halts the control loop in the ledger (ledger::AuditRecords::haltControlLoop,
// an `alarm.discrepancy` event): refuse rather than "repair". The halt holds, across
// restarts, until an admin resumes the loop; the engine runs no stage (this one included)
// while it does.
//
// Instances on a node the drivers cannot reach (docs/architecture.md#losing-a-node) are not
// judged at all: no status, no probe, no FAILED, no orphan removal there, and they count
// toward no discrepancy. Their health is unknown: not healthy, with the message "node <n>
// unreachable since <time>", until the node is back and their driver or check says again.
//
// Every write names the generation of the runtime instance the pass read: when an
// operation moved it since (the executor stopping it, for one), the ledger refuses the
// stale write, nothing is changed, and the next pass judges what the ledger then says.
//
// Thread-safety: none; the control loop's thread owns it.

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "drivers/health/health_probe.h"
#include "drivers/health/probe_pool.h"
#include "host/core/clock.h"
#include "host/engine/driver_set.h"
#include "host/engine/engine_metrics.h"
#include "host/engine/node_liveness.h"
#include "host/engine/world.h"
#include "host/ledger/ledger.h"

namespace tide::engine {

struct ObserverOptions {
  std::string actor = "observer";
  std::chrono::seconds orphan_grace{60};  // host config limits.orphan_grace_s
  // More than this many RUNNING instances missing from their driver in one pass halts
  // the control loop instead of failing them all (host config limits.discrepancy_threshold).
  int discrepancy_threshold = 5;
  size_t max_probes_per_pass = 64;
  // Instances judged per pass at most: 100,000 instances take 50 passes a round.
  size_t slice = 2000;
  size_t probe_threads = 8;  // health probes run on at most this many threads
};

class Observer {
 public:
  // Everything must outlive the observer.
  Observer(ledger::Ledger& ledger, DriverSet& drivers, const Clock& clock, EngineMetrics& metrics,
           ObserverOptions options);

  // `busy` are meta instances an operation is working on right now (left alone), and
  // `unreachable` the nodes whose instances are not judged. Returns how many ledger changes
  // it made (a halt it writes counts as one).
  int pass(const World& world, const std::set<std::string>& busy, const UnreachableNodes& unreachable);

  // An admin resumed the loop after a halt that named `instances`: their disagreement is
  // acknowledged, so until the end of the next round they are repaired (marked FAILED and
  // restarted) instead of counting toward the threshold again.
  void acknowledge(const std::set<std::string>& instances);

  // Cancels the health probes in flight (killing exec probes' process groups) and waits for
  // the probe threads; for the host's shutdown. A later pass starts probes again.
  void stop();
  // Blocks until the probes started have finished (the next pass records them); for tests
  // and tools.
  void waitForProbes();

 private:
  struct Probe {
    drivers::HealthTracker tracker;
    TimePoint next;  // due from then on: the check's interval after the last probe started
    std::string meta_instance;
  };
  // The instances a pass judges, in name order, and whether they start or end a round over
  // the fleet.
  struct Slice {
    std::vector<const InstanceView*> views;
    bool starts_round = false;
    bool ends_round = false;
  };
  // cluster → runtime id → the driver's reference, as listed: the node of an object the
  // ledger does not know comes from there (a node agent's cluster removes by node).
  using Inventories = std::map<std::string, std::map<std::string, drivers::RuntimeRef>>;
  // A runtime instance the ledger counts on that its driver no longer runs, and why.
  struct Gone {
    const InstanceView* view;
    model::RuntimeInstance runtime;
    std::string why;
  };
  // A runtime instance RUNNING by its driver's word too, and the health that driver
  // reported, if any.
  struct Running {
    const model::RuntimeInstance* runtime;
    std::optional<bool> reported_healthy;
    std::string message;  // the driver's
  };
  struct Observation {
    std::vector<Gone> gone;
    std::vector<Running> running;
    std::vector<const model::RuntimeInstance*> unknown;  // RUNNING on an unreachable node
  };

  // The inventories of the clusters that have nodes, without what runs on `unreachable`
  // nodes; a cluster whose driver cannot list is left out, and its instances are not judged
  // this pass.
  Inventories listInventories(const World& world, const UnreachableNodes& unreachable);
  Slice nextSlice(const World& world) const;
  // Compares each instance of the slice not `busy` on a cluster whose driver listed last
  // round with its driver's status, asked of each driver in one batch; those on
  // `unreachable` nodes are not asked about.
  Observation compareWithDrivers(const World& world, const Slice& slice, const std::set<std::string>& busy,
                                 const UnreachableNodes& unreachable);
  // True when too many instances are gone at once to trust the readings: then it has
  // halted the control loop (with the alarm) and nothing of this pass is written.
  bool haltOnDiscrepancy(const std::vector<Gone>& gone);
  int markGone(const std::vector<Gone>& gone);
  // Records the health drivers reported and the results of the probes that finished, and
  // starts the health probes that are due on the probe pool. Instances `busy` get no write.
  int probeHealth(const World& world, const Slice& slice, const std::vector<Running>& running,
                  const std::set<std::string>& busy);
  int recordProbeResults(const World& world, const std::set<std::string>& busy);
  // Writes `healthy` (and ready_since, message) of `r` when it changed.
  bool recordHealth(const model::RuntimeInstance& r, bool healthy, const std::string& message);
  // Marks the health of instances on unreachable nodes unknown, when not marked yet.
  int markHealthUnknown(const std::vector<const model::RuntimeInstance*>& unknown, const UnreachableNodes& unreachable);
  bool writeHealth(const model::RuntimeInstance& r, bool healthy, const std::string& message);
  int collectOrphans(const World& world, const Inventories& inventories);

  ledger::Ledger& ledger_;
  DriverSet& drivers_;
  const Clock& clock_;
  EngineMetrics& metrics_;
  ObserverOptions options_;
  std::map<int64_t, Probe> probes_;                // by runtime instance id
  std::map<std::string, TimePoint> orphans_seen_;  // "cluster/id" → first seen
  std::set<std::string> listed_clusters_;          // whose driver answered list() last round
  std::string judged_up_to_;                       // the last instance judged; "" at a round's start
  std::set<std::string> acknowledged_;             // meta instances a resume acknowledged missing
  drivers::ProbePool probe_pool_;
};

}  // namespace tide::engine
