#include "host/cli/rollout_view.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "host/cli/json_fields.h"
#include "host/cli/table.h"
#include "host/cli/terminal_text.h"
#include "host/model/approvals.h"
#include "host/model/records.h"
#include "host/model/transitions.h"

namespace tide::cli {
namespace {

// Signals that stay while they hold rather than waiting to be consumed.
constexpr const char* kHoldSignal = "hold";
constexpr const char* kRestoreSignal = "restore";

int64_t deploymentIdOf(const Json& deployment) {
  const Json& id = at(deployment, {"metadata", "id"});
  return id.is_number_integer() ? id.get<int64_t>() : 0;
}

std::optional<int64_t> integer(const Json& value) {
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) return static_cast<int64_t>(std::llround(value.get<double>()));
  return std::nullopt;
}

std::optional<TimePoint> timeOf(const Json& value) {
  if (!value.is_string() || value.get<std::string>().empty()) return std::nullopt;
  Result<TimePoint> parsed = parseTimestamp(value.get<std::string>());
  if (!parsed.isOk()) return std::nullopt;
  return *parsed;
}

double secondsBetween(TimePoint from, TimePoint to) { return std::chrono::duration<double>(to - from).count(); }

// "new 50 / old 50", from the strategy's {new, old} (other keys follow in name order).
std::string formatWeights(const Json& weights) {
  if (!weights.is_object() || weights.empty()) return "";
  std::vector<std::string> parts;
  for (const char* key : {"new", "old"}) {
    if (weights.contains(key)) parts.push_back(std::string(key) + " " + text(weights[key]));
  }
  for (const auto& [key, value] : weights.items()) {
    if (key != "new" && key != "old") parts.push_back(key + " " + text(value));
  }
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : " / ") + part;
  return out;
}

std::string formatStep(const RolloutSample& sample) {
  if (!sample.step) return "";
  return std::to_string(*sample.step) + (sample.steps ? "/" + std::to_string(*sample.steps) : "");
}

std::string formatCount(const InstanceCount& count) {
  return std::to_string(count.ready) + "/" + std::to_string(count.total) + " ready";
}

// The message, then what the rollout waits for unless the message already says it.
std::string messageAndWaitingFor(const RolloutSample& sample) {
  std::string tail = sample.message;
  if (!sample.waiting_for.empty() && tail.find(sample.waiting_for) == std::string::npos) {
    tail += (tail.empty() ? "" : "; ") + std::string("waiting for: ") + sample.waiting_for;
  }
  return tail;
}

// The parts of a watch line, two spaces apart.
std::string joinParts(const std::vector<std::string>& parts) {
  std::string line;
  for (const std::string& part : parts) line += (line.empty() ? "" : "  ") + part;
  return line;
}

constexpr int kProgressBarCells = 20;
constexpr int kDefaultTerminalWidth = 80;

// "[########............] 2/5 ready": the new instances ready out of those asked for (all
// cells once the rollout completed, whatever the count).
std::string progressBar(const RolloutSample& sample) {
  const int64_t wanted = std::max(sample.instance_count, sample.new_instances.total);
  int64_t filled = wanted > 0 ? sample.new_instances.ready * kProgressBarCells / wanted : 0;
  if (spells(sample.state, model::DeploymentState::kCompleted)) filled = kProgressBarCells;
  filled = std::clamp<int64_t>(filled, 0, kProgressBarCells);
  return "[" + std::string(static_cast<size_t>(filled), '#') +
         std::string(static_cast<size_t>(kProgressBarCells - filled), '.') + "] " +
         std::to_string(sample.new_instances.ready) + "/" + std::to_string(wanted) + " ready";
}

// The first `columns` characters of UTF-8 `text` (a character being a lead byte and its
// continuation bytes).
std::string firstColumns(const std::string& text, int columns) {
  int seen = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool continuation = (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
    if (!continuation && seen++ == columns) return text.substr(0, i);
  }
  return text;
}

// "alice at 2026-...", leaving out what the signal does not say.
std::string byAt(const Json& signal) {
  std::string by = text(signal, {"by"});
  std::string when = text(signal, {"at"});
  if (by.empty()) return when.empty() ? "" : "at " + when;
  return when.empty() ? by : by + " at " + when;
}

