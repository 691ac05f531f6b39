#include "host/engine/executor.h"

#include <algorithm>
#include <cmath>

#include "drivers/health/health_probe.h"
#include "host/core/thread_guard.h"
#include "host/engine/loop_errors.h"
#include "host/engine/world.h"
#include "host/model/holds.h"
#include "host/model/states.h"
#include "host/model/transitions.h"
#include "host/sched/scheduler.h"

namespace tide::engine {
namespace {

bool transient(Code code) {
  return code == Code::kUnavailable || code == Code::kDeadlineExceeded || code == Code::kResourceExhausted ||
         code == Code::kInternal;
}

// How often a runtime write refused for a stale generation is read and tried again.
constexpr int kStaleRetries = 3;

// Runs `write(generation)` with the generation `r` was read at and leaves in `r` what the
// ledger then holds. The executor owns the instances of its operation, but another writer
// may have touched one since it was read (a health reading of the observer just before the
// operation was dispatched): that refusal (kConflict) is not the operation's failure, so
// `r` is read again and written again, a few times at most.
template <typename Write>
Status writeRuntime(ledger::Ledger& ledger, model::RuntimeInstance& r, Write write) {
  for (int retry = 0;; ++retry) {
    auto written = write(ledger::Generation(r.meta.generation));
    if (written.isOk()) {
      r = std::move(written).value();
      return Status::ok();
    }
    if (written.status().code() != Code::kConflict || retry == kStaleRetries) return written.status();
    TIDE_ASSIGN_OR_RETURN(r, ledger.instances().getRuntimeInstance(r.meta.id));
  }
}

// The plan `op` runs by (docs/architecture.md#changing-a-plan): as the deployment it rolls
// out was made with, else as its instance's deployment was, else as it is now.
Result<model::Plan> planAsDeployed(ledger::Ledger& ledger, const model::Operation& op, const model::MetaInstance& meta) {
  TIDE_ASSIGN_OR_RETURN(model::Plan current, ledger.plans().getPlan(op.plan));
  for (const std::string* id : {&op.intent, &meta.deployment_id}) {
    auto deployment = ledger.plans().getDeployment(op.plan, *id);
    if (deployment.isOk()) return model::planAsDeployed(current, *deployment);
  }
  return current;
}

}  // namespace

// What one attempt at one operation works with.
struct Executor::Attempt {
  model::Operation op;
  model::MetaInstance meta;
  model::Plan plan;
  TimePoint deadline;

  bool expired(const Clock& clock) const { return clock.now() >= deadline; }
  // Whether someone cancelled the operation while it ran (a rollback or abort of its
  // deployment). Reads the ledger at most twice a second.
  bool cancelled(ledger::Ledger& ledger, const Clock& clock) {
    const TimePoint now = clock.now();
    if (!was_cancelled && now >= next_cancel_check) {
      next_cancel_check = now + std::chrono::milliseconds(500);
      auto current = ledger.operations().getOperation(op.meta.id);
      was_cancelled = current.isOk() && current->state == model::OperationState::kCancelled;
    }
    return was_cancelled;
  }
  TimePoint next_cancel_check{};
  bool was_cancelled = false;
};

Executor::Executor(ledger::Ledger& ledger, DriverSet& drivers, const Clock& clock, EngineMetrics& metrics,
                   ExecutorOptions options)
    : ledger_(ledger), drivers_(drivers), clock_(clock), metrics_(metrics), options_(std::move(options)) {}

Executor::~Executor() { stop(); }

void Executor::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!workers_.empty()) return;
  stopping_ = false;
  probe_cancel_.reset();
  for (int i = 0; i < std::max(1, options_.workers); ++i) workers_.emplace_back([this] { workerLoop(); });
}

void Executor::stop() {
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    workers.swap(workers_);
  }
  work_cv_.notify_all();
  clock_.wake();           // a worker may be waiting on the clock (polls, probe intervals)
  probe_cancel_.cancel();  // or in a health probe, whose timeout may be hours
  for (auto& t : workers) t.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (int64_t id : queue_) releaseBusy(id);
  queue_.clear();
  idle_cv_.notify_all();
}

bool Executor::submit(const model::Operation& op) {
  const int64_t id = op.meta.id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (busy_.count(id) || busy_op_.count(op.meta_instance)) return false;
    busy_.insert(id);
    busy_meta_[id] = op.meta_instance;
    busy_op_[op.meta_instance] = id;
    queue_.push_back(id);
  }
  work_cv_.notify_one();
  return true;
}

