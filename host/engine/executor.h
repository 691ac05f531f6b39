#pragma once
// The executor (docs/architecture.md#the-control-loop): runs APPROVED operations through the drivers on a bounded
// pool of worker threads.
//
// Each operation type is a sequence of idempotent steps driven by what the ledger says
// has happened (runtime instance states, the operation's target), so an operation that
// was RUNNING when the host died is simply run again after restart and picks up where it
// stopped, without starting anything twice:
//   CREATE    ensure volumes → ensure instance → RUNNING → healthy (by the plan's health
//             check, or by the driver's word when its status reports health)
//   UPDATE    in place: stop and remove the old process → new coordinates → start → healthy;
//             the meta instance then belongs to the operation's deployment
//   RELOCATE  make-before-break: start the passive instance reserved on another node, wait
//             healthy, make it active, then stop and remove the old one and its volumes;
//             if the new one never gets healthy it is removed and the old one stays
//   STOP      stop and remove the active instance (TERMINATED: resources released);
//             the meta instance becomes STOPPED; volumes are kept
//   RESTART   STOPPED meta instance: start the instance reserved at approval; running:
//             stop and start it in place
//   DELETE    stop and remove every instance, then their volumes; the meta instance is DELETED
//
// An attempt that fails with a transient error (kUnavailable, kDeadlineExceeded,
// kResourceExhausted, kInternal) goes back to APPROVED with next_attempt_at set by
// exponential backoff with jitter, until max_attempts; any other error, or the last
// attempt, fails the operation and cleans up what it started.
//
// Workers wait on the injected clock (driver polls, health-probe intervals), and stop()
// wakes them and cancels their health probes, so it waits out neither a poll nor a probe.
//
// Thread-safety: all public methods are thread-safe.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

#include "drivers/health/health_probe.h"
#include "host/core/clock.h"
#include "host/engine/driver_set.h"
#include "host/engine/engine_metrics.h"
#include "host/ledger/ledger.h"

namespace tide::engine {

// What the runtime hooks' operation.before said about an operation about to start
// (docs/architecture.md#runtime-hooks); see Executor::execute.
struct HookGate {
  enum class Kind { kProceed, kVeto, kDelay };
  Kind kind = Kind::kProceed;
  std::string hook;  // who vetoed or delayed
  std::string reason;
  std::chrono::seconds delay{0};  // kDelay
};

// The longest delay a hook may impose.
inline constexpr std::chrono::seconds kMaxHookDelay{std::chrono::hours(24)};

struct ExecutorOptions {
  int workers = 4;
  std::chrono::milliseconds operation_deadline{std::chrono::seconds(120)};  // per attempt
  int max_attempts = 5;
  std::chrono::milliseconds backoff_base{1000};
  std::chrono::milliseconds backoff_max{std::chrono::seconds(60)};
  std::chrono::milliseconds poll_interval{100};  // while waiting for a driver to report RUNNING
  std::string actor = "executor";
  // Asked before every attempt of an APPROVED operation starts, on the worker thread (so
  // it must be thread-safe); empty: nothing to ask. A veto keeps the operation APPROVED
  // with message "held by hook <name>: <reason>" and asks again after hook_veto_recheck
  // (an `operation.held` event {hook, reason, kind, until} is written when the message
  // changes); no attempt is counted. A delay does the same with "delayed by hook <name>:
  // <reason>" for the delay (at most kMaxHookDelay), and records target["hook_delay_done"]
  // = the attempt number, so when that attempt is dispatched again further delays are
  // ignored (vetoes are not).
  std::function<HookGate(const model::Operation&)> before_operation;
  std::chrono::milliseconds hook_veto_recheck{std::chrono::seconds(10)};
  // docs/architecture.md#traffic: asked before an APPROVED STOP, DELETE, UPDATE or RELOCATE
  // starts, on the worker thread (thread-safe); returns why the instance must drain first, or
  // nullopt to go on. While it waits the operation stays APPROVED with message "draining: <why>"
  // and is dispatched again after drain_recheck: no worker waits, no attempt is counted.
  std::function<std::optional<std::string>(const model::Operation&)> before_stop;
  std::chrono::milliseconds drain_recheck{std::chrono::milliseconds(500)};
};

class Executor {
 public:
  // `ledger`, `drivers`, `clock` and `metrics` must outlive the executor.
  Executor(ledger::Ledger& ledger, DriverSet& drivers, const Clock& clock, EngineMetrics& metrics,
           ExecutorOptions options);
  ~Executor();  // stop()s