// The script and parameters in force: what the host says the rollout runs with (the plan as
// deployed, overridden by the deployment's); from a host that does not say, the plan's.
std::string strategyScript(const Json& plan, const Json& deployment) {
  if (std::string script = text(deployment, {"strategy_in_force", "script"}); !script.empty()) return script;
  std::string script = text(deployment, {"strategy", "script"});
  if (script.empty()) script = text(plan, {"strategy", "script"});
  return script.empty() ? model::kDefaultStrategy : script;
}

Json strategyParams(const Json& plan, const Json& deployment) {
  if (const Json& in_force = at(deployment, {"strategy_in_force", "params"}); in_force.is_object()) return in_force;
  Json params = Json::object();
  for (const Json* source : {&at(plan, {"strategy", "params"}), &at(deployment, {"strategy", "params"})}) {
    if (!source->is_object()) continue;
    for (const auto& [key, value] : source->items()) params[key] = value;
  }
  return params;
}

// When the rollout stopped making progress: now while it runs; for a finished one, when
// it completed or, failing that, when its record last changed.
TimePoint endOf(const Json& deployment, TimePoint now) {
  std::string state = text(deployment, {"state"});
  if (!rolloutOver(state)) return now;
  if (spells(state, model::DeploymentState::kCompleted)) {
    if (auto completed = timeOf(at(deployment, {"completed_at"}))) return *completed;
  }
  return timeOf(at(deployment, {"metadata", "updated_at"})).value_or(now);
}

void printTiming(std::ostream& out, const Json& deployment, TimePoint now) {
  std::optional<TimePoint> started = timeOf(at(deployment, {"started_at"}));
  if (!started) {
    printField(out, "Progress Time", "not started", true);
    return;
  }
  TimePoint end = endOf(deployment, now);
  const Json& closed = at(deployment, {"paused_seconds"});
  double paused = closed.is_number() ? closed.get<double>() : 0;
  if (auto since = timeOf(at(deployment, {"paused_since"}))) paused += std::max(0.0, secondsBetween(*since, end));
  printField(out, "Progress Time", formatDuration(secondsBetween(*started, end) - paused), true);
  printField(out, "Paused Time", formatDuration(paused), true);
}

// "deployment-4 was rolled back at 2026-...: bad latency".
std::string describeRestore(const Json& restore) {
  std::string kind = text(restore, {"kind"});
  std::string what = kind == "rollback" ? "rolled back" : kind == "abort" ? "aborted" : kind;
  std::string out = "after " + text(restore, {"from"}) + " was " + what;
  if (std::string when = text(restore, {"at"}); !when.empty()) out += " at " + when;
  if (std::string reason = text(restore, {"reason"}); !reason.empty()) out += ": " + reason;
  return out;
}

// One line per signal still waiting for the strategy: "promote by alice at ...".
std::string describePendingSignals(const Json& signals) {
  std::string out;
  if (!signals.is_object()) return out;
  for (const auto& [name, signal] : signals.items()) {
    if (model::isPersistentSignal(name)) continue;
    std::string line = name;
    if (std::string who = byAt(signal); !who.empty()) line += " by " + who;
    if (std::string reason = text(signal, {"reason"}); !reason.empty()) line += ": " + reason;
    out += (out.empty() ? "" : "\n") + line;
  }
  return out;
}

}  // namespace

std::string toSecond(TimePoint when) {
  std::string stamp = formatTimestamp(when);
  size_t dot = stamp.find('.');
  return dot == std::string::npos ? stamp : stamp.substr(0, dot) + "Z";
}

const Json* newestDeployment(const Json& deployments, const std::function<bool(const Json&)>& eligible) {
  const Json* newest = nullptr;
  for (const Json& deployment : items(deployments)) {
    if (eligible && !eligible(deployment)) continue;
    if (newest == nullptr || deploymentIdOf(deployment) > deploymentIdOf(*newest) ||
        (deploymentIdOf(deployment) == deploymentIdOf(*newest) &&
         text(deployment, {"metadata", "created_at"}) > text(*newest, {"metadata", "created_at"}))) {
      newest = &deployment;
    }
  }
  return newest;
}