void Executor::releaseBusy(int64_t id) {
  busy_.erase(id);
  auto meta = busy_meta_.find(id);
  if (meta == busy_meta_.end()) return;
  busy_op_.erase(meta->second);
  busy_meta_.erase(meta);
}

bool Executor::busy(int64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_.count(id) > 0;
}

std::set<std::string> Executor::busyInstances() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> out;
  for (const auto& [id, meta] : busy_meta_) out.insert(meta);
  return out;
}

size_t Executor::inFlight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_.size();
}

void Executor::waitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return busy_.empty(); });
}

void Executor::onFinished(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  on_finished_ = std::move(fn);
}

void Executor::workerLoop() {
  while (true) {
    int64_t id = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      id = queue_.front();
      queue_.pop_front();
    }
    runGuarded([&] { execute(id); },
               [&](const std::string& what) {
                 reportLoopException(ledger_, "executor, operation " + std::to_string(id), what);
               });
    std::function<void()> notify;
    {
      std::lock_guard<std::mutex> lock(mu_);
      releaseBusy(id);
      notify = on_finished_;
      if (busy_.empty()) idle_cv_.notify_all();
    }
    if (notify) notify();
  }
}

std::chrono::milliseconds Executor::backoff(int64_t attempts) {
  const double base = static_cast<double>(options_.backoff_base.count());
  const double raw = std::min(base * std::pow(2.0, static_cast<double>(std::max<int64_t>(0, attempts - 1))),
                              static_cast<double>(options_.backoff_max.count()));
  std::lock_guard<std::mutex> lock(mu_);
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  return std::chrono::milliseconds(static_cast<int64_t>(raw * jitter(rng_)));
}

bool Executor::holdForHooks(const model::Operation& op) {
  if (!options_.before_operation) return false;
  const HookGate gate = options_.before_operation(op);
  const int64_t attempt = op.attempts + 1;
  const bool veto = gate.kind == HookGate::Kind::kVeto;
  if (gate.kind == HookGate::Kind::kProceed) return false;
  if (!veto && op.target.is_object() && op.target.contains("hook_delay_done") &&
      op.target["hook_delay_done"] == attempt) {
    return false;  // this attempt was delayed once already
  }
  const std::chrono::seconds delay = std::clamp(gate.delay, std::chrono::seconds(1), kMaxHookDelay);
  const std::chrono::milliseconds wait = veto ? options_.hook_veto_recheck : std::chrono::milliseconds(delay);
  const std::string reason = gate.reason.empty() ? std::to_string(delay.count()) + " s" : gate.reason;
  const std::string message = model::hookHoldMessage(veto, gate.hook, reason);
  ledger::OperationUpdate hold;
  hold.next_attempt_at = formatTimestamp(clock_.now() + wait);
  hold.message = message;
  if (!veto) {
    Json target = op.target.is_object() ? op.target : Json::object();
    target["hook_delay_done"] = attempt;
    hold.target = std::move(target);
  }
  if (!ledger_.operations().updateOperation(op.meta.id, hold, options_.actor).isOk()) return true;  // asked again next pass
  if (message != op.message) {
    // Best effort: the hold itself is written; the event only announces it.
    (void)ledger_.audit().appendEvent("operation.held", "operation/" + std::to_string(op.meta.id),
                              Json{{"hook", gate.hook},
                                   {"reason", reason},
                                   {"kind", veto ? "veto" : "delay"},
                                   {"until", *hold.next_attempt_at}},
                              options_.actor);
  }
  return true;
}

bool Executor::holdForDrain(const model::Operation& op) {
  if (!options_.before_stop) return false;
  if (op.type != model::OperationType::kStop && op.type != model::OperationType::kDelete &&
      op.type != model::OperationType::kUpdate && op.type != model::OperationType::kRelocate)
    return false;
  const std::optional<std::string> wait = options_.before_stop(op);
  if (!wait) return false;
  ledger::OperationUpdate hold;
  hold.next_attempt_at = formatTimestamp(clock_.now() + options_.drain_recheck);
  const std::string message = "draining: " + *wait;
  if (message != op.message) hold.message = message;
  // Best effort: unwritten, the operation is submitted again next pass and asks the drain again.
  (void)ledger_.operations().updateOperation(op.meta.id, hold, options_.actor);
  return true;
}

