#include "host/engine/hook_runner.h"

#include <algorithm>
#include <cmath>
#include <exception>

#include "host/core/thread_guard.h"
#include "host/engine/loop_errors.h"

namespace tide::engine {
namespace {

std::string text(const Json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// The number after `prefix` in `subject` ("operation/12"), or 0.
int64_t idAfter(const std::string& subject, const std::string& prefix) {
  if (subject.rfind(prefix, 0) != 0) return 0;
  const std::string rest = subject.substr(prefix.size());
  if (rest.empty() || rest.size() > 18 || !std::all_of(rest.begin(), rest.end(), ::isdigit)) return 0;
  return std::stoll(rest);
}

// {plan, deployment} from "deployment/<plan>/<id>"; empty strings when it is not one.
std::pair<std::string, std::string> deploymentOf(const std::string& subject) {
  const std::string prefix = "deployment/";
  if (subject.rfind(prefix, 0) != 0) return {};
  const std::string rest = subject.substr(prefix.size());
  const size_t slash = rest.find('/');
  if (slash == std::string::npos) return {};
  return {rest.substr(0, slash), rest.substr(slash + 1)};
}

double weight(const Json& weights, const char* key) {
  if (!weights.is_object()) return 0;
  auto it = weights.find(key);
  return it != weights.end() && it->is_number() ? it->get<double>() : 0;
}

}  // namespace

Json operationHookArgument(const model::Operation& op) {
  const bool started = !model::isBeforeRunning(op.state);
  return Json{{"id", op.meta.id},
              {"type", op.type},
              {"state", op.state},
              {"meta_instance", op.meta_instance},
              {"plan", op.plan},
              {"intent", op.intent},
              {"message", op.message},
              {"requested_by", op.requested_by},
              {"approved_by", op.approved_by},
              {"attempt", started ? op.attempts : op.attempts + 1},
              {"node", text(op.target, "node")}};
}

std::optional<HookNotification> hookNotificationFor(const model::Event& event,
                                                    const std::optional<model::Operation>& operation,
                                                    const Json& previous) {
  const Json& data = event.data;
  if (event.kind == "operation.state") {
    const std::optional<model::OperationState> to = model::parse<model::OperationState>(text(data, "to"));
    if (!to || !model::isTerminal(*to)) return std::nullopt;
    Json arg;
    if (operation) {
      arg = operationHookArgument(*operation);
    } else {
      arg = Json{{"id", idAfter(event.subject, "operation/")},
                 {"type", text(data, "type")},
                 {"meta_instance", text(data, "instance")},
                 {"plan", ""},
                 {"intent", ""},
                 {"requested_by", ""},
                 {"approved_by", ""},
                 {"attempt", 0},
                 {"node", ""}};
    }
    // The event, not the record, says what happened: the record may have moved on since.
    arg["state"] = *to;
    arg["from"] = text(data, "from");
    arg["message"] = text(data, "message");
    return HookNotification{"operation.after", std::move(arg)};
  }
  if (event.kind == "runtime_instance.state") {
    return HookNotification{"instance.state", Json{{"id", idAfter(event.subject, "runtime/")},
                                                   {"meta_instance", text(data, "instance")},
                                                   {"node", text(data, "node")},
                                                   {"state", text(data, "to")},
                                                   {"from", text(data, "from")},
                                                   {"message", text(data, "message")}}};
  }
  if (event.kind == "deployment.state") {
    const auto [plan, deployment] = deploymentOf(event.subject);
    return HookNotification{"deployment.state", Json{{"plan", plan},
                                                     {"deployment", deployment},
                                                     {"state", text(data, "to")},
                                                     {"from", text(data, "from")},
                                                     {"message", text(data, "message")}}};
  }
  if (event.kind == "deployment.route") {
    const auto [subject_plan, subject_deployment] = deploymentOf(event.subject);
    const Json weights = data.is_object() && data.contains("weights") ? data["weights"] : Json::object();
    const std::string plan = text(data, "plan");
    const std::string deployment = text(data, "deployment");
    Json arg{{"new", weight(weights, "new")},
             {"old", weight(weights, "old")},
             {"weights", weights},
             {"plan", plan.empty() ? subject_plan : plan},
             {"deployment", deployment.empty() ? subject_deployment : deployment},
             {"previous", data.is_object() && data.contains("previous") ? data["previous"] : previous}};
    return HookNotification{"route", std::move(arg)};
  }
  return std::nullopt;
}

HookRunner::HookRunner(ledger::Ledger& ledger, const lua::ScriptSetProvider& scripts, const Clock& clock,
                       EngineMetrics& metrics, HookRunnerOptions options)
    : ledger_(ledger),
      clock_(clock),
      metrics_(metrics),
      options_(std::move(options)),
      notifier_(scripts, clock, lua::HookEngineOptions{options_.limits, options_.output_dir, options_.log}),
      gate_(scripts, clock, lua::HookEngineOptions{options_.limits, options_.output_dir, options_.log}) {}

HookRunner::~HookRunner() { stop(); }

void HookRunner::start() {
  if (thread_.joinable()) return;
  stopping_ = false;
  const int64_t after = ledger_.audit().lastEventSeq();
  thread_ = std::thread([this, after] { loop(after); });
}

void HookRunner::stop() {
  stopping_ = true;
  clock_.wake();
  if (thread_.joinable()) thread_.join();
}

HookGate HookRunner::before(const model::Operation& op) {
  lua::HookVerdict verdict;
  {
    std::lock_guard<std::mutex> lock(gate_mu_);
    verdict = gate_.before(operationHookArgument(op));
  }
  recordFailures(verdict.failures);
  HookGate gate;
  gate.hook = verdict.hook;
  gate.reason = verdict.reason;
  switch (verdict.kind) {
    case lua::HookVerdict::Kind::kProceed: break;
    case lua::HookVerdict::Kind::kVeto: gate.kind = HookGate::Kind::kVeto; break;
    case lua::HookVerdict::Kind::kDelay:
      gate.kind = HookGate::Kind::kDelay;
      gate.delay = std::chrono::seconds(
          static_cast<int64_t>(std::ceil(std::min(verdict.delay_seconds, static_cast<double>(kMaxHookDelay.count())))));
      break;
  }
  return gate;
}

void HookRunner::loop(int64_t after) {
  while (!stopping_) {
    if (!ledger_.audit().waitForEvents(after, options_.poll)) continue;
    ledger::ListOptions page;
    page.after = after;
    page.limit = 200;
    auto events = ledger_.audit().listEvents(page);
    if (!events.isOk() || events->items.empty()) {
      clock_.sleepFor(options_.poll, [this] { return stopping_.load(); });  // the ledger is unwell; never spin
      continue;
    }
    for (const model::Event& event : events->items) {
      if (stopping_) return;
      runGuarded([&] { handle(event); },
                 [&](const std::string& what) {
                   reportLoopException(ledger_, "hook runner, event " + std::to_string(event.seq), what);
                 });
      after = event.seq;
      processed_ = after;
    }
  }
}

Json HookRunner::previousDeployment(const model::Event& event) {
  const auto [plan, deployment] = deploymentOf(event.subject);
  auto completed = ledger::listAll(ledger_.plans(), &ledger::PlanRecords::listDeployments,
                                   {{"plan", plan}, {"state", model::toString(model::DeploymentState::kCompleted)}});
  if (!completed.isOk()) return nullptr;
  const model::Deployment* newest = nullptr;
  for (const model::Deployment& d : *completed) {
    if (d.deployment_id != deployment && (!newest || d.meta.id > newest->meta.id)) newest = &d;
  }
  return newest ? Json(newest->deployment_id) : Json(nullptr);
}

void HookRunner::handle(const model::Event& event) {
  try {
    std::optional<model::Operation> operation;
    Json previous = nullptr;
    if (event.kind == "operation.state") {
      const std::optional<model::OperationState> to = model::parse<model::OperationState>(text(event.data, "to"));
      if (!to || !model::isTerminal(*to)) return;
      auto loaded = ledger_.operations().getOperation(idAfter(event.subject, "operation/"));
      if (loaded.isOk()) operation = std::move(loaded).value();
    } else if (event.kind == "deployment.route" && !(event.data.is_object() && event.data.contains("previous"))) {
      previous = previousDeployment(event);
    }
    const std::optional<HookNotification> notification = hookNotificationFor(event, operation, previous);
    if (!notification) return;
    recordFailures(notifier_.notify(notification->event, notification->arg));
  } catch (const std::exception& e) {
    recordFailures(
        {{"", event.kind, std::string("internal error handling event ") + std::to_string(event.seq) + ": " + e.what(),
          lua::LuaErrorClass::kRuntime}});
  }
}

void HookRunner::recordFailures(const std::vector<lua::HookFailure>& failures) {
  for (const lua::HookFailure& failure : failures) {
    metrics_.countHookFailure(failure.hook, failure.event);
    if (options_.log) {
      options_.log(lua::LogRecord{"error", failure.hook, failure.event + " failed: " + failure.error, nullptr});
    }
    int64_t suppressed = 0;
    {
      std::lock_guard<std::mutex> lock(failures_mu_);
      const auto now = std::chrono::steady_clock::now();
      if (now - window_start_ >= options_.failure_repeat_window) {
        window_start_ = now;
        window_count_ = 0;
      }
      if (failures_seen_.size() > 1000) failures_seen_.clear();
      const std::string key =
          failure.hook + '\n' + failure.event + '\n' + failure.error + (failure.failed_open ? "\nopen" : "");
      auto [it, fresh] = failures_seen_.try_emplace(key);
      if ((!fresh && now - it->second.last < options_.failure_repeat_window) ||
          window_count_ >= kMaxFailureEventsPerWindow) {
        ++it->second.suppressed;
        continue;
      }
      it->second.last = now;
      suppressed = it->second.suppressed;
      it->second.suppressed = 0;
      ++window_count_;
    }
    Json data{{"hook", failure.hook},
              {"event", failure.event},
              {"error", failure.error},
              {"error_class", lua::errorClassName(failure.error_class)}};
    if (failure.event == "operation.before") data["failed_open"] = failure.failed_open;
    if (suppressed > 0) data["suppressed"] = suppressed;
    // Best effort: a hook's failure is only reported; what it guarded already failed open or closed.
    (void)ledger_.audit().appendEvent("hook.failed", "hook/" + (failure.hook.empty() ? std::string("host") : failure.hook),
                              data, options_.actor);
  }
}

}  // namespace tide::engine
