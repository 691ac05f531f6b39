// `tide deployment promote | abort | pause | resume | rollback | retry | watch`: steering a
// rollout and following it (docs/architecture.md#rollouts, docs/architecture.md#cli-and-host-configuration). Every verb
// acts on the deployment named by -D, else on the plan's newest, and says which one.

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <thread>

#include "host/cli/commands.h"
#include "host/cli/rollout_view.h"
#include "host/model/transitions.h"

namespace tide::cli {
namespace {

// The events long poll lasts whole seconds, at most this many (the server's limit).
constexpr double kMaxEventWaitSeconds = 60;

std::string deploymentPath(const std::string& plan, const std::string& id) {
  return planPath(plan) + "/deployments/" + pathSegment(id);
}

// The deployment a verb acts on.
struct Target {
  std::string id;
  bool newest = false;  // chosen because the command line named none

  // "dev-1 of plan nginx-dev-plan (the newest)"
  std::string describe(const std::string& plan) const {
    return id + " of plan " + plan + (newest ? " (the newest)" : "");
  }
};

// -D's deployment, else the newest of `deployments` (a plan's, as the API lists them).
Result<Target> chooseDeployment(const std::string& plan, const std::string& named, const Json& deployments) {
  if (!named.empty()) return Target{named, false};
  const Json* newest = newestDeployment(deployments);
  if (newest == nullptr) return Status::notFound("plan " + plan + " has no deployments");
  return Target{newest->value("deployment_id", ""), true};
}

Result<Target> chooseDeployment(Session& session, const std::string& plan, const std::string& named) {
  if (!named.empty()) return Target{named, false};
  TIDE_ASSIGN_OR_RETURN(Json list, session.client.getAll(planPath(plan) + "/deployments"));
  return chooseDeployment(plan, named, list["items"]);
}

// --- promote, abort, pause, resume, rollback, retry ---------------------------------------

struct RolloutControl {
  const char* action;  // the verb, and the route's last segment
  const char* description;
  bool takes_reason;
  bool takes_full;
};

constexpr RolloutControl kRolloutControls[] = {
    {"promote", "Promote a rollout past its current pause (--full: straight to the end)", true, true},
    {"abort", "Abort a rollout in progress and restore the previous deployment", true, false},
    {"pause", "Hold a rollout where it is until it is resumed", true, false},
    {"resume", "Resume a rollout held by pause", false, false},
    {"rollback", "Roll back to the last completed deployment", true, false},
    {"retry", "Start a failed or aborted rollout again", false, false},
};

struct ControlFlags {
  std::string deployment_id;
  std::string reason;
  bool full = false;
};

Status controlRollout(Session& session, const std::string& plan, const RolloutControl& control,
                      const ControlFlags& flags) {
  TIDE_ASSIGN_OR_RETURN(Target target, chooseDeployment(session, plan, flags.deployment_id));
  Json body = Json::object();
  if (flags.full) body["full"] = true;
  if (!flags.reason.empty()) body["reason"] = flags.reason;
  TIDE_ASSIGN_OR_RETURN(Json reply, session.client.post(deploymentPath(plan, target.id) + "/" + control.action, body));
  session.print(reply, [&](std::ostream& out, const Json& deployment) {
    std::string message = deployment.value("message", "");
    out << "Deployment " << target.describe(plan) << ": " << deployment.value("state", "")
        << (message.empty() ? "" : " (" + message + ")") << '\n';
  });
  return Status::ok();
}

void addControlVerb(CLI::App& deployment, Verbs& verbs, const RolloutControl& control) {
  auto flags = std::make_shared<ControlFlags>();
  CLI::App* verb = addNamedVerb(deployment, verbs, control.action, control.description, "deployment plan name",
                                [flags, &control](Session& session, const std::string& plan) {
                                  return controlRollout(session, plan, control, *flags);
                                });
  verb->add_option("-D,--deployment-id", flags->deployment_id, "the deployment (default: the plan's newest)");
  if (control.takes_reason) verb->add_option("--reason", flags->reason, "recorded with the control");
  if (control.takes_full) verb->add_flag("--full", flags->full, "skip the remaining steps and pauses");
}

// --- watch ----------------------------------------------------------------------------------

struct WatchFlags {
  std::string deployment_id;
  double interval_seconds = 1;
};

// Waits until the deployment may have changed: the events long poll for its subject
// returns as soon as the ledger records something about it, and after `interval` at the
// latest (whole seconds), so instance changes, which are events of other subjects, are
// seen too. When the server's events cannot be read, it sleeps `interval` instead.
class RolloutWaker {
 public:
  RolloutWaker(Client& client, std::string subject, double interval_seconds)
      : client_(client), subject_(std::move(subject)), interval_seconds_(interval_seconds) {
    Result<Json> seen = client_.getAll("/v1/events", {{"subject", subject_}});
    if (seen.isOk()) advancePast((*seen)["items"]);
  }