void Executor::execute(int64_t id) {
  auto loaded = ledger_.operations().getOperation(id);
  if (!loaded.isOk()) return;
  Attempt a;
  a.op = std::move(loaded).value();
  if (a.op.state == model::OperationState::kApproved) {
    if (holdForHooks(a.op) || holdForDrain(a.op)) return;
    ledger::OperationUpdate count;
    count.attempts = a.op.attempts + 1;
    if (!ledger_.operations().updateOperation(id, count, options_.actor).isOk()) return;
    auto started = ledger_.operations().setOperationState(id, model::OperationState::kRunning, std::nullopt, options_.actor,
                                             "attempt " + std::to_string(a.op.attempts + 1));
    if (!started.isOk()) return;
    a.op = std::move(started).value();
  } else if (a.op.state != model::OperationState::kRunning) {
    return;  // finished or cancelled since it was queued
  }
  a.deadline = clock_.now() + options_.operation_deadline;

  Status status = [&]() -> Status {
    TIDE_ASSIGN_OR_RETURN(a.meta, ledger_.instances().getMetaInstance(a.op.meta_instance));
    TIDE_ASSIGN_OR_RETURN(a.plan, planAsDeployed(ledger_, a.op, a.meta));
    return run(a);
  }();

  if (stopping_ && !status.isOk()) return;  // shutting down: the next start runs it again
  if (a.was_cancelled || a.cancelled(ledger_, clock_)) {
    // Cancelled while it ran: what it started must not keep running or hold resources.
    metrics_.countAttempt(model::toString(a.op.type), "cancelled");
    if (a.op.type != model::OperationType::kStop && a.op.type != model::OperationType::kDelete &&
        (a.op.type != model::OperationType::kUpdate || a.op.target.contains("runtime_instance"))) {
      cleanUpAfterFailure(a);
    }
    return;
  }
  if (status.isOk()) {
    metrics_.countAttempt(model::toString(a.op.type), "succeeded");
    // Best effort: an operation left RUNNING is submitted again next pass and its run converges.
    (void)ledger_.operations().setOperationState(id, model::OperationState::kSucceeded, std::nullopt, options_.actor, "");
    return;
  }
  if (transient(status.code()) && a.op.attempts < options_.max_attempts) {
    metrics_.countAttempt(model::toString(a.op.type), "retry");
    const auto delay = backoff(a.op.attempts);
    ledger::OperationUpdate retry;
    retry.next_attempt_at = formatTimestamp(clock_.now() + delay);
    // Best effort: left RUNNING, it is submitted again next pass and retried at once.
    (void)ledger_.operations().updateOperation(id, retry, options_.actor);
    (void)ledger_.operations().setOperationState(id, model::OperationState::kApproved, std::nullopt, options_.actor,
                                    "attempt " + std::to_string(a.op.attempts) + " failed: " + status.message() +
                                        "; retrying in " + std::to_string(delay.count() / 1000.0).substr(0, 4) + " s");
    return;
  }
  metrics_.countAttempt(model::toString(a.op.type), "failed");
  cleanUpAfterFailure(a);
  // Best effort: left RUNNING, it is submitted again next pass and fails (or succeeds) then.
  (void)ledger_.operations().setOperationState(id, model::OperationState::kFailed, std::nullopt, options_.actor,
                                  "attempt " + std::to_string(a.op.attempts) + ": " + status.message());
}

Status Executor::run(Attempt& a) {
  if (a.op.type == model::OperationType::kCreate) return runCreate(a);
  if (a.op.type == model::OperationType::kUpdate) return runUpdate(a);
  if (a.op.type == model::OperationType::kRelocate) return runRelocate(a);
  if (a.op.type == model::OperationType::kStop) return runStop(a);
  if (a.op.type == model::OperationType::kRestart) return runRestart(a);
  if (a.op.type == model::OperationType::kDelete) return runDelete(a);
  return Status::invalidArgument("unknown operation type " + model::toString(a.op.type));
}

Result<model::RuntimeInstance> Executor::runtime(int64_t id) { return ledger_.instances().getRuntimeInstance(id); }

