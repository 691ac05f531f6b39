// `tide deployment ...`: deployment plans and the deployments rolled out under them, with
// mrds-ctl's verbs and output.

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "host/cli/commands.h"
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
  verbs
      .add(deployment, "add-deployment", "Roll out a new deployment under its plan (deployment_plan_name)",
           [file](Session& session) -> Status {
             TIDE_ASSIGN_OR_RETURN(std::string text, config::readInputFile(*file));
             TIDE_ASSIGN_OR_RETURN(model::Deployment parsed, config::parseDeployment(text, *file));
             TIDE_RETURN_IF_ERROR(
                 session.client.postText(planPath(parsed.plan) + "/deployments", text, "application/yaml").status());
             if (!session.json()) session.out << "Deployment added successfully: " << parsed.deployment_id << "\n\n";
             return showPlan(session, parsed.plan);
           })
      ->add_option("-m,--manifest", *file, "deployment manifest (YAML)")
      ->required();
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
  CLI::App* verb = verbs.add(
      deployment, "update", "Change deployment plans for the deployments added from now on",
      [file, generation](Session& session) -> Status {
        TIDE_ASSIGN_OR_RETURN(std::string text, config::readInputFile(*file));
        TIDE_ASSIGN_OR_RETURN(auto plans, plansToPut(text, *file));
        const std::string if_match = *generation > 0 ? std::to_string(*generation) : "";
        for (const auto& [name, body] : plans) {
          const bool yaml = body == text;  // the file itself, else a plan of its list as JSON
          Result<Json> reply =
              session.client.putText(planPath(name), body, yaml ? "application/yaml" : "application/json", if_match);
          if (!reply.isOk()) return locateInFile(reply.status(), *file);
          if (session.json()) {
            session.printJson(*reply);
            continue;
          }
          const Json changed = reply->value("changed", Json::array());
          if (changed.empty()) {
            session.out << "Deployment plan unchanged: " << name << "\n";
          } else {
            std::string fields;
            for (const Json& field : changed) fields += (fields.empty() ? "" : ", ") + field.get<std::string>();
            session.out << "Deployment plan updated: " << name << " (generation "
                        << (*reply)["metadata"].value("generation", int64_t{0}) << "; changed " << fields
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
  addOperationVerbs(*deployment, verbs);
  addRolloutVerbs(*deployment, verbs);
}

}  // namespace tide::cli
