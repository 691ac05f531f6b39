// `tide plan diff -m FILE`: what applying a manifest would create, change and leave, which
// instances its new deployments would replace, and which approvals and policies would decide
// them (docs/api.md#dry-runs). It writes nothing.

#include <memory>

#include "host/cli/commands.h"
#include "host/cli/dry_run_view.h"

namespace tide::cli {

void addPlanCommands(CLI::App& app, Verbs& verbs) {
  CLI::App* plan = addNoun(app, "plan", "Deployment plans as files: compare one with what the host holds");
  auto file = std::make_shared<std::string>();
  verbs
      .add(*plan, "diff",
           "What applying a manifest would create, change and roll out, and the approvals it would need; "
           "writes nothing",
           [file](Session& session) -> Status {
             TIDE_ASSIGN_OR_RETURN(Json diff, applyManifestFile(session, *file, /*dry_run=*/true));
             session.print(diff, printManifestDiff);
             return Status::ok();
           })
      ->add_option("-m,--manifest", *file, "YAML manifest: plans, their deployments, and any other records")
      ->required();
}

}  // namespace tide::cli