Result<model::RuntimeInstance> Executor::reservedRuntime(const model::Operation& op) {
  if (!op.target.contains("runtime_instance")) {
    return Status(Code::kUnprocessable, "operation " + std::to_string(op.meta.id) + " has no reserved placement");
  }
  TIDE_ASSIGN_OR_RETURN(model::RuntimeInstance r, runtime(op.target["runtime_instance"].get<int64_t>()));
  if (!model::holdsResources(r.state)) {
    return Status(Code::kUnprocessable,
                  "the reserved runtime instance " + std::to_string(r.meta.id) + " is " + model::toString(r.state));
  }
  return r;
}

Status Executor::setRuntimeState(model::RuntimeInstance& r, model::RuntimeState state, const std::string& message) {
  return writeRuntime(ledger_, r, [&](ledger::Generation generation) -> Result<model::RuntimeInstance> {
    if (r.state == state) return r;  // also when a re-read finds it there already
    return ledger_.instances().setRuntimeInstanceState(r.meta.id, state, generation, options_.actor, message);
  });
}

Status Executor::updateRuntime(model::RuntimeInstance& r, const ledger::RuntimeUpdate& update) {
  return writeRuntime(ledger_, r, [&](ledger::Generation generation) {
    return ledger_.instances().updateRuntimeInstance(r.meta.id, update, generation, options_.actor);
  });
}

namespace {

// The live runtime instances of a meta instance.
Result<std::vector<model::RuntimeInstance>> liveRuntimes(ledger::Ledger& ledger, const std::string& meta) {
  TIDE_ASSIGN_OR_RETURN(auto all,
                        ledger::listAll(ledger.instances(), &ledger::InstanceRecords::listRuntimeInstances, {{"meta_instance", meta}}));
  std::vector<model::RuntimeInstance> live;
  for (auto& r : all) {
    if (model::holdsResources(r.state)) live.push_back(std::move(r));
  }
  return live;
}

Result<model::RuntimeInstance> activeRuntime(ledger::Ledger& ledger, const std::string& meta) {
  TIDE_ASSIGN_OR_RETURN(auto live, liveRuntimes(ledger, meta));
  for (auto& r : live) {
    if (r.is_active) return r;
  }
  return Status::notFound("instance '" + meta + "' runs nowhere");
}

// The driver's view of the runtime instance's volumes (ledger `volumes` entries).
std::vector<drivers::VolumeSpec> volumeSpecs(const model::RuntimeInstance& r) {
  std::vector<drivers::VolumeSpec> out;
  for (const auto& v : r.volumes) {
    drivers::VolumeSpec spec;
    spec.id = v.value("id", "");
    spec.node = r.node;
    spec.storage_class = v.value("storage_class", "");
    spec.capacity_gib = v.value("capacity_gib", 0.0);
    spec.mount_path = v.value("mount_path", "");
    out.push_back(spec);
  }
  return out;
}

}  // namespace

