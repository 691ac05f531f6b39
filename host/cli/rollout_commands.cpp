// `tide deployment promote | abort | pause | resume | rollback | retry | approve | watch`: steering a
// rollout and following it (docs/architecture.md#rollouts, docs/architecture.md#cli-and-host-configuration). Every verb
// acts on the deployment named by -D, else on the plan's newest, and says which one.

#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>

#include "host/cli/commands.h"
#include "host/cli/event_waker.h"
#include "host/cli/json_fields.h"
#include "host/cli/rollout_view.h"
#include "host/model/transitions.h"

namespace tide::cli {
namespace {

std::string deploymentPath(const std::string& plan, const std::string& id) {
  return planPath(plan) + "/deployments/" + pathSegment(id);
}

// The deployment a verb acts on.
struct Target {
  std::string id;
  std::string chosen_as;  // why, when the command line named none: "the newest"

  // "dev-1 of plan nginx-dev-plan (the newest)"
  std::string describe(const std::string& plan) const {
    return id + " of plan " + plan + (chosen_as.empty() ? "" : " (" + chosen_as + ")");
  }
};

// A rollback acts on what serves: a deployment rolled back already, or cancelled, serves
// nothing (after an automatic rollback, the plan's newest is the one rolled back).
bool servesSomething(const Json& deployment) {
  const std::string state = deployment.value("state", "");
  return !spells(state, model::DeploymentState::kRolledBack) && !spells(state, model::DeploymentState::kCancelled);
}

// -D's deployment, else the newest of `deployments` (a plan's, as the API lists them); with
// `serving_only`, the newest that serves something (rollback's).
Result<Target> chooseDeployment(const std::string& plan, const std::string& named, const Json& deployments,
                                bool serving_only = false) {
  if (!named.empty()) return Target{named, ""};
  const Json* newest = newestDeployment(deployments);
  if (newest == nullptr) return Status::notFound("plan " + plan + " has no deployments");
  if (!serving_only) return Target{newest->value("deployment_id", ""), "the newest"};
  newest = newestDeployment(deployments, servesSomething);
  if (newest == nullptr) {
    return Status::notFound("plan " + plan + " has no deployment to roll back: every one is rolled back or cancelled");
  }
  return Target{newest->value("deployment_id", ""), "the newest not rolled back"};
}

Result<Target> chooseDeployment(Session& session, const std::string& plan, const std::string& named,
                                bool serving_only = false) {
  if (!named.empty()) return Target{named, ""};
  TIDE_ASSIGN_OR_RETURN(Json list, session.client.getAll(planPath(plan) + "/deployments"));
  return chooseDeployment(plan, named, list["items"], serving_only);
}

// --- promote, abort, pause, resume, rollback, retry ---------------------------------------

struct RolloutControl {
  const char* action;  // the verb, and the route's last segment
  const char* description;
  bool takes_reason;
  bool takes_full;
  bool takes_to = false;  // rollback: --to REVISION
};

constexpr RolloutControl kRolloutControls[] = {
    {"promote", "Promote a rollout past its current pause (--full: straight to the end)", true, true},
    {"abort", "Abort a rollout in progress and restore the previous deployment", true, false},
    {"pause", "Hold a rollout where it is until it is resumed", true, false},
    {"resume", "Resume a rollout held by pause", false, false},
    {"rollback",
     "Roll the newest deployment not rolled back already back to the last completed one (--to: to an earlier one)",
     true, false, true},
    {"retry", "Start a failed or aborted rollout again", false, false},
};

// How long `promote` waits, by default, for the rollout to take its promotion up before it
// says it has not.
constexpr double kPromotionWaitSeconds = 20;

bool promotionPending(const Json& deployment) {
  const Json& signals = deployment.contains("signals") ? deployment["signals"] : Json();
  return signals.is_object() && (signals.contains("promote") || signals.contains("promote_full"));
}

struct ControlFlags {
  std::string deployment_id;
  std::string reason;
  std::string to;  // rollback only
  bool full = false;
  double wait_seconds = kPromotionWaitSeconds;  // promote only
};

Status controlRollout(Session& session, const std::string& plan, const RolloutControl& control,
                      const ControlFlags& flags) {
  TIDE_ASSIGN_OR_RETURN(Target target, chooseDeployment(session, plan, flags.deployment_id, control.takes_to));
  Json body = Json::object();
  if (flags.full) body["full"] = true;
  if (!flags.reason.empty()) body["reason"] = flags.reason;
  if (!flags.to.empty()) body["to"] = flags.to;
  const std::string path = deploymentPath(plan, target.id);
  TIDE_ASSIGN_OR_RETURN(Json reply, session.client.post(path + "/" + control.action, body));
  // A promotion is a signal the rollout's next pass takes up; the reply still shows the
  // state from before it. Print the state the promotion led to, once the signal is taken.
  bool pending = promotionPending(reply);
  if (pending && flags.wait_seconds > 0) {
    EventWaker waker(session.client, "deployment/" + plan + "/" + target.id, 1);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(flags.wait_seconds);
    while (pending && std::chrono::steady_clock::now() < give_up) {
      waker.wait();
      TIDE_ASSIGN_OR_RETURN(reply, session.client.get(path));
      pending = promotionPending(reply);
    }
  }
  session.print(reply, [&](std::ostream& out, const Json& deployment) {
    std::string message = deployment.value("message", "");
    out << "Deployment " << target.describe(plan) << ": " << deployment.value("state", "")
        << (message.empty() ? "" : " (" + message + ")")
        << (pending ? "; the promotion is recorded, the rollout has not taken it up yet" : "") << '\n';
  });
  return Status::ok();
}

void addControlVerb(CLI::App& deployment, Verbs& verbs, const RolloutControl& control) {
  auto flags = std::make_shared<ControlFlags>();
  CLI::App* verb = addNamedVerb(deployment, verbs, control.action, control.description, "deployment plan name",
                                [flags, &control](Session& session, const std::string& plan) {
                                  return controlRollout(session, plan, control, *flags);
                                });
  verb->add_option("-D,--deployment-id", flags->deployment_id,
                   control.takes_to ? "the deployment (default: the plan's newest not rolled back already)"
                                    : "the deployment (default: the plan's newest)");
  if (control.takes_reason) verb->add_option("--reason", flags->reason, "recorded with the control");
  if (control.takes_to) {
    verb->add_option("--to", flags->to,
                     "the earlier deployment (its id) to restore; the completed ones after it are rolled back too "
                     "(default: the newest earlier one that completed)");
  }
  if (control.takes_full) {
    verb->add_flag("--full", flags->full, "skip the remaining steps and pauses");
    verb->add_option("--wait", flags->wait_seconds,
                     "seconds to wait for the rollout to take the promotion up and print the state it led to (0: "
                     "print at once)")
        ->check(CLI::Range(0.0, 3600.0));
  }
}

// --- approve ------------------------------------------------------------------------------

struct ApproveFlags {
  std::string deployment_id;
  std::string reason;
};

// "  operation 7 (UPDATE web-x): APPROVED" and what became of each that waited.
std::string describeRolloutOutcome(const Json& outcome) {
  std::string line = "  operation " + std::to_string(outcome.value("id", int64_t{0})) + " (" +
                     outcome.value("type", "") + " " + outcome.value("meta_instance", "") + "): ";
  if (outcome.contains("refused")) return line + "not approved: " + outcome.value("refused", "");
  const std::string state = outcome.value("state", "");
  const std::string approvals = outcome.value("approvals", "");
  if (spells(state, model::OperationState::kApproved)) return line + "approved";
  return line + "still waiting" + (approvals.empty() ? "" : ": " + approvals);
}

// POST .../approve: the caller's approval of the whole rollout (docs/architecture.md#approving-a-rollout).
Status approveRollout(Session& session, const std::string& plan, const ApproveFlags& flags) {
  TIDE_ASSIGN_OR_RETURN(Target target, chooseDeployment(session, plan, flags.deployment_id));
  Json body = Json::object();
  if (!flags.reason.empty()) body["reason"] = flags.reason;
  TIDE_ASSIGN_OR_RETURN(Json reply, session.client.post(deploymentPath(plan, target.id) + "/approve", body));
  session.print(reply, [&](std::ostream& out, const Json& deployment) {
    out << "Approved the rollout of deployment " << target.describe(plan) << " (" << deployment.value("state", "")
        << "): each operation it asks for that waits for approval gets your "
        << "approval\n";
    const Json& outcomes = deployment.contains("operations") ? deployment["operations"] : Json();
    if (!outcomes.is_array() || outcomes.empty()) {
      out << "No operation of it is waiting for approval now\n";
      return;
    }
    out << "Waiting now:\n";
    for (const Json& outcome : outcomes) out << describeRolloutOutcome(outcome) << '\n';
  });
  return Status::ok();
}

void addApproveVerb(CLI::App& deployment, Verbs& verbs) {
  auto flags = std::make_shared<ApproveFlags>();
  CLI::App* verb = addNamedVerb(
      deployment, verbs, "approve",
      "Approve a whole rollout: every operation of it that waits for approval, now and as it goes on, gets your "
      "approval (one audit record each; the policies' rules still apply)",
      "deployment plan name",
      [flags](Session& session, const std::string& plan) { return approveRollout(session, plan, *flags); });
  verb->add_option("-D,--deployment-id", flags->deployment_id, "the deployment (default: the plan's newest)");
  verb->add_option("--reason", flags->reason, "recorded with the approval of each operation");
}

// --- watch ----------------------------------------------------------------------------------

struct WatchFlags {
  std::string deployment_id;
  double interval_seconds = 1;
  bool no_progress = false;
  const CLI::Option* output = nullptr;  // the verb's -o, to tell `-o table` from the default
};

enum class WatchOutput { kProgressLine, kTextLines, kJsonLines };

// What `watch` prints: `-o json` a JSON object per change, `-o table` (or --no-progress) a
// readable line per change; neither, a progress line redrawn on a terminal and JSON lines
// (NDJSON) into a pipe or a file, for the scripts that read them.
WatchOutput chooseWatchOutput(const Session& session, const WatchFlags& flags) {
  if (session.json()) return WatchOutput::kJsonLines;
  const bool table_asked = flags.output != nullptr && flags.output->count() > 0;
  if (flags.no_progress || table_asked) return WatchOutput::kTextLines;
  return session.terminal != nullptr ? WatchOutput::kProgressLine : WatchOutput::kJsonLines;
}

// The line `watch` redraws on a terminal; ended with a newline once anything was drawn, so
// what follows (the shell's prompt, an error) starts on a line of its own.
class ProgressLine {
 public:
  explicit ProgressLine(std::ostream& terminal) : terminal_(terminal) {}
  ~ProgressLine() {
    if (drawn_) terminal_ << '\n' << std::flush;
  }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void draw(const RolloutSample& sample) {
    terminal_ << redrawProgressLine(sample, width()) << std::flush;
    drawn_ = true;
  }

