// `tide deployment scale PLAN --instances N` and `tide deployment set-image PLAN APP=IMAGE`:
// a new deployment made from the plan's current one (docs/api.md#scaling-and-new-images),
// which rolls out through the plan's strategy like any other.

#include <memory>
#include <string>
#include <vector>

#include "host/cli/commands.h"
#include "host/cli/dry_run_view.h"

namespace tide::cli {
namespace {

// Prints what was added (or the reply, with -o json); for a dry run, what would roll out.
void printAdded(Session& session, const std::string& plan, const Json& added, const std::string& what) {
  session.print(added, [&](std::ostream& out, const Json& deployment) {
    if (deployment.value("dry_run", false)) {
      out << "Deployment " << deployment.value("deployment_id", "") << " (" << what << ", from "
          << deployment.value("from_deployment", "") << ") would roll out:\n";
      printRolloutPreview(out, at(deployment, {"rollout"}));
      out << kNothingWritten << "\n";
      return;
    }
    out << "Deployment added successfully: " << deployment.value("deployment_id", "") << " (" << what << ", from "
        << deployment.value("from_deployment", "") << ")\n"
        << "It rolls out through the plan's strategy: tide deployment watch " << plan << "\n";
  });
}

}  // namespace

void addScaleVerbs(CLI::App& deployment, Verbs& verbs) {
  auto instances = std::make_shared<int64_t>(-1);
  auto scale_id = std::make_shared<std::string>();
  auto scale_dry_run = std::make_shared<bool>(false);
  CLI::App* scale =
      addNamedVerb(deployment, verbs, "scale", "Roll out the plan's current deployment at another number of instances",
                   "deployment plan name",
                   [instances, scale_id, scale_dry_run](Session& session, const std::string& plan) -> Status {
                     Json body{{"instances", *instances}};
                     if (!scale_id->empty()) body["deployment_id"] = *scale_id;
                     TIDE_ASSIGN_OR_RETURN(
                         Json added, session.client.post(withDryRun(planPath(plan) + "/scale", *scale_dry_run), body));
                     printAdded(session, plan, added, std::to_string(*instances) + " instances");
                     return Status::ok();
                   });
  scale->add_option("--instances", *instances, "how many instances the new deployment asks for")
      ->required()
      ->check(CLI::Range(int64_t{0}, int64_t{10000}));
  scale->add_option("--deployment-id", *scale_id, "the new deployment's id (default: the current one's, numbered up)");
  scale->add_flag("--dry-run", *scale_dry_run,
                  "say what it would roll out and which approvals it would need; write nothing");

  auto images = std::make_shared<std::vector<std::string>>();
  auto image_id = std::make_shared<std::string>();
  auto image_dry_run = std::make_shared<bool>(false);
  CLI::App* set_image = addNamedVerb(
      deployment, verbs, "set-image", "Roll out the plan's current deployment with payloads on new images",
      "deployment plan name", [images, image_id, image_dry_run](Session& session, const std::string& plan) -> Status {
        Json asked = Json::object();
        for (const std::string& pair : *images) {
          const size_t equals = pair.find('=');
          if (equals == std::string::npos || equals == 0 || equals + 1 == pair.size()) {
            return Status::invalidArgument("'" + pair + "' is not PAYLOAD=IMAGE (e.g. nginx-payload=nginx:1.25, or a " +
                                           "tag: nginx-payload=1.25)");
          }
          asked[pair.substr(0, equals)] = pair.substr(equals + 1);
        }
        Json body{{"images", asked}};
        if (!image_id->empty()) body["deployment_id"] = *image_id;
        TIDE_ASSIGN_OR_RETURN(Json added,
                              session.client.post(withDryRun(planPath(plan) + "/set-image", *image_dry_run), body));
        std::string what;
        for (const auto& [payload, image] : asked.items()) {
          what += (what.empty() ? "" : ", ") + payload + "=" + image.get<std::string>();
        }
        printAdded(session, plan, added, what);
        return Status::ok();
      });
  set_image->add_option("images", *images, "PAYLOAD=IMAGE or PAYLOAD=TAG, one or more")->required();
  set_image->add_option("--deployment-id", *image_id,
                        "the new deployment's id (default: the current one's, numbered up)");
  set_image->add_flag("--dry-run", *image_dry_run,
                      "say what it would roll out and which approvals it would need; write nothing");
}

}  // namespace tide::cli
