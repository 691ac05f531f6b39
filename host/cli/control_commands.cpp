// `tide resume`: ends the control loop's halt (docs/architecture.md#observer) through
// POST /v1/control/resume; the admin role only.

#include "host/cli/commands.h"

namespace tide::cli {

void addControlCommands(CLI::App& app, Verbs& verbs) {
  verbs.add(app, "resume", "End the control loop's halt (after a discrepancy alarm); admin only",
            [](Session& session) -> Status {
              TIDE_ASSIGN_OR_RETURN(Json reply, session.client.post("/v1/control/resume"));
              session.print(reply, [](std::ostream& out, const Json& body) {
                const Json ended = body.value("ended", Json::object());
                out << "Control loop resumed (halted since " << ended.value("since", "?") << ": "
                    << ended.value("reason", "") << ")\n";
              });
              return Status::ok();
            });
}

}  // namespace tide::cli
