#include "host/engine/engine.h"

#include <algorithm>

#include "host/core/memory.h"
#include "host/core/thread_guard.h"
#include "host/engine/loop_errors.h"

namespace tide::engine {
namespace {

// How often the waiting loop looks for new ledger events (nobody wakes it for those).
constexpr std::chrono::milliseconds kLedgerPollSlice{25};
// How often the loop gives freed memory back to the system (a walk over the free blocks).
constexpr std::chrono::seconds kReleaseMemoryEvery{10};

HookRunnerOptions hookOptions(const EngineOptions& options) {
  HookRunnerOptions out;
  out.limits = options.lua_limits;
  out.output_dir = options.hooks_output_dir;
  out.log = options.hook_log;
  return out;
}

// `options` with operation.before asked of `hooks`, unless the caller set its own gate.
ExecutorOptions withHookGate(ExecutorOptions options, HookRunner& hooks) {
  if (!options.before_operation) {
    options.before_operation = [&hooks](const model::Operation& op) { return hooks.before(op); };
  }
  return options;
}

// `options` asking `traffic` before an instance that serves traffic is stopped
// (docs/architecture.md#traffic), when the host has a router and the caller set no gate.
ExecutorOptions withDrainGate(ExecutorOptions options, TrafficController& traffic) {
  if (traffic.enabled() && !options.before_stop) {
    options.before_stop = [&traffic](const model::Operation& op) { return traffic.drainFor(op.meta_instance); };
  }
  return options;
}

}  // namespace

Engine::Engine(ledger::Ledger& ledger, const lua::ScriptSetProvider& scripts, DriverSet& drivers, const Clock& clock,
               EngineOptions options)
    : ledger_(ledger),
      clock_(clock),
      options_(std::move(options)),
      metrics_(clock),
      feed_(ledger),
      policies_(scripts, clock, lua::PolicyEngineOptions{options_.lua_limits, options_.default_outcome}),
      strategies_(scripts, clock, options_.lua_limits),
      metrics_fetcher_(options_.metric_providers, options_.metric_fetcher),
      traffic_(ledger, options_.router, clock, metrics_),
      controller_(ledger, strategies_, clock, options_.controller, &metrics_fetcher_,
                  options_.router != nullptr ? &traffic_ : nullptr),
      approval_(ledger, policies_, clock, options_.approval),
      hooks_(ledger, scripts, clock, metrics_, hookOptions(options_)),
      executor_(ledger, drivers, clock, metrics_, withDrainGate(withHookGate(options_.executor, hooks_), traffic_)),
      observer_(ledger, drivers, clock, metrics_, options_.observer),
      liveness_(ledger, drivers, clock, metrics_, options_.liveness) {
  executor_.onFinished([this] { poke(); });
  metrics_fetcher_.onAnswer([this] { poke(); });
  tokens_ = std::max(1.0, options_.rate_per_second);
  halt_subscription_ = ledger_.subscribe([this](const std::vector<ledger::RowChange>& changes) {
    for (const auto& change : changes) {
      if (change.table == "control_halt") halt_changed_ = true;
    }
  });
}

Engine::~Engine() {
  stop();
  ledger_.unsubscribe(halt_subscription_);
}

void Engine::start() {
  if (thread_.joinable()) return;
  stopping_ = false;
  hooks_.start();
  executor_.start();
  thread_ = std::thread([this] { loop(); });
}

void Engine::stop() {
  stopping_ = true;
  clock_.wake();
  if (thread_.joinable()) thread_.join();
  metrics_fetcher_.stop();
  observer_.stop();
  executor_.stop();
  hooks_.stop();
}

void Engine::poke() {
  poked_ = true;
  clock_.wake();
}

void Engine::loop() {
  const auto stopping = [this] { return stopping_.load(); };
  const auto woken = [this] { return stopping_.load() || poked_.load(); };
  int64_t seen = ledger_.audit().lastEventSeq();
  auto released = std::chrono::steady_clock::now();
  while (!stopping_) {
    const TimePoint started = clock_.now();
    runGuarded([this] { runPass(); },
               [this](const std::string& what) { reportLoopException(ledger_, "control loop pass", what); });
    // A pass's transients (the rollout snapshot of a large plan, a reloaded world) would
    // otherwise hold the resident size at their peak (host/core/memory.h).
    if (std::chrono::steady_clock::now() - released >= kReleaseMemoryEvery) {
      releaseFreeMemory();
      released = std::chrono::steady_clock::now();
    }
    // Wait until the interval passes, the ledger changes, or an attempt ends, but never
    // less than min_interval, so a busy ledger cannot spin the loop.
    clock_.sleepFor(options_.min_interval, stopping);
    const TimePoint deadline = started + options_.interval;
    while (!stopping_) {
      const TimePoint now = clock_.now();
      if (now >= deadline || now < started) break;  // a wall clock stepped back must not stretch the wait
      if (poked_.exchange(false)) break;
      const int64_t last = ledger_.audit().lastEventSeq();
      if (last > seen) {
        seen = last;
        break;
      }
      clock_.waitUntil(std::min(deadline, now + kLedgerPollSlice), woken);
    }
    seen = std::max(seen, ledger_.audit().lastEventSeq());
  }
}

PassReport Engine::runPass() {
  const auto t0 = std::chrono::steady_clock::now();
  PassReport report;
  // The picture as the ledger has it now: the approval stage and dispatch act on what the
  // controller just asked for, so it is brought up to date after each stage that wrote.
  auto refresh = [&] {
    Status updated = feed_.update(world_);
    if (!updated.isOk()) report.error = updated.toString();
    metrics_.observeDirty(feed_.lastDirty());
    return updated.isOk();
  };
  if (!refreshHalt(report)) return report;
  if (halted_) {
    report.halted = true;
    return report;
  }
  if (!recovered_ && !(recovered_ = finishOperationsOfDeletedInstances(report))) return report;
  if (!refresh()) return report;
  // docs/architecture.md#losing-a-node: every stage leaves the nodes it cannot reach alone.
  const UnreachableNodes& unreachable = liveness_.pass(*world_);
  {
    ledger::Ledger::Batch batch(ledger_);
    report.controller_changes = controller_.pass(*world_, unreachable);
  }
  if (report.controller_changes > 0 && !refresh()) return report;
  {
    ledger::Ledger::Batch batch(ledger_);
    report.approval_changes = approval_.pass(*world_, unreachable);
  }
  // A stage that stopped at its bound with work left: the next pass goes on at once.
  if (controller_.backlog() || approval_.backlog()) poked_ = true;
  if (report.approval_changes > 0 && !refresh()) return report;
  report.dispatched = dispatch(*world_);
  report.observer_changes = observer_.pass(*world_, executor_.busyInstances(), unreachable);
  // After the observer: instances that just became ready join their plan's backend now.
  if (traffic_.enabled()) {
    if (report.observer_changes > 0 && !refresh()) return report;
    report.traffic_changes = traffic_.pass(*world_);
  }
  metrics_.observeFleet(fleetGauges(*world_));
  metrics_.observePass(std::chrono::steady_clock::now() - t0);
  return report;
}

bool Engine::finishOperationsOfDeletedInstances(PassReport& report) {
  auto running = ledger::listAll(ledger_.operations(), &ledger::OperationRecords::listOperations,
                                 {{"state", model::toString(model::OperationState::kRunning)}});
  if (!running.isOk()) {
    report.error = running.status().toString();
    return false;
  }
  for (const model::Operation& op : *running) {
    auto meta = ledger_.instances().getMetaInstance(op.meta_instance);
    if (!meta.isOk()) {
      report.error = meta.status().toString();
      return false;
    }
    if (meta->state != model::MetaState::kDeleted) continue;
    const bool deleted = op.type == model::OperationType::kDelete;
    auto ended = ledger_.operations().setOperationState(
        op.meta.id, deleted ? model::OperationState::kSucceeded : model::OperationState::kFailed, std::nullopt,
        options_.executor.actor,
        deleted ? "its instance was deleted before the host restarted" : "its instance was deleted");
    if (!ended.isOk()) {
      report.error = ended.status().toString();
      return false;
    }
  }
  return true;
}

bool Engine::refreshHalt(PassReport& report) {
  if (!halt_changed_.exchange(false) && ledger_.changesTracked()) return true;
  auto halt = ledger_.audit().controlHalt();
  if (!halt.isOk()) {
    halt_changed_ = true;
    report.error = halt.status().toString();
    return false;
  }
  if (halt_ && !halt->has_value()) {
    // Resumed: the instances the halt named are acknowledged as gone (repaired, not halted on).
    std::set<std::string> named;
    for (const Json& missing : halt_->details.value("instances", Json::array())) {
      if (missing.is_object()) named.insert(missing.value("instance", ""));
    }
    observer_.acknowledge(named);
  }
  halt_ = std::move(halt).value();
  halted_ = halt_.has_value();
  return true;
}

int Engine::dispatch(const World& world) {
  const auto now_steady = std::chrono::steady_clock::now();
  const double rate = std::max(0.1, options_.rate_per_second);
  tokens_ =
      std::min(std::max(1.0, rate), tokens_ + rate * std::chrono::duration<double>(now_steady - refilled_).count());
  refilled_ = now_steady;
  const TimePoint now = clock_.now();
  // Operations a previous host left RUNNING resume first, then approved ones, oldest first.
  std::vector<const model::Operation*> ready;
  for (const std::string& name : world.operating) {
    const auto& op = world.instances.at(name).unfinished;
    if (!model::isInFlight(op->state)) continue;
    if (executor_.busy(op->meta.id)) continue;
    if (op->state == model::OperationState::kApproved && !op->next_attempt_at.empty()) {
      auto at = parseTimestamp(op->next_attempt_at);
      if (at && *at > now) continue;
    }
    ready.push_back(&*op);
  }
  std::sort(ready.begin(), ready.end(), [](auto* a, auto* b) {
    if ((a->state == model::OperationState::kRunning) != (b->state == model::OperationState::kRunning))
      return a->state == model::OperationState::kRunning;
    return a->meta.id < b->meta.id;
  });
  int dispatched = 0;
  for (const auto* op : ready) {
    if (dispatched >= options_.chunk || tokens_ < 1.0) break;
    if (executor_.submit(*op)) {
      ++dispatched;
      tokens_ -= 1.0;
    }
  }
  return dispatched;
}

int Engine::settle(int max_passes) {
  hooks_.start();
  executor_.start();
  int passes = 0;
  int quiet = 0;
  while (passes < max_passes) {
    PassReport report = runPass();
    ++passes;
    executor_.waitIdle();
    observer_.waitForProbes();
    const bool backlog = controller_.backlog() || approval_.backlog();
    if (report.total() == 0 && executor_.inFlight() == 0 && !backlog) {
      if (++quiet >= 2) break;
    } else {
      quiet = 0;
    }
  }
  return passes;
}

}  // namespace tide::engine