Status Executor::startRuntime(Attempt& a, model::RuntimeInstance& r) {
  TIDE_ASSIGN_OR_RETURN(drivers::Driver * driver, drivers_.forNode(r.node));
  if (r.state == model::RuntimeState::kPending || r.state == model::RuntimeState::kStopped) {
    for (const auto& volume : volumeSpecs(r)) {
      TIDE_RETURN_IF_ERROR(metrics_.timeDriverCall("ensure_volume", [&] { return driver->ensureVolume(volume); })
                               .withPrefix("volume " + volume.id));
    }
    TIDE_RETURN_IF_ERROR(setRuntimeState(r, model::RuntimeState::kStarting));
  }
  if (!model::runsOrStarts(r.state)) {
    return Status::conflict("runtime instance " + std::to_string(r.meta.id) + " is " + model::toString(r.state));
  }
  drivers::RuntimeSpec spec;
  spec.id = std::to_string(r.meta.id);
  spec.meta_instance = r.meta_instance;
  spec.node = r.node;
  spec.plan = a.meta.plan;  // labels of what a driver runs (the container driver's)
  spec.deployment = a.meta.deployment_id;
  // Every application of the plan, in start order (docs/architecture.md#applications); the
  // single fields are the first's.
  for (const model::Application* app : model::startOrder(a.plan)) {
    spec.applications.push_back({app->payload_name, r.coordinates.value(app->payload_name, Json::object()), app->ports,
                                 app->resources, app->health_check, app->pod});
  }
  if (!spec.applications.empty()) {
    const drivers::ApplicationSpec& first = spec.applications.front();
    spec.payload_name = first.payload_name;
    spec.ports = first.ports;
    spec.resources = first.resources;
    spec.coordinates = first.coordinates;
    spec.health_check = first.health_check;
  }
  spec.volumes = volumeSpecs(r);
  TIDE_ASSIGN_OR_RETURN(drivers::RuntimeStatus status,
                        metrics_.timeDriverCall("ensure", [&] { return driver->ensure(spec); }));
  ledger::RuntimeUpdate facts;
  facts.driver_handle = status.handle;
  facts.ports = status.ports;
  TIDE_RETURN_IF_ERROR(updateRuntime(r, facts));

  drivers::RuntimeRef ref{spec.id, r.node, status.handle};
  while (status.state != model::WorkloadState::kRunning) {
    if (model::hasEnded(status.state)) {
      return Status::unavailable("instance exited with code " + std::to_string(status.exit_code) +
                                 (status.message.empty() ? "" : ": " + status.message));
    }
    if (a.cancelled(ledger_, clock_)) return Status(Code::kConflict, "cancelled while starting");
    if (a.expired(clock_) || stopping_) return Status(Code::kDeadlineExceeded, "instance did not start in time");
    clock_.sleepFor(options_.poll_interval, [this] { return stopping_.load(); });
    TIDE_ASSIGN_OR_RETURN(status, metrics_.timeDriverCall("status", [&] { return driver->status(ref); }));
  }
  if (status.ports != *facts.ports || status.handle != *facts.driver_handle) {
    // A driver that learns ports and handle only once the instance runs (a node agent's,
    // docs/agents.md) tells them now; probes and `tide instances` need them.
    ledger::RuntimeUpdate running;
    running.driver_handle = status.handle;
    running.ports = status.ports;
    TIDE_RETURN_IF_ERROR(updateRuntime(r, running));
  }
  TIDE_RETURN_IF_ERROR(setRuntimeState(r, model::RuntimeState::kRunning));

  const std::vector<model::ApplicationCheck> checks = model::healthChecksOf(a.plan);
  if (status.healthy) {
    // The driver knows the instance's health: its word stands in for any check.
    const auto interval = !checks.empty() ? std::chrono::milliseconds(static_cast<int64_t>(
                                                std::min(checks.front().check.interval_seconds, 0.5) * 1000))
                                          : options_.poll_interval;
    TIDE_RETURN_IF_ERROR(waitReportedHealthy(a, r, *driver, ref, status, interval));
  } else {
    // Each application's check in start order, while the deadline lasts.
    const drivers::ProbeTarget target = drivers::localTarget(r.ports);
    for (const model::ApplicationCheck& named : checks) {
      // While starting, probe at least twice a second: an instance that is up should not
      // wait a whole steady-state interval to be declared ready.
      model::HealthCheck startup = named.check;
      startup.interval_seconds = std::min(startup.interval_seconds, 0.5);
      drivers::ProbeResult probe = drivers::waitHealthy(
          startup, target, clock_, a.deadline, [&] { return stopping_.load() || a.cancelled(ledger_, clock_); },
          &probe_cancel_);
      if (!probe.ok) {
        const std::string why =
            checks.size() > 1 ? "application '" + named.application + "': " + probe.message : probe.message;
        ledger::RuntimeUpdate unhealthy;
        unhealthy.healthy = false;
        unhealthy.message = why;
        (void)updateRuntime(r, unhealthy);  // best effort: the error returned says the same
        return Status(Code::kDeadlineExceeded, "not healthy in time: " + why);
      }
    }
  }
  ledger::RuntimeUpdate healthy;
  healthy.healthy = true;
  if (!r.healthy || r.ready_since.empty()) healthy.ready_since = formatTimestamp(clock_.now());
  healthy.message = "";
  TIDE_RETURN_IF_ERROR(updateRuntime(r, healthy));
  return Status::ok();
}

