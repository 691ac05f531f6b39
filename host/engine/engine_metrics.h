#pragma once
// What the control loop reports on /metrics (docs/api.md#metrics): reconcile pass
// durations, driver call latency and errors by call, operation attempts by type and outcome,
// hook and router failures, and the fleet's state as of the last pass (fleet_gauges.h:
// rollouts, desired and running instances, operations waiting for a person). Operation
// counts by type × state come from the ledger at render time (host/api/routes_system.cpp).
//
// Thread-safety: all methods may be called concurrently.

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "host/core/clock.h"
#include "host/engine/fleet_gauges.h"

namespace tide::engine {

class EngineMetrics {
 public:
  // `clock` (which must outlive this) dates the ages render() shows: how long a rollout has
  // been held, how long an operation has waited for approval.
  explicit EngineMetrics(const Clock& clock) : clock_(clock) {}

  void observePass(std::chrono::duration<double> elapsed);
  void observeDriverCall(const std::string& call, bool ok, std::chrono::duration<double> elapsed);
  // Runs `fn` (a driver call returning Status or Result<T>), observes it under `call`, and
  // returns what it returned.
  template <class Fn>
  auto timeDriverCall(const std::string& call, Fn&& fn) -> decltype(fn()) {
    const auto started = std::chrono::steady_clock::now();
    auto result = fn();
    observeDriverCall(call, result.isOk(), std::chrono::steady_clock::now() - started);
    return result;
  }
  void countAttempt(const std::string& type, const std::string& outcome);  // succeeded|retry|failed
  // The rows a pass refreshed its picture from (its dirty set).
  void observeDirty(size_t rows);
  // The nodes the last pass could not reach, and whether the partition alarm is in force
  // (docs/architecture.md#losing-a-node).
  void observeLiveness(size_t unreachable_nodes, bool partition_alarm);
  // The fleet as the last pass saw it; replaces what the pass before reported.
  void observeFleet(FleetGauges fleet);
  // A runtime hook's call failed (hook_runner.h); `hook` is the hook's name, "" for the host's
  // own failure to notify hooks.
  void countHookFailure(const std::string& hook, const std::string& event);
  // A call to the traffic router failed (traffic_controller.h): start, apply, or read (which
  // also counts a router that answers that it is down).
  void countRouterError(const std::string& call);

  // tide_reconcile_pass_duration_seconds, tide_reconcile_dirty_rows (last pass) and
  // tide_reconcile_dirty_rows_total, tide_driver_call_duration_seconds{call},
  // tide_driver_call_errors_total{call}, tide_operation_attempts_total{type,outcome},
  // tide_unreachable_nodes, tide_partition_alarm, tide_hook_failures_total{hook,event},
  // tide_router_errors_total{call}, and from the last observeFleet(): tide_rollouts{plan,state},
  // tide_rollout_held_seconds{plan}, tide_plan_desired_instances{plan},
  // tide_plan_running_instances{plan}, tide_operations_waiting_approval{plan} and
  // tide_operations_waiting_approval_oldest_seconds{plan}. Costs a walk over the plans.
  std::string render() const;

 private:
  static constexpr std::array<double, 12> kBuckets = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  struct Histogram {
    std::array<uint64_t, kBuckets.size()> buckets{};
    uint64_t count = 0;
    double sum = 0;
    void observe(double seconds);
  };

  const Clock& clock_;
  mutable std::mutex mu_;
  Histogram passes_;                                                  // REQUIRES: mu_
  std::map<std::string, Histogram> driver_calls_;                     // REQUIRES: mu_
  std::map<std::string, uint64_t> driver_errors_;                     // REQUIRES: mu_
  std::map<std::pair<std::string, std::string>, uint64_t> attempts_;  // REQUIRES: mu_
  uint64_t dirty_last_ = 0;                                           // REQUIRES: mu_
  uint64_t dirty_total_ = 0;                                          // REQUIRES: mu_
  size_t unreachable_nodes_ = 0;                                      // REQUIRES: mu_
  bool partition_alarm_ = false;                                      // REQUIRES: mu_
  FleetGauges fleet_;                                                 // REQUIRES: mu_
  std::map<std::pair<std::string, std::string>, uint64_t> hook_failures_;  // REQUIRES: mu_
  std::map<std::string, uint64_t> router_errors_;                          // REQUIRES: mu_
};

}  // namespace tide::engine
