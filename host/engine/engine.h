#pragma once
// The control loop (docs/architecture.md#the-control-loop): one thread runs passes — deployment controller, approval,
// dispatch to the executor, observer — every `interval`, or at once when the ledger
// changes (a new deployment, an approval) or an operation attempt ends. Nothing depends
// on remembering an event: every pass starts from what the ledger committed.
//
// The picture a pass works on is loaded from the ledger once and then refreshed from the
// ledger's change feed (World::refresh): a pass costs what changed, not the fleet's size.
// The controller's and approval stage's writes of one pass are group-committed
// (ledger::Ledger::Batch).
//
// A halt in the ledger (ledger::AuditRecords::controlHalt, written by the observer on a large
// discrepancy) stops every stage: a halted pass writes nothing at all, and dispatches
// nothing; attempts already running finish. The engine learns of a halt, and of its end
// (an admin's resume through the API), from the ledger's change feed.
//
// Crash safety comes from the ledger, not from this class: operations left RUNNING by a
// host that died are dispatched again on the first pass and resume from their recorded
// steps (executor.h); reservations are rows; processes are re-adopted by the drivers.
//
// Every wait is on the injected Clock: with a FakeClock the loop's next pass comes when a
// test moves the clock (or pokes the engine), and new ledger events are looked for every
// 25 ms of the clock's time. stop() and poke() wake the loop (Clock::wake) at once.
//
// Thread-safety: start()/stop()/runPass() from one thread; metrics() and poke() from any.

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "host/core/clock.h"
#include "host/engine/approval.h"
#include "host/engine/controller.h"
#include "host/engine/driver_set.h"
#include "host/engine/engine_metrics.h"
#include "host/engine/executor.h"
#include "host/engine/hook_runner.h"
#include "host/engine/node_liveness.h"
#include "host/engine/observer.h"
#include "host/engine/traffic_controller.h"
#include "host/ledger/ledger.h"
#include "host/lua/policy/policy_engine.h"
#include "host/lua/runtime/script_set.h"
#include "host/lua/strategy/strategy_engine.h"

namespace tide::engine {

struct EngineOptions {
  std::chrono::milliseconds interval{1000};    // between passes when nothing happens
  std::chrono::milliseconds min_interval{50};  // between passes however busy the ledger is
  int chunk = 16;                              // operations dispatched per pass at most
  double rate_per_second = 20;                 // operations started per second, globally
  ExecutorOptions executor;
  ObserverOptions observer;
  ApprovalOptions approval;
  ControllerOptions controller;
  LivenessOptions liveness;  // replace_after, max_unreachable_share, partition_window
  lua::LuaLimits lua_limits;
  lua::Outcome default_outcome = lua::Outcome::kPendingApproval;
  std::filesystem::path hooks_output_dir;  // runtime hooks' ctx.emit_file; tide serve: <data_dir>/hooks
  lua::LogSink hook_log;                   // what hooks log; must be thread-safe; empty: discarded
  // What the strategies' analyses may ask through ctx.metric (host config analysis.providers).
  model::MetricProviders metric_providers;
  MetricFetcherOptions metric_fetcher;
  // The traffic router (docs/architecture.md#traffic); null: no plan's traffic is served and
  // route(...) completes at once. Must outlive the engine.
  drivers::traffic::Router* router = nullptr;
};

// What one pass did, for tests and logs.
struct PassReport {
  int controller_changes = 0;
  int approval_changes = 0;
  int dispatched = 0;
  int observer_changes = 0;
  int traffic_changes = 0;
  bool halted = false;  // the control loop is halted: no stage ran
  std::string error;    // the ledger could not be read
  int total() const { return controller_changes + approval_changes + dispatched + observer_changes + traffic_changes; }
};

class Engine {
 public:
  // Everything must outlive the engine.
  Engine(ledger::Ledger& ledger, const lua::ScriptSetProvider& scripts, DriverSet& drivers, const Clock& clock,
         EngineOptions options);
  ~Engine();  // stop()s

  void start();
  void stop();

  // One pass on the calling thread (the loop's own thread must not be running).
  PassReport runPass();
  // Passes until nothing changes, no stage has work left over for the next pass (a chunk
  // cut short) and no operation or health probe is in flight, at most
  // `max_passes`; for tests and tools. Returns the number of passes run.
  int settle(int max_passes = 200);
  // Blocks until the health probes the observer started have finished; the next pass
  // records them. For tests and tools.
  void waitForProbes() { observer_.waitForProbes(); }

  Executor& executor() { return executor_; }
  TrafficController& traffic() { return traffic_; }
  EngineMetrics& metrics() { return metrics_; }
  // Whether the control loop is halted, as of the last pass.
  bool halted() const { return halted_.load(); }
  // Wakes the loop for a pass now.
  void poke();

 private:
  void loop();
  int dispatch(const World& world);
  // Re-reads the halt from the ledger when the change feed touched it (or cannot tell);
  // false when the ledger could not be read.
  bool refreshHalt(PassReport& report);
  // Crash recovery (docs/architecture.md#crash-recovery), once, before the first pass: ends
  // the operations left RUNNING on an instance already DELETED, which the world leaves out
  // and so nothing would ever finish. A DELETE there SUCCEEDED (its instance is marked
  // DELETED only after every runtime and volume is gone); anything else FAILED. False when
  // the ledger could not be read or written.
  bool finishOperationsOfDeletedInstances(PassReport& report);

  ledger::Ledger& ledger_;
  const Clock& clock_;
  EngineOptions options_;
  EngineMetrics metrics_;
  WorldFeed feed_;              // subscribed before the first load, so no change is missed
  std::optional<World> world_;  // loop thread only; kept between passes, refreshed from feed_
  lua::PolicyEngine policies_;
  lua::StrategyEngine strategies_;
  MetricFetcher metrics_fetcher_;  // before controller_, which asks it
  TrafficController traffic_;      // before controller_ and executor_, which ask it
  DeploymentController controller_;
  ApprovalStage approval_;
  HookRunner hooks_;  // before executor_, whose gate it is
  Executor executor_;
  Observer observer_;
  NodeLiveness liveness_;

  int halt_subscription_ = 0;
  std::atomic<bool> halt_changed_{true};  // set by the change feed; the halt is read at the first pass
  std::atomic<bool> halted_{false};
  std::optional<model::ControlHalt> halt_;  // loop thread only: the halt in force, as last read
  bool recovered_ = false;                  // loop thread only: finishOperationsOfDeletedInstances ran

  std::thread thread_;
  std::atomic<bool> poked_{false};
  std::atomic<bool> stopping_{false};
  double tokens_ = 0;  // rate limiter bucket (loop thread only)
  std::chrono::steady_clock::time_point refilled_ = std::chrono::steady_clock::now();
};

}  // namespace tide::engine
