#pragma once
// The `sim` driver (docs/architecture.md#the-sim-driver): runtimes that exist only in memory,
// like Nomad's mock driver. No process, no port, no file: scale tests, benches and dry runs
// of a plan use it to drive the whole control loop over thousands of instances.
//
// - What happens to an instance is decided by its fate (simFate): a pure function of the
//   seed, the runtime id and how many times it was started, so a test or a bench knows in
//   advance which starts fail, which instances are unhealthy and when each one crashes.
// - Time is the injected Clock's: an instance reports STARTING for start_latency after
//   ensure(), then RUNNING (or EXITED with kStartFailureExitCode when its start fails); after
//   stop() it reports what it did before for stop_latency, then STOPPED. A running instance
//   whose fate holds a crash reports EXITED with kCrashExitCode from then on. No call sleeps.
// - Health is reported by the driver (RuntimeStatus::healthy, for RUNNING instances), so tide
//   never probes a sim instance.
// - Declared ports get fake host ports, counted per node from the port range (wrapping
//   round), kept across restarts. Volumes are accounted in memory, against the node's
//   declared local volumes when node_volumes is set.
// - The inventory is this driver's memory: one driver per cluster, so list() holds that
//   cluster's instances only. It dies with the driver: a host restarted over a sim cluster
//   finds its instances gone, unless `adopt` is set: then status() of an instance it does
//   not know answers as if it had run all along (RUNNING since now, its first start's fate
//   minus a start failure) and keeps it, as real runtimes outlive their host.
//
// Cluster driver_config (every key optional):
//   {"seed": 42, "start_latency_ms": 500, "stop_latency_ms": 200, "start_failure_rate": 0.01,
//    "crash_rate_per_hour": 0.1, "unhealthy_rate": 0.02, "adopt": false}
//
// Thread-safe: one mutex around the inventory. Instance calls are O(1) in the number of
// instances (volume calls O(log n)), but list() and statusAll(), which are O(their answer) and
// hold the mutex throughout (about 2 µs an entry).

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "drivers/driver.h"
#include "host/core/clock.h"

namespace tide::drivers {

inline constexpr int kStartFailureExitCode = 1;
inline constexpr int kCrashExitCode = 137;  // as if killed by SIGKILL (an OOM kill, say)
inline constexpr std::chrono::milliseconds kMaxSimLatency{std::chrono::hours(1)};
inline constexpr double kMaxCrashRatePerHour = 3600000;  // one crash a millisecond

struct SimOptions {
  uint64_t seed = 0;
  std::chrono::milliseconds start_latency{0};
  std::chrono::milliseconds stop_latency{0};
  double start_failure_rate = 0;   // share of starts that end EXITED instead of RUNNING
  double crash_rate_per_hour = 0;  // crashes of a running instance: Poisson, this many an hour
  double unhealthy_rate = 0;       // share of running instances that report unhealthy
  bool adopt = false;              // status() of an unknown instance: it runs (see above)
  int port_range_start = 30000;
  int port_range_end = 32767;
  NodeVolumesFn node_volumes;  // unset: volumes are not limited by capacity
};

// Validates a sim cluster's driver_config (null or an object). kInvalidArgument with one
// detail per bad field ("driver_config.seed", ...); unknown keys are errors too. The port
// range and node_volumes are left at their defaults for the caller to fill.
Result<SimOptions> parseSimOptions(const Json& driver_config);

// What happens to one start of one instance.
struct SimFate {
  bool start_fails = false;
  bool unhealthy = false;
  std::optional<std::chrono::milliseconds> crash_after;  // counted from RUNNING; empty: never
};

// The fate of the `start`-th start (1 for the first ensure(), 2 after it exited or stopped and
// was ensured again, ...) of runtime `id`. The same on every platform and run.
SimFate simFate(const SimOptions& options, std::string_view id, int start);

class SimDriver final : public Driver {
 public:
  // `clock` must outlive the driver.
  SimDriver(SimOptions options, const Clock& clock);

  // Idempotent by (node, id). kUnprocessable when the node's declared capacity of the
  // storage class left over by its other volumes is too small; kConflict when the id exists
  // with another storage class or capacity; kInvalidArgument for an empty id or node.
  Status ensureVolume(const VolumeSpec& volume) override;
  Status removeVolume(const VolumeRef& volume) override;  // idempotent

  // New: started (its volumes ensured, ports assigned). STARTING, RUNNING, or stopping but not
  // stopped yet: its status, the stop called off. EXITED or STOPPED: started again, the next
  // start's fate. kInvalidArgument for an empty id or node or a bad declared port.
  Result<RuntimeStatus> ensure(const RuntimeSpec& spec) override;
  // STOPPED after stop_latency. Idempotent; an unknown id is fine.
  Status stop(const RuntimeRef& ref) override;
  // Forgets the instance at once (no stop_latency). Its volumes stay. Idempotent.
  Status remove(const RuntimeRef& ref) override;
  // kNotFound for an unknown id.
  Result<RuntimeStatus> status(const RuntimeRef& ref) override;
  Result<std::vector<RuntimeAnswer>> statusAll(const std::vector<RuntimeRef>& refs) override;
  // Every instance, in no particular order.
  Result<std::vector<RuntimeRef>> list() override;
  // kUnprocessable: its instances run nothing, so there is no log.
  Result<LogSlice> readLogSlice(const std::string& runtime_id, const std::optional<LogCursor>& from,
                                size_t max_bytes) override;

  size_t instanceCount() const;

 private:
  struct Instance {
    std::string node;
    Json ports = Json::object();
    std::string handle;  // "sim:<id>:<start>"
    int starts = 0;
    SimFate fate;
    TimePoint started_at;
    std::optional<TimePoint> stop_at;  // when stop() was called
  };
  struct Volume {
    std::string storage_class;
    double capacity_gib = 0;
  };

  RuntimeStatus describe(const std::string& id, const Instance& instance, TimePoint now) const;
  using Instances = std::unordered_map<std::string, Instance>;
  // The instance `ref` names; with options_.adopt, one made up for an id not known yet.
  // REQUIRES: mu_ is held.
  Instances::iterator findOrAdopt(const RuntimeRef& ref, TimePoint now);
  void start(const std::string& id, Instance& instance, TimePoint now) const;  // REQUIRES: mu_
  Status ensureVolumeLocked(const VolumeSpec& volume, double declared);        // REQUIRES: mu_
  double declaredCapacity(const std::string& node, const std::string& storage_class) const;
  Result<Json> assignPorts(const RuntimeSpec& spec);  // REQUIRES: mu_

  const SimOptions options_;
  const Clock& clock_;
  mutable std::mutex mu_;
  Instances instances_;                                                 // GUARDED_BY(mu_), by runtime id
  std::map<std::pair<std::string, std::string>, Volume> volumes_;       // GUARDED_BY(mu_), by (node, id)
  std::map<std::pair<std::string, std::string>, double> volumes_used_;  // GUARDED_BY(mu_), (node, class) → GiB
  std::unordered_map<std::string, int> ports_given_;                    // GUARDED_BY(mu_), by node
};

}  // namespace tide::drivers