  void wait() {
    double wait_seconds = std::clamp(std::ceil(interval_seconds_), 1.0, kMaxEventWaitSeconds);
    Result<Json> page = client_.get("/v1/events", {{"after", std::to_string(after_)},
                                                   {"subject", subject_},
                                                   {"wait", std::to_string(static_cast<int>(wait_seconds))}});
    if (page.isOk()) {
      advancePast((*page)["items"]);
      return;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(interval_seconds_));
  }

 private:
  void advancePast(const Json& events) {
    if (events.is_array() && !events.empty()) after_ = events.back().value("seq", after_);
  }

  Client& client_;
  const std::string subject_;
  const double interval_seconds_;
  int64_t after_ = 0;
};

const Json* findDeployment(const Json& deployments, const std::string& id) {
  if (!deployments.is_array()) return nullptr;
  for (const Json& deployment : deployments) {
    if (deployment.value("deployment_id", "") == id) return &deployment;
  }
  return nullptr;
}

// Prints a line (or a JSON object) each time the rollout changes, until it ends: ok when
// it COMPLETED, an error carrying its final message otherwise. Stops early, without an
// error, once the output is closed.
Status watchRollout(Session& session, const std::string& plan, const WatchFlags& flags) {
  TIDE_ASSIGN_OR_RETURN(Json view, session.client.get(planPath(plan)));
  TIDE_ASSIGN_OR_RETURN(Target target, chooseDeployment(plan, flags.deployment_id, view["deployments"]));
  RolloutWaker waker(session.client, "deployment/" + plan + "/" + target.id, flags.interval_seconds);
  if (!session.json()) session.out << "Watching deployment " << target.describe(plan) << '\n';
  std::optional<RolloutSample> shown;
  while (true) {
    const Json* deployment = findDeployment(view["deployments"], target.id);
    if (deployment == nullptr) return Status::notFound("plan " + plan + " has no deployment " + target.id);
    RolloutSample sample = sampleRollout(view, *deployment);
    if (sample != shown) {
      TimePoint now = std::chrono::system_clock::now();
      session.out << (session.json() ? watchJson(sample, now).dump() : formatWatchLine(sample, now)) << '\n';
      session.out.flush();
      shown = sample;
    }
    if (model::isRolloutOver(sample.state)) {
      if (sample.state == "COMPLETED") return Status::ok();
      return Status::conflict("deployment " + target.id + " of plan " + plan + " ended " + sample.state +
                              (sample.message.empty() ? "" : ": " + sample.message));
    }
    if (!session.out) return Status::ok();
    waker.wait();
    TIDE_ASSIGN_OR_RETURN(view, session.client.get(planPath(plan)));
  }
}

void addWatchVerb(CLI::App& deployment, Verbs& verbs) {
  auto flags = std::make_shared<WatchFlags>();
  CLI::App* verb = addNamedVerb(
      deployment, verbs, "watch",
      "Follow a rollout until it ends: exit 0 when it completes, 1 when it fails, is cancelled or rolled back",
      "deployment plan name",
      [flags](Session& session, const std::string& plan) { return watchRollout(session, plan, *flags); });
  verb->add_option("-D,--deployment-id", flags->deployment_id, "the deployment (default: the plan's newest)");
  verb->add_option("--interval", flags->interval_seconds,
                   "seconds between looks when nothing about the deployment happens (default 1)")
      ->check(CLI::PositiveNumber);
}

}  // namespace

void addRolloutVerbs(CLI::App& deployment, Verbs& verbs) {
  for (const RolloutControl& control : kRolloutControls) addControlVerb(deployment, verbs, control);
  addWatchVerb(deployment, verbs);
}

}  // namespace tide::cli
