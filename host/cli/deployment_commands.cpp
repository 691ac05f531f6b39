// `tide deployment ...`: deployment plans and the deployments rolled out under them, with
// mrds-ctl's verbs and output.

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "host/cli/commands.h"
#include "host/cli/dry_run_view.h"
#include "host/cli/event_waker.h"
#include "host/cli/joined.h"
#include "host/cli/json_fields.h"
#include "host/cli/rollout_view.h"
#include "host/cli/views.h"
#include "host/config/field_reader.h"
#include "host/config/manifest.h"

namespace tide::cli {
namespace {

Status showPlan(Session& session, const std::string& plan) {
  TIDE_ASSIGN_OR_RETURN(Json view, session.client.get(planPath(plan)));
  session.print(
      view, [](std::ostream& out, const Json& view) { printPlanShow(out, view, std::chrono::system_clock::now()); });
  return Status::ok();
}

void addAddDeploymentVerb(CLI::App& deployment, Verbs& verbs) {
  auto file = std::make_shared<std::string>();
  auto dry_run = std::make_shared<bool>(false);
  CLI::App* verb = verbs.add(
      deployment, "add-deployment", "Roll out a new deployment under its plan (deployment_plan_name)",
      [file, dry_run](Session& session) -> Status {
        TIDE_ASSIGN_OR_RETURN(std::string text, config::readInputFile(*file));
        TIDE_ASSIGN_OR_RETURN(model::Deployment parsed, config::parseDeployment(text, *file));
        TIDE_ASSIGN_OR_RETURN(
            Json added, session.client.postText(withDryRun(planPath(parsed.plan) + "/deployments", *dry_run), text,
                                                "application/yaml"));
        if (*dry_run) {
          session.print(added, [&](std::ostream& out, const Json& reply) {
            out << "Deployment " << parsed.deployment_id << " of plan " << parsed.plan << " would roll out:\n";
            printRolloutPreview(out, at(reply, {"rollout"}));
            out << kNothingWritten << "\n";
          });
          return Status::ok();
        }
        if (!session.json()) session.out << "Deployment added successfully: " << parsed.deployment_id << "\n\n";
        return showPlan(session, parsed.plan);
      });
  verb->add_option("-m,--manifest", *file, "deployment manifest (YAML)")->required();
  verb->add_flag("--dry-run", *dry_run,
                 "say what it would roll out and which approvals and policies would decide it; write nothing");
}

// The plans a file holds, each as the body of its PUT: a file that is one plan goes as it is
// (the server's errors then name its lines); MRDS's `plans:` list, the file `deployment
// create` took, goes plan by plan as JSON.
Result<std::vector<std::pair<std::string, std::string>>> plansToPut(const std::string& text,
                                                                    const std::string& path) {
  if (auto single = config::parsePlan(text, path); single.isOk()) {
    return std::vector<std::pair<std::string, std::string>>{{single->name, text}};
  }
  TIDE_ASSIGN_OR_RETURN(model::Manifest manifest, config::parseManifest(text, path));
  if (manifest.plans.empty() || !manifest.capabilities.empty() || !manifest.clusters.empty() ||
      !manifest.nodes.empty() || !manifest.deployments.empty()) {
    return Status::invalidArgument(path + ": `deployment update` takes plans only (a plan, or a `plans:` list)");
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& plan : manifest.plans) {
    const Json record = plan.value;
    Json body = Json::object();
    for (const char* key : {"name", "namespace", "service_name", "matching_capabilities", "applications", "strategy",
                            "approval", "placement"}) {
      body[key] = record[key];
    }
    out.emplace_back(plan.value.name, body.dump());
  }
  return out;
}

// PUT /v1/plans/{name} for each plan of the file (docs/architecture.md#changing-a-plan): what
// changed, what deserves a look, then the plan as `show` prints it.
void addUpdateVerb(CLI::App& deployment, Verbs& verbs) {
  auto file = std::make_shared<std::string>();
  auto generation = std::make_shared<int64_t>(0);
  auto dry_run = std::make_shared<bool>(false);
  CLI::App* verb = verbs.add(
      deployment, "update", "Change deployment plans for the deployments added from now on",
      [file, generation, dry_run](Session& session) -> Status {
        TIDE_ASSIGN_OR_RETURN(std::string text, config::readInputFile(*file));
        TIDE_ASSIGN_OR_RETURN(auto plans, plansToPut(text, *file));
        const std::string if_match = *generation > 0 ? std::to_string(*generation) : "";
        for (const auto& [name, body] : plans) {
          const bool yaml = body == text;  // the file itself, else a plan of its list as JSON
          Result<Json> reply = session.client.putText(withDryRun(planPath(name), *dry_run), body,
                                                      yaml ? "application/yaml" : "application/json", if_match);
          if (!reply.isOk()) return locateInFile(reply.status(), *file);
          if (session.json()) {
            session.printJson(*reply);
            continue;
          }
          const Json changed = reply->value("changed", Json::array());
          if (*dry_run) {
            session.out << "Deployment plan " << name << (changed.empty() ? ": no change" : " would change: ")
                        << joined(changed, ", ", [](const Json& field) { return cli::text(field); }) << "\n";
            printWarnings(session, *reply, *file);
            session.out << kNothingWritten << "\n";
            continue;
          }
          if (changed.empty()) {
            session.out << "Deployment plan unchanged: " << name << "\n";
          } else {
            session.out << "Deployment plan updated: " << name << " (generation "
                        << (*reply)["metadata"].value("generation", int64_t{0}) << "; changed "
                        << joined(changed, ", ", [](const Json& field) { return cli::text(field); })
                        << "; deployments added from now on use it)\n";
          }
          printWarnings(session, *reply, *file);
          session.out << '\n';
          TIDE_RETURN_IF_ERROR(showPlan(session, name));
        }
        return Status::ok();
      });
  verb->add_option("-m,--manifest", *file, "a plan, or a `plans:` list (YAML): each plan whole, as it should be")
      ->required();
  verb->add_flag("--dry-run", *dry_run, "say which fields would change, with the same checks; write nothing");
  verb->add_option("--generation", *generation,
                   "only if the plan is still at this generation (If-Match; `deployment show -o json` has it)");
}

// POST /v1/plans/{plan}/deployments/{id}/<action>, which replies with the deployment.
void addDeploymentActionVerb(CLI::App& deployment, Verbs& verbs, const std::string& action,
                             const std::string& verb_name, const std::string& description) {
  auto id = std::make_shared<std::string>();
  addNamedVerb(
      deployment, verbs, verb_name, description, "deployment plan name",
      [id, action](Session& session, const std::string& plan) -> Status {
        TIDE_ASSIGN_OR_RETURN(Json reply,
                              session.client.post(planPath(plan) + "/deployments/" + pathSegment(*id) + "/" + action));
        session.print(reply, [&](std::ostream& out, const Json& deployment) {
          out << "Deployment " << *id << " of plan " << plan << ": " << deployment.value("state", action) << '\n';
        });
        return Status::ok();
      })
      ->add_option("-D,--deployment-id", *id, "deployment ID")
      ->required();
}

// --- delete ----------------------------------------------------------------------------------

struct DeleteFlags {
  bool scale_to_zero = false;
  bool no_wait = false;
  std::string reason;
  double interval_seconds = 1;
};

// The states of a teardown's DELETE worth a look while it waits: waiting for a person, or
// ended without removing its instance (the teardown cannot finish by itself), one query's
// `state` list.
std::string deletesToLookAt() {
  using enum model::OperationState;
  std::string out;
  for (model::OperationState state : {kPendingApproval, kRejected, kFailed, kCancelled}) {
    out += (out.empty() ? "" : ",") + model::toString(state);
  }
  return out;
}

// How a teardown stands.
struct TeardownProgress {
  int64_t instances_left = 0;
  std::vector<int64_t> waiting_for_approval;  // the teardown's DELETEs in PENDING_APPROVAL