Status Executor::waitReportedHealthy(Attempt& a, const model::RuntimeInstance& r, drivers::Driver& driver,
                                     const drivers::RuntimeRef& ref, drivers::RuntimeStatus status,
                                     std::chrono::milliseconds interval) {
  while (!status.healthy.value_or(false)) {
    if (status.state != model::WorkloadState::kRunning) {
      return Status::unavailable("instance " + model::toString(status.state) + " (exit code " +
                                 std::to_string(status.exit_code) + ") before it was healthy" +
                                 (status.message.empty() ? "" : ": " + status.message));
    }
    if (a.cancelled(ledger_, clock_)) return Status(Code::kConflict, "cancelled while starting");
    if (a.expired(clock_) || stopping_) {
      const std::string why = status.message.empty() ? "the driver reports it unhealthy" : status.message;
      ledger::RuntimeUpdate unhealthy;
      unhealthy.healthy = false;
      unhealthy.message = why;
      model::RuntimeInstance current = r;
      (void)updateRuntime(current, unhealthy);  // best effort: the error returned says the same
      return Status(Code::kDeadlineExceeded, "not healthy in time: " + why);
    }
    clock_.sleepFor(std::max(interval, std::chrono::milliseconds(10)), [this] { return stopping_.load(); });
    TIDE_ASSIGN_OR_RETURN(status, metrics_.timeDriverCall("status", [&] { return driver.status(ref); }));
  }
  return Status::ok();
}

Status Executor::stopRuntime(Attempt&, model::RuntimeInstance& r, bool remove) {
  const model::RuntimeState goal = remove ? model::RuntimeState::kTerminated : model::RuntimeState::kStopped;
  if (r.state == goal || !model::holdsResources(r.state)) return Status::ok();
  TIDE_ASSIGN_OR_RETURN(drivers::Driver * driver, drivers_.forNode(r.node));
  if (model::runsOrStarts(r.state)) TIDE_RETURN_IF_ERROR(setRuntimeState(r, model::RuntimeState::kStopping));
  const drivers::RuntimeRef ref{std::to_string(r.meta.id), r.node, r.driver_handle};
  TIDE_RETURN_IF_ERROR(metrics_.timeDriverCall(remove ? "remove" : "stop",
                                               [&] { return remove ? driver->remove(ref) : driver->stop(ref); }));
  if (r.state == model::RuntimeState::kPending && !remove)
    return setRuntimeState(r, model::RuntimeState::kTerminated);  // never started
  return setRuntimeState(r, goal);
}

Status Executor::removeVolumes(Attempt&, const model::RuntimeInstance& r) {
  if (r.volumes.empty()) return Status::ok();
  TIDE_ASSIGN_OR_RETURN(drivers::Driver * driver, drivers_.forNode(r.node));
  for (const auto& volume : volumeSpecs(r)) {
    TIDE_RETURN_IF_ERROR(
        metrics_.timeDriverCall("remove_volume",
                                [&] {
                                  return driver->removeVolume({volume.id, volume.node});
                                })
            .withPrefix("volume " + volume.id));
  }
  return Status::ok();
}

Status Executor::runCreate(Attempt& a) {
  TIDE_ASSIGN_OR_RETURN(model::RuntimeInstance r, reservedRuntime(a.op));
  return startRuntime(a, r);
}