std::string formatDuration(double seconds) {
  auto total = static_cast<int64_t>(std::max(0.0, std::floor(seconds)));
  int64_t hours = total / 3600, minutes = total / 60 % 60, secs = total % 60;
  char buffer[48];
  if (hours > 0) {
    std::snprintf(buffer, sizeof buffer, "%lldh%02lldm%02llds", static_cast<long long>(hours),
                  static_cast<long long>(minutes), static_cast<long long>(secs));
  } else if (minutes > 0) {
    std::snprintf(buffer, sizeof buffer, "%lldm%02llds", static_cast<long long>(minutes), static_cast<long long>(secs));
  } else {
    std::snprintf(buffer, sizeof buffer, "%llds", static_cast<long long>(secs));
  }
  return buffer;
}

RolloutSample sampleRollout(const Json& plan_view, const Json& deployment) {
  RolloutSample sample;
  sample.plan = text(deployment, {"plan"});
  sample.deployment_id = text(deployment, {"deployment_id"});
  sample.state = text(deployment, {"state"});
  sample.message = text(deployment, {"message"});
  const Json& rollout = at(deployment, {"rollout_state"});
  sample.step = integer(at(rollout, {"step"}));
  const Json& steps = at(rollout, {"steps"});
  sample.steps = steps.is_array() ? std::optional<int64_t>(static_cast<int64_t>(steps.size())) : integer(steps);
  sample.instance_count = integer(at(deployment, {"instance_count"})).value_or(0);
  const Json& weights = at(rollout, {"weights"});
  if (weights.is_object()) sample.weights = weights;
  // A strategy's last word on what it waits for outlives an abort or a cancel.
  if (!rolloutOver(sample.state)) sample.waiting_for = text(rollout, {"waiting_for"});

  // The plan's counts by deployment, of the instances staying (the plan view's summary, the
  // same at any fleet size): this deployment's are new, all others old.
  const Json& by_deployment = at(plan_view, {"instance_summary", "by_deployment"});
  if (by_deployment.is_object()) {
    for (const auto& [id, counts] : by_deployment.items()) {
      InstanceCount& count = id == sample.deployment_id ? sample.new_instances : sample.old_instances;
      count.total += integer(at(counts, {"total"})).value_or(0);
      count.ready += integer(at(counts, {"ready"})).value_or(0);
    }
  }
  return sample;
}

std::string formatWatchLine(const RolloutSample& sample, TimePoint when) {
  std::vector<std::string> parts = {toSecond(when), sample.state};
  if (std::string step = formatStep(sample); !step.empty()) parts.push_back("step " + step);
  if (std::string weights = formatWeights(sample.weights); !weights.empty()) parts.push_back("weights " + weights);
  parts.push_back("new " + formatCount(sample.new_instances) + ", old " + formatCount(sample.old_instances));
  if (std::string tail = messageAndWaitingFor(sample); !tail.empty()) parts.push_back(tail);
  return joinParts(parts);
}

std::string formatProgressLine(const RolloutSample& sample, int width) {
  std::vector<std::string> parts = {sample.deployment_id, sample.state, progressBar(sample)};
  if (std::string step = formatStep(sample); !step.empty()) parts.push_back("step " + step);
  if (std::string weights = formatWeights(sample.weights); !weights.empty()) parts.push_back("weights " + weights);
  if (sample.old_instances.total > 0) parts.push_back("old " + formatCount(sample.old_instances));
  if (std::string tail = messageAndWaitingFor(sample); !tail.empty()) parts.push_back(tail);
  // Newlines and tabs too: the line must stay one line of known width.
  std::string flat = stripTerminalControls(joinParts(parts));
  std::replace_if(flat.begin(), flat.end(), [](char c) { return c == '\n' || c == '\t'; }, ' ');
  return firstColumns(flat, (width > 1 ? width : kDefaultTerminalWidth) - 1);
}