 private:
  static int width() {
    winsize size{};
    return ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 ? size.ws_col : 0;
  }

  std::ostream& terminal_;
  bool drawn_ = false;
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
  EventWaker waker(session.client, "deployment/" + plan + "/" + target.id, flags.interval_seconds);
  const WatchOutput output = chooseWatchOutput(session, flags);
  if (output != WatchOutput::kJsonLines) session.out << "Watching deployment " << target.describe(plan) << '\n';
  std::optional<ProgressLine> bar;
  if (output == WatchOutput::kProgressLine) {
    session.out.flush();
    bar.emplace(*session.terminal);
  }
  std::optional<RolloutSample> shown;
  while (true) {
    const Json* deployment = findDeployment(view["deployments"], target.id);
    if (deployment == nullptr) return Status::notFound("plan " + plan + " has no deployment " + target.id);
    RolloutSample sample = sampleRollout(view, *deployment);
    if (sample != shown) {
      TimePoint now = std::chrono::system_clock::now();
      if (bar) {
        bar->draw(sample);
      } else {
        session.out << (output == WatchOutput::kJsonLines ? watchJson(sample, now).dump() : formatWatchLine(sample, now))
                    << '\n';
        session.out.flush();
      }
      shown = sample;
    }
    if (rolloutOver(sample.state)) {
      if (spells(sample.state, model::DeploymentState::kCompleted)) return Status::ok();
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
      "Follow a rollout until it ends (a progress line on a terminal, JSON lines into a pipe, readable lines with "
      "-o table): exit 0 when it completes, 1 when it fails, is cancelled or rolled back",
      "deployment plan name",
      [flags](Session& session, const std::string& plan) { return watchRollout(session, plan, *flags); });
  verb->add_option("-D,--deployment-id", flags->deployment_id, "the deployment (default: the plan's newest)");
  verb->add_option("--interval", flags->interval_seconds,
                   "seconds between looks when nothing about the deployment happens (default 1)")
      ->check(CLI::PositiveNumber);
  verb->add_flag("--no-progress", flags->no_progress,
                 "print a readable line per change (as -o table) instead of a progress line on a terminal or JSON "
                 "lines into a pipe");
  flags->output = verb->get_option("--output");
}

}  // namespace

void addRolloutVerbs(CLI::App& deployment, Verbs& verbs) {
  for (const RolloutControl& control : kRolloutControls) addControlVerb(deployment, verbs, control);
  addApproveVerb(deployment, verbs);
  addWatchVerb(deployment, verbs);
}

}  // namespace tide::cli