Status Executor::runUpdate(Attempt& a) {
  if (a.meta.state != model::MetaState::kActive) {
    // A person stopped it: a rollout does not start it again (its UPDATE fails, saying so).
    return model::checkOperationFits(model::OperationType::kUpdate, a.meta.state, std::nullopt);
  }
  if (a.op.target.contains("runtime_instance")) {
    // Placed at approval: the instance ran nowhere then. Its reserved runtime instance
    // starts with the new coordinates.
    TIDE_ASSIGN_OR_RETURN(model::RuntimeInstance r, reservedRuntime(a.op));
    TIDE_RETURN_IF_ERROR(startRuntime(a, r));
    return adoptIntoDeployment(a);
  }
  auto active = activeRuntime(ledger_, a.meta.name);
  if (!active.isOk() && active.status().code() == Code::kNotFound) {
    // It stopped running after approval (a hook held the UPDATE, or it waited for a retry)
    // and nothing was placed for it: nothing is left to update. The UPDATE ends without
    // effect; a FAILED one would fail its rollout and leave the instance to a person,
    // while now the controller starts the instance again and its strategy asks anew.
    TIDE_RETURN_IF_ERROR(ledger_
                             .operations().setOperationState(a.op.meta.id, model::OperationState::kCancelled, std::nullopt,
                                                options_.actor,
                                                "instance '" + a.meta.name +
                                                    "' stopped running before this UPDATE ran; it is asked again")
                             .status());
    a.was_cancelled = true;
    return Status::ok();
  }
  TIDE_ASSIGN_OR_RETURN(model::RuntimeInstance r, std::move(active));
  const Json coordinates = a.op.target.value("coordinates", Json());
  if (!coordinates.is_object()) return Status(Code::kUnprocessable, "the operation names no coordinates");
  // The size the deployment's plan asks for, when approval re-reserved it on this node
  // (docs/architecture.md#changing-a-plan): recorded in the same write as the coordinates.
  std::optional<model::Resources> new_size;
  const Json resize = a.op.target.value("resize", Json());
  if (resize.is_object() && resize.value("runtime_instance", int64_t{0}) == r.meta.id) {
    const auto to = resize.value("to", model::Resources{});
    if (!sched::sameResources(to, r.reservation)) new_size = to;
  }
  if (r.coordinates != coordinates || new_size) {
    ledger::RuntimeUpdate update;
    if (r.coordinates != coordinates) {
      TIDE_RETURN_IF_ERROR(stopRuntime(a, r, /*remove=*/false));
      // The old process is stopped; remove it so the driver starts the new coordinates
      // rather than the recorded ones. Its runtime record (and volumes) stay.
      TIDE_ASSIGN_OR_RETURN(drivers::Driver * driver, drivers_.forNode(r.node));
      TIDE_RETURN_IF_ERROR(metrics_.timeDriverCall("remove", [&] {
        return driver->remove({std::to_string(r.meta.id), r.node, r.driver_handle});
      }));
      update.coordinates = coordinates;
      update.healthy = false;
      update.ready_since = "";
    }
    update.reservation = new_size;
    update.reservation_reason = "operation " + std::to_string(a.op.meta.id) + " installs its deployment's size";
    TIDE_RETURN_IF_ERROR(updateRuntime(r, update));
  }
  TIDE_RETURN_IF_ERROR(startRuntime(a, r));
  return adoptIntoDeployment(a);
}

Status Executor::adoptIntoDeployment(Attempt& a) {
  if (a.op.intent == "user" || a.op.intent == a.meta.deployment_id) return Status::ok();
  return ledger_.instances().setMetaInstanceDeployment(a.meta.name, a.op.intent, options_.actor).status();
}

Status Executor::runRelocate(Attempt& a) {
  TIDE_ASSIGN_OR_RETURN(model::RuntimeInstance fresh, reservedRuntime(a.op));
  if (!fresh.is_active) {
    TIDE_RETURN_IF_ERROR(startRuntime(a, fresh));
    // Make before break: the new one serves before the old one is touched.
    TIDE_ASSIGN_OR_RETURN(fresh, ledger_.instances().activateRuntimeInstance(fresh.meta.id, options_.actor));
  }
  if (a.op.target.contains("from_runtime_instance")) {
    TIDE_ASSIGN_OR_RETURN(model::RuntimeInstance old, runtime(a.op.target["from_runtime_instance"].get<int64_t>()));
    TIDE_RETURN_IF_ERROR(stopRuntime(a, old, /*remove=*/true));
    TIDE_RETURN_IF_ERROR(removeVolumes(a, old));
  }
  return Status::ok();
}

Status Executor::runStop(Attempt& a) {
  TIDE_ASSIGN_OR_RETURN(auto live, liveRuntimes(ledger_, a.meta.name));
  for (auto& r : live) TIDE_RETURN_IF_ERROR(stopRuntime(a, r, /*remove=*/true));
  if (a.meta.state == model::MetaState::kActive) {
    TIDE_RETURN_IF_ERROR(
        ledger_.instances().setMetaInstanceState(a.meta.name, model::MetaState::kStopped, std::nullopt, options_.actor, "stopped")
            .status());
  }
  return Status::ok();
}