std::string redrawProgressLine(const RolloutSample& sample, int width) {
  return "\r" + formatProgressLine(sample, width) + "\x1b[K";
}

Json watchJson(const RolloutSample& sample, TimePoint when) {
  auto count = [](const InstanceCount& c) { return Json{{"total", c.total}, {"ready", c.ready}}; };
  return Json{{"at", formatTimestamp(when)},
              {"plan", sample.plan},
              {"deployment_id", sample.deployment_id},
              {"state", sample.state},
              {"message", sample.message},
              {"step", sample.step ? Json(*sample.step) : Json(nullptr)},
              {"steps", sample.steps ? Json(*sample.steps) : Json(nullptr)},
              {"weights", sample.weights},
              {"waiting_for", sample.waiting_for},
              {"instances", {{"new", count(sample.new_instances)}, {"old", count(sample.old_instances)}}}};
}

void printRolloutSection(std::ostream& out, const Json& plan, const Json& deployment, TimePoint now,
                         const Json& waiting_for_approval) {
  RolloutSample sample = sampleRollout(Json::object(), deployment);
  printHeading(out, "Rollout");
  printField(out, "Deployment ID", sample.deployment_id, true);
  printField(out, "Strategy", strategyScript(plan, deployment), true);
  if (Json params = strategyParams(plan, deployment); !params.empty())
    printField(out, "Strategy Params", params.dump(), true);
  printField(out, "State", sample.state, true);
  printField(out, "Message", sample.message, true);
  if (std::string step = formatStep(sample); !step.empty()) printField(out, "Step", step, true);
  if (std::string weights = formatWeights(sample.weights); !weights.empty()) printField(out, "Weights", weights, true);
  if (!sample.waiting_for.empty()) printField(out, "Waiting For", sample.waiting_for, true);
  const Json& signals = at(deployment, {"signals"});
  if (const Json& hold = at(signals, {kHoldSignal}); hold.is_object()) {
    std::string held = byAt(hold);
    if (std::string reason = text(hold, {"reason"}); !reason.empty()) held += (held.empty() ? "" : ": ") + reason;
    printField(out, "Paused By", held.empty() ? "a user" : held, true);
  }
  if (const Json& hook = at(signals, {model::kHookHoldSignal}); hook.is_object()) {
    std::string held = text(hook, {"message"});
    if (std::string since = text(hook, {"since"}); !since.empty()) held += " (since " + since + ")";
    printField(out, "Held By Hook", held, true);
  }
  printTiming(out, deployment, now);
  if (const Json& restore = at(signals, {kRestoreSignal}); restore.is_object()) {
    printField(out, "Restored", describeRestore(restore), true);
  }
  if (std::string pending = describePendingSignals(signals); !pending.empty()) {
    printField(out, "Pending Signals", pending, true);
  }
  std::string approved_by;
  for (const model::GivenApproval& approval : model::rolloutApprovals(signals)) {
    approved_by += (approved_by.empty() ? "" : "\n") + approval.actor + " at " + approval.at +
                   (approval.reason.empty() ? "" : ": " + approval.reason);
  }
  if (!approved_by.empty()) printField(out, "Rollout Approved By", approved_by, true);
  if (rolloutOver(text(deployment, {"state"}))) return;
  // What of it waits for people: each operation, and the approvals it still needs.
  std::string waiting;
  for (const Json& operation : items(waiting_for_approval)) {
    if (text(operation, {"deployment"}) != text(deployment, {"deployment_id"})) continue;
    std::string line = "operation " + text(operation, {"id"}) + " (" + text(operation, {"type"}) + " " +
                       text(operation, {"meta_instance"}) + ")";
    if (std::string approvals = text(operation, {"approvals"}); !approvals.empty()) line += ": " + approvals;
    const Json& needed = at(operation, {"still_needed"});
    if (needed.is_number_integer() && needed.get<int64_t>() > 0) line += "; " + text(needed) + " more needed";
    waiting += (waiting.empty() ? "" : "\n") + line;
  }
  if (!waiting.empty()) printField(out, "Waiting For Approval", waiting, true);
}

}  // namespace tide::cli
