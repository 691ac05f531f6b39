#pragma once
// How the CLI shows a rollout in progress, as pure functions of the server's JSON: the
// "Rollout" section of `tide deployment show` and the lines of `tide deployment watch`.
// A deployment's JSON carries the strategy's own `rollout_state` (by convention `step`,
// `steps`, `weights` {new, old}, `waiting_for`; a strategy may keep none of them), its
// `signals` (one-shot controls not yet consumed, plus the persistent `hold` and
// `restore`), and its timing (`started_at`, `completed_at`, `paused_seconds`,
// `paused_since`). Missing keys leave their line out rather than failing.

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "host/core/clock.h"

namespace tide::cli {

using Json = nlohmann::json;

// The newest of a plan's deployments (the highest metadata.id, ties broken by the later
// created_at); nullptr when there is none.
// The newest of `deployments` (by id) that `eligible` accepts (every one without it).
const Json* newestDeployment(const Json& deployments, const std::function<bool(const Json&)>& eligible = {});

// "2026-11-21T15:46:15Z": the ledger's timestamps without their milliseconds.
std::string toSecond(TimePoint when);

// "45s", "2m05s", "1h02m03s"; negative durations count as 0.
std::string formatDuration(double seconds);

// How many of a version's meta instances exist and how many of them serve.
struct InstanceCount {
  int64_t total = 0;
  int64_t ready = 0;  // the active runtime instance is RUNNING and healthy

  bool operator==(const InstanceCount&) const = default;
};

// One look at a rollout: what `tide deployment watch` compares between looks and prints.
struct RolloutSample {
  std::string plan;
  std::string deployment_id;
  std::string state;
  std::string message;
  std::optional<int64_t> step;   // 1-based, when the strategy keeps one
  std::optional<int64_t> steps;  // a count, or the length of a list of steps
  Json weights;                  // {new, old}, or null
  std::string waiting_for;       // "" once the deployment is in a terminal state
  InstanceCount new_instances;   // meta instances of this deployment
  InstanceCount old_instances;   // live meta instances of earlier deployments
  int64_t instance_count = 0;    // how many instances the deployment asks for

  // Whether anything watch reports differs: state, message, step, weights, waiting_for
  // or the instance counts.
  bool operator==(const RolloutSample&) const = default;
};

// `deployment` (one of the deployments of `plan_view`, the GET /v1/plans/{name} view) with
// the counts of the view's instances.
RolloutSample sampleRollout(const Json& plan_view, const Json& deployment);

// "2026-11-21T15:46:15Z  PAUSED  step 2/3  weights new 50 / old 50  new 1/1 ready, old 2/2 ready
// waiting for promotion" (one line; the step and weights only when the strategy keeps them;
// the message, then waiting_for unless the message already says it).
std::string formatWatchLine(const RolloutSample& sample, TimePoint when);
// The same as one JSON object, for `-o json` (one object per line).
Json watchJson(const RolloutSample& sample, TimePoint when);

// `tide deployment watch` on a terminal: one line that redraws in place. The line is
// "dev-1  IN_PROGRESS  [########............] 2/5 ready  step 1/3  weights new 20 / old 80
// old 3/3 ready  waiting for: ..." (the step, weights and old instances only when there are
// any; the bar and count are of the new instances ready out of instance_count; the message,
// then waiting_for unless the message already says it), stripped of terminal controls and cut
// to `width` - 1 characters so that the terminal never wraps it.
std::string formatProgressLine(const RolloutSample& sample, int width);
// "\r", the line, then "\x1b[K" (erase what a longer line before it left).
std::string redrawProgressLine(const RolloutSample& sample, int width);

// The "Rollout" section of `tide deployment show` for `deployment` under `plan` (the plan
// record, whose strategy the deployment's may override). Times are measured to `now`.
// `waiting_for_approval`: the plan view's operations waiting for people ({id, type,
// meta_instance, deployment, approvals, still_needed}); those of `deployment` are named.
void printRolloutSection(std::ostream& out, const Json& plan, const Json& deployment, TimePoint now,
                         const Json& waiting_for_approval = Json::array());

}  // namespace tide::cli