  void start();
  // Asks running operations to stop at their next step and joins the workers; queued
  // operations stay APPROVED/RUNNING in the ledger for the next start.
  void stop();

  // Queues operation `op` unless it, or another operation of its meta instance, is queued or
  // running: false then. One worker per instance: an operation cancelled while it ran lets
  // the ledger accept the instance's next one before its worker has let go (an abort
  // cancels RUNNING operations), and the two must not work on one process at once.
  // Its meta instance is busy from this call on (before a worker takes it), so that the
  // observer, told busyInstances() after dispatch, never judges an instance an operation is
  // about to work on.
  bool submit(const model::Operation& op);
  // Queued or running here.
  bool busy(int64_t id) const;
  // The meta instances of queued or running operations.
  std::set<std::string> busyInstances() const;
  size_t inFlight() const;
  // Blocks until nothing is queued or running.
  void waitIdle();

  // Runs operation `id` (APPROVED or RUNNING) on the calling thread: one attempt, ending
  // in SUCCEEDED, FAILED or back in APPROVED for a retry.
  void execute(int64_t id);

  // Called after every attempt ends (on the worker thread), e.g. to wake the control loop.
  void onFinished(std::function<void()> fn);

 private:
  struct Attempt;
  void workerLoop();
  // Forgets operation `id` as queued or running. REQUIRES mu_ held.
  void releaseBusy(int64_t id);
  Status run(Attempt& a);
  Status runCreate(Attempt& a);
  Status runUpdate(Attempt& a);
  // Moves the instance into the deployment a controller's operation was asked for.
  Status adoptIntoDeployment(Attempt& a);
  Status runRelocate(Attempt& a);
  Status runStop(Attempt& a);
  Status runRestart(Attempt& a);
  Status runDelete(Attempt& a);
  void cleanUpAfterFailure(Attempt& a);
  // Asks options_.before_operation about `op` (APPROVED, about to start attempt
  // attempts + 1); true when the hooks hold it back and it was put off in the ledger.
  bool holdForHooks(const model::Operation& op);
  // Whether `op` waits for its instance to drain (ExecutorOptions::before_stop).
  bool holdForDrain(const model::Operation& op);

  // Brings `r` from PENDING/STARTING/STOPPED/RUNNING to RUNNING and healthy.
  Status startRuntime(Attempt& a, model::RuntimeInstance& r);
  // Polls `driver` every `interval` until it reports `r` healthy (kOk), it stops running
  // (kUnavailable) or the attempt ends (kDeadlineExceeded, kConflict when cancelled).
  // `status` is the driver's last RUNNING answer, carrying healthy.
  Status waitReportedHealthy(Attempt& a, const model::RuntimeInstance& r, drivers::Driver& driver,
                             const drivers::RuntimeRef& ref, drivers::RuntimeStatus status,
                             std::chrono::milliseconds interval);
  // Brings `r` to STOPPED (remove = false) or TERMINATED (remove = true, the driver forgets it).
  Status stopRuntime(Attempt& a, model::RuntimeInstance& r, bool remove);
  Status removeVolumes(Attempt& a, const model::RuntimeInstance& r);
  Result<model::RuntimeInstance> runtime(int64_t id);
  // The live runtime instance `op` reserved at approval; kUnprocessable when there is none.
  Result<model::RuntimeInstance> reservedRuntime(const model::Operation& op);
  // Both write with the generation `r` was read at (reading again when another writer moved
  // it) and leave in `r` what the ledger holds.
  Status setRuntimeState(model::RuntimeInstance& r, model::RuntimeState state, const std::string& message = "");
  Status updateRuntime(model::RuntimeInstance& r, const ledger::RuntimeUpdate& update);
  std::chrono::milliseconds backoff(int64_t attempts);

  ledger::Ledger& ledger_;
  DriverSet& drivers_;
  const Clock& clock_;
  EngineMetrics& metrics_;
  const ExecutorOptions options_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<int64_t> queue_;
  std::set<int64_t> busy_;                    // queued or running
  std::map<int64_t, std::string> busy_meta_;  // operation → meta instance
  std::map<std::string, int64_t> busy_op_;    // meta instance → its operation queued or running
  std::vector<std::thread> workers_;
  std::atomic<bool> stopping_{false};
  drivers::ProbeCancel probe_cancel_;  // cancelled by stop(): a worker in a health probe returns at once
  std::function<void()> on_finished_;
  std::mt19937_64 rng_{std::random_device{}()};  // REQUIRES: mu_ for use
};

}  // namespace tide::engine
