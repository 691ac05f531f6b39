// `tide deployment ...`: deployment plans and the deployments rolled out under them, with
// mrds-ctl's verbs and output.

#include <chrono>
#include <memory>

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
  addDeploymentActionVerb(*deployment, verbs, "cancel", "cancel-deployment", "Cancel a deployment of a plan");
  addOperationVerbs(*deployment, verbs);
  addRolloutVerbs(*deployment, verbs);
}

}  // namespace tide::cli