  bool operator==(const TeardownProgress&) const = default;
};

int64_t operationId(const Json& operation) { return operation.value(Json::json_pointer("/metadata/id"), int64_t{0}); }

std::string idList(const std::vector<int64_t>& ids) {
  return joined(ids, ", ", [](int64_t id) { return std::to_string(id); });
}

// The teardown's DELETEs (`asked`) of plan `plan` that wait for a person or ended without
// removing their instance, in id order.
Result<std::vector<Json>> askedToLookAt(Session& session, const std::string& plan, const std::set<int64_t>& asked) {
  TIDE_ASSIGN_OR_RETURN(
      Json list, session.client.getAll("/v1/operations", {{"plan", plan},
                                                          {"type", model::toString(model::OperationType::kDelete)},
                                                          {"state", deletesToLookAt()}}));
  std::vector<Json> found;
  for (const Json& operation : list["items"]) {
    if (asked.count(operationId(operation))) found.push_back(operation);
  }
  return found;
}

// The deployment ids of a plan view.
std::set<std::string> deploymentIdsOf(const Json& view) {
  std::set<std::string> ids;
  for (const Json& deployment : items(view["deployments"])) ids.insert(deployment.value("deployment_id", ""));
  return ids;
}

// kConflict when plan view `view` has a deployment not in `known`: added after the teardown
// began, its instances keep the plan from reaching zero, and its rollout would go on adding them.
Status checkNoDeploymentAdded(const Json& view, const std::string& plan, const std::set<std::string>& known) {
  for (const Json& deployment : items(view["deployments"])) {
    const std::string id = deployment.value("deployment_id", "");
    if (known.count(id)) continue;
    return Status::conflict("deployment " + id + " was added to plan " + plan + " after its teardown began (it is " +
                                deployment.value("state", "") +
                                "): its instances keep the plan from reaching zero; stop it with `tide deployment "
                                "cancel-deployment " + plan + " -D " + id + "`, then run `tide deployment delete " +
                                plan + " --scale-to-zero` again");
  }
  return Status::ok();
}

// Waits until plan `plan` has no live instance, printing how many are left and which DELETEs
// wait for a person whenever that changes. An error when one of the DELETEs `asked` ended
// without removing its instance (rejected, failed, cancelled), or when the plan has a
// deployment not among `known_deployments` (added since the teardown began).
Status waitForTeardown(Session& session, const std::string& plan, const std::set<int64_t>& asked,
                       const std::set<std::string>& known_deployments, double interval_seconds) {
  EventWaker waker(session.client, "", interval_seconds);
  std::optional<TeardownProgress> shown;
  while (true) {
    TIDE_ASSIGN_OR_RETURN(Json view, session.client.get(planPath(plan), {{"limit", "1"}}));
    TIDE_RETURN_IF_ERROR(checkNoDeploymentAdded(view, plan, known_deployments));
    const Json& left = at(view, {"instance_summary", "total"});
    if (!left.is_number_integer()) return Status::internal("the plan view has no instance_summary.total");
    TeardownProgress progress;
    progress.instances_left = left.get<int64_t>();
    TIDE_ASSIGN_OR_RETURN(std::vector<Json> looked_at, askedToLookAt(session, plan, asked));
    for (const Json& operation : looked_at) {
      const std::string state = operation.value("state", "");
      if (spells(state, model::OperationState::kPendingApproval)) {
        progress.waiting_for_approval.push_back(operationId(operation));
        continue;
      }
      const std::string message = operation.value("message", "");
      return Status::conflict("operation " + std::to_string(operationId(operation)) + " (DELETE of " +
                              operation.value("meta_instance", "") + ") ended " + state +
                              (message.empty() ? "" : ": " + message) + "; plan " + plan + " is not deleted (" +
                              std::to_string(progress.instances_left) + " instance(s) left)");
    }
    if (progress != shown && !session.json()) {
      session.out << toSecond(std::chrono::system_clock::now()) << "  " << progress.instances_left
                  << " instance(s) left";
      if (!progress.waiting_for_approval.empty()) {
        session.out << "; waiting for approval: operation(s) " << idList(progress.waiting_for_approval)
                    << " (tide operations approve ID)";
      }
      session.out << std::endl;
    }
    shown = progress;
    if (progress.instances_left == 0) return Status::ok();
    waker.wait();
  }
}

// `deployment delete PLAN`: DELETE /v1/plans/{name}; with --scale-to-zero, first
// POST /v1/plans/{name}/scale-to-zero and wait until no instance is left.
Status deletePlan(Session& session, const std::string& plan, const DeleteFlags& flags) {
  Json asked = nullptr;
  if (flags.scale_to_zero) {
    // The deployments the teardown knows: those of the plan now and those it cancels (one
    // added in between). Any other was added while it waits.
    TIDE_ASSIGN_OR_RETURN(Json before, session.client.get(planPath(plan), {{"limit", "1"}}));
    std::set<std::string> known_deployments = deploymentIdsOf(before);
    Json body = Json::object();
    if (!flags.reason.empty()) body["reason"] = flags.reason;
    TIDE_ASSIGN_OR_RETURN(asked, session.client.post(planPath(plan) + "/scale-to-zero", body));
    for (const Json& id : items(asked["cancelled_deployments"])) known_deployments.insert(id.get<std::string>());
    std::set<int64_t> ids;
    for (const Json& operation : asked["operations"]) ids.insert(operationId(operation));
    if (!session.json()) {
      const Json& cancelled = asked["cancelled_deployments"];
      if (!cancelled.empty()) {
        session.out << "Cancelled the unfinished deployment(s) of plan " << plan << ": "
                    << joined(cancelled, ", ", [](const Json& id) { return text(id); }) << '\n';
      }
      session.out << "Asked to delete " << ids.size() << " instance(s) of plan " << plan
                  << (ids.empty() ? "" : ": operation(s) " + idList({ids.begin(), ids.end()})) << '\n';
    }
    if (flags.no_wait) {
      session.print(asked, [&](std::ostream& out, const Json&) {
        out << "Not waiting: once no instance is left, `tide deployment delete " << plan << "` deletes the plan\n";
      });
      return Status::ok();
    }
    TIDE_RETURN_IF_ERROR(waitForTeardown(session, plan, ids, known_deployments, flags.interval_seconds));
  }
  Result<Json> deleted = session.client.del(planPath(plan));
  if (!deleted.isOk()) {
    const Status& refused = deleted.status();
    if (flags.scale_to_zero && refused.code() == Code::kPermissionDenied) {
      // Scaling to zero is an operator's; deleting the plan an admin's.
      return Status(refused.code(),
                    "no instance of plan " + plan + " is left, but deleting the plan itself needs the admin role (" +
                        refused.message() + "); an admin runs `tide deployment delete " + plan + "`",
                    refused.details());
    }
    if (refused.code() != Code::kConflict || flags.scale_to_zero) return refused;
    return Status(refused.code(),
                  refused.message() + " (`tide deployment delete " + plan +
                      " --scale-to-zero` deletes its instances, through approval, and then the plan)",
                  refused.details());
  }
  if (!asked.is_null()) (*deleted)["scale_to_zero"] = asked;
  session.print(*deleted, [&](std::ostream& out, const Json&) { out << "Deployment plan deleted: " << plan << '\n'; });
  return Status::ok();
}

void addDeleteVerb(CLI::App& deployment, Verbs& verbs) {
  auto flags = std::make_shared<DeleteFlags>();
  CLI::App* verb = addNamedVerb(
      deployment, verbs, "delete",
      "Delete a deployment plan; with --scale-to-zero, delete its instances first (through approval)",
      "deployment plan name", [flags](Session& session, const std::string& plan) {
        return deletePlan(session, plan, *flags);
      });
  verb->add_flag("--scale-to-zero", flags->scale_to_zero,
                 "cancel the plan's unfinished deployments and ask for a DELETE of every instance, wait until none "
                 "is left (DELETEs that need approval are named), then delete the plan");
  verb->add_flag("--no-wait", flags->no_wait, "with --scale-to-zero: return once the DELETEs are asked for");
  verb->add_option("--reason", flags->reason, "with --scale-to-zero: why, recorded with the teardown (the plan.scale_to_zero event)");
  verb->add_option("--interval", flags->interval_seconds,
                   "seconds between looks when nothing happens (default 1)")
      ->check(CLI::PositiveNumber);
}

}  // namespace

void addDeploymentCommands(CLI::App& app, Verbs& verbs) {
  CLI::App* deployment = addNoun(app, "deployment", "Deployment plans and their deployments");
  addCreateVerb(*deployment, verbs, "Create deployment plans (and their deployments) from a manifest");
  verbs.add(*deployment, "list", "List deployment plans", [](Session& session) -> Status {
    TIDE_ASSIGN_OR_RETURN(Json list, session.client.getAll("/v1/plans"));
    if (session.json()) {
      session.printJson(list);
      return Status::ok();
    }
    return printPlanList(session, list["items"]);
  });
  addNamedVerb(*deployment, verbs, "show", "Show a deployment plan with its deployments, instances and operations",
               "deployment plan name", showPlan);
  addAddDeploymentVerb(*deployment, verbs);
  addUpdateVerb(*deployment, verbs);
  addDeploymentActionVerb(*deployment, verbs, "cancel", "cancel-deployment", "Cancel a deployment of a plan");
  addDeleteVerb(*deployment, verbs);
  addOperationVerbs(*deployment, verbs);
  addRolloutVerbs(*deployment, verbs);
  addScaleVerbs(*deployment, verbs);
}

}  // namespace tide::cli