Status Executor::runRestart(Attempt& a) {
  if (a.op.target.contains("runtime_instance")) {
    // Placed again at approval: the meta instance was stopped or had nothing running.
    TIDE_ASSIGN_OR_RETURN(model::RuntimeInstance r, reservedRuntime(a.op));
    TIDE_RETURN_IF_ERROR(startRuntime(a, r));
    if (a.meta.state == model::MetaState::kStopped) {
      TIDE_RETURN_IF_ERROR(
          ledger_
              .instances().setMetaInstanceState(a.meta.name, model::MetaState::kActive, std::nullopt, options_.actor, "restarted")
              .status());
    }
    return Status::ok();
  }
  TIDE_ASSIGN_OR_RETURN(model::RuntimeInstance r, activeRuntime(ledger_, a.meta.name));
  if (!a.op.target.value("stopped", false)) {
    TIDE_RETURN_IF_ERROR(stopRuntime(a, r, /*remove=*/false));
    ledger::OperationUpdate progress;
    Json target = a.op.target;
    target["stopped"] = true;
    progress.target = target;
    TIDE_ASSIGN_OR_RETURN(a.op, ledger_.operations().updateOperation(a.op.meta.id, progress, options_.actor));
  }
  return startRuntime(a, r);
}

Status Executor::runDelete(Attempt& a) {
  if (a.meta.state == model::MetaState::kActive || a.meta.state == model::MetaState::kStopped) {
    TIDE_ASSIGN_OR_RETURN(a.meta, ledger_.instances().setMetaInstanceState(a.meta.name, model::MetaState::kMarkedForDeletion,
                                                               std::nullopt, options_.actor, "deleting"));
  }
  TIDE_ASSIGN_OR_RETURN(
      auto all, ledger::listAll(ledger_.instances(), &ledger::InstanceRecords::listRuntimeInstances, {{"meta_instance", a.meta.name}}));
  // Instances first, then their volumes (never a volume under a running instance).
  for (auto& r : all) TIDE_RETURN_IF_ERROR(stopRuntime(a, r, /*remove=*/true));
  std::set<std::pair<std::string, std::string>> removed;
  for (const auto& r : all) {
    for (const auto& volume : volumeSpecs(r)) {
      if (!removed.insert({volume.id, volume.node}).second) continue;
      TIDE_ASSIGN_OR_RETURN(drivers::Driver * driver, drivers_.forNode(volume.node));
      const Status gone = metrics_.timeDriverCall("remove_volume", [&] {
        return driver->removeVolume({volume.id, volume.node});
      });
      TIDE_RETURN_IF_ERROR(gone.withPrefix("volume " + volume.id));
    }
  }
  return ledger_.instances().setMetaInstanceState(a.meta.name, model::MetaState::kDeleted, std::nullopt, options_.actor, "deleted")
      .status();
}

void Executor::cleanUpAfterFailure(Attempt& a) {
  // What a failed operation started must not keep running or hold resources. The instance
  // the operation was working on is removed; for RELOCATE that is the new one, and the
  // old one stays active.
  std::optional<int64_t> id;
  if (a.op.target.contains("runtime_instance")) {
    id = a.op.target["runtime_instance"].get<int64_t>();  // placed for this operation
  } else if (a.op.type == model::OperationType::kUpdate || a.op.type == model::OperationType::kRestart) {
    auto active = activeRuntime(ledger_, a.op.meta_instance);
    if (active.isOk()) id = active.value().meta.id;
  }
  if (!id) return;
  auto r = runtime(*id);
  if (!r.isOk() || !model::holdsResources(r.value().state)) return;
  // A RELOCATE that failed after the switch (while removing the old instance) leaves the new
  // one serving: it is not touched. The old, passive one stops counting (FAILED); should its
  // driver still run it, the observer removes it as an orphan after the grace period.
  if (a.op.type == model::OperationType::kRelocate && r.value().is_active) {
    if (!a.op.target.contains("from_runtime_instance")) return;
    auto old = runtime(a.op.target["from_runtime_instance"].get<int64_t>());
    if (old.isOk() && !old.value().is_active && model::holdsResources(old.value().state)) {
      // Best effort: one still holding resources is the observer's to judge next pass.
      (void)setRuntimeState(old.value(), model::RuntimeState::kFailed,
                            "left behind after RELOCATE failed after the switch");
    }
    return;
  }
  auto driver = drivers_.forNode(r.value().node);
  if (driver.isOk()) {
    // Best effort: what the driver still runs, the observer removes as an orphan.
    (void)metrics_.timeDriverCall("remove", [&] {
      return driver.value()->remove({std::to_string(*id), r.value().node, r.value().driver_handle});
    });
  }
  // Best effort: one not marked FAILED here is the observer's to judge next pass.
  (void)setRuntimeState(r.value(), model::RuntimeState::kFailed,
                        "removed after " + model::toString(a.op.type) + " failed");
}

}  // namespace tide::engine
