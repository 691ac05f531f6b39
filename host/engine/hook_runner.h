#pragma once
// Runtime hooks on the host's side (docs/architecture.md#runtime-hooks).
//
// A HookRunner owns two HookEngines (host/lua/hook/hook_engine.h):
// - one on its own thread, which tails the ledger's events from the newest at start() and
//   notifies the hooks that cannot block anything:
//     operation.state reaching SUCCEEDED/FAILED/REJECTED/CANCELLED  → operation.after
//     runtime_instance.state                                        → instance.state
//     deployment.state                                              → deployment.state
//     deployment.route (appended by the deployment controller)      → route
// - one behind a mutex for the executor's workers: before() runs operation.before.
// A hook that fails is recorded as a `hook.failed` event {hook, event, error, error_class}
// (subject "hook/<name>"; an operation.before failure also says `failed_open`: true when
// the hook's fail_open let the operation go on, false when the failure vetoed it), at most
// once per failure_repeat_window for the same hook, event, error and failed_open and at
// most kMaxFailureEventsPerWindow in all per window, so a broken hook cannot flood the
// ledger; the next one written says how many were left out (`suppressed`). Every failure,
// written or left out, counts in /metrics (tide_hook_failures_total{hook,event}).
// Hooks never stop the host. A failing operation.before holds its operation unless the hook
// declares fail_open (hook_engine.h); every other failure is recorded and nothing else happens.
//
// The arguments hooks receive are documented in docs/lua.md ("Runtime hooks").
//
// Thread-safety: start()/stop() from one thread; before() and processedSeq() from any.

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/clock.h"
#include "host/engine/engine_metrics.h"
#include "host/engine/executor.h"
#include "host/ledger/ledger.h"
#include "host/lua/hook/hook_engine.h"
#include "host/lua/runtime/script_set.h"

namespace tide::engine {

using Json = nlohmann::json;

struct HookRunnerOptions {
  lua::LuaLimits limits;
  std::filesystem::path output_dir;  // ctx.emit_file's directory, created on demand
  lua::LogSink log;                  // what hooks log; called from two threads, must be thread-safe
  // One wait for new events (real time: the ledger wakes it), which bounds how long stop()
  // takes; also the pause on the injected clock after the ledger could not be read.
  std::chrono::milliseconds poll{100};
  std::chrono::milliseconds failure_repeat_window{std::chrono::seconds(60)};
  std::string actor = "hooks";
};

inline constexpr int kMaxFailureEventsPerWindow = 30;

// The operation as operation.before and operation.after see it: id, type, state,
// meta_instance, plan, intent, message, requested_by, approved_by, attempt (the attempt
// about to start, or the last one), node ("" before placement).
Json operationHookArgument(const model::Operation& op);

// What the hooks hear about `event`: the hook event's name and its argument; nullopt for
// events no hook hears about. `operation` is the operation of an operation.state event
// when the ledger still has it. `previous` is the deployment a route event's rollout
// replaces, for route events whose data does not say.
struct HookNotification {
  std::string event;
  Json arg;
};
std::optional<HookNotification> hookNotificationFor(const model::Event& event,
                                                    const std::optional<model::Operation>& operation,
                                                    const Json& previous);

class HookRunner {
 public:
  // Everything must outlive the runner.
  HookRunner(ledger::Ledger& ledger, const lua::ScriptSetProvider& scripts, const Clock& clock, EngineMetrics& metrics,
             HookRunnerOptions options);
  ~HookRunner();  // stop()s

  // Starts the thread, hearing events after the newest one now. No-op when running.
  void start();
  // Joins the thread (within about `poll` plus one hook call). Events after the last one
  // handled are not heard by this runner.
  void stop();

  // operation.before for `op`, APPROVED and about to start; failures are recorded.
  HookGate before(const model::Operation& op);

  // The seq of the last event the thread handled (0 before it handled any).
  int64_t processedSeq() const { return processed_.load(); }

 private:
  void loop(int64_t after);
  void handle(const model::Event& event);
  void recordFailures(const std::vector<lua::HookFailure>& failures);
  Json previousDeployment(const model::Event& event);

  struct FailureSeen {
    std::chrono::steady_clock::time_point last;
    int64_t suppressed = 0;
  };

  ledger::Ledger& ledger_;
  const Clock& clock_;
  EngineMetrics& metrics_;
  const HookRunnerOptions options_;
  lua::HookEngine notifier_;  // the thread's

  std::mutex gate_mu_;
  lua::HookEngine gate_;  // REQUIRES: gate_mu_

  std::mutex failures_mu_;
  std::map<std::string, FailureSeen> failures_seen_;      // REQUIRES: failures_mu_
  std::chrono::steady_clock::time_point window_start_{};  // REQUIRES: failures_mu_
  int window_count_ = 0;                                  // REQUIRES: failures_mu_

  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> processed_{0};
};

}  // namespace tide::engine
