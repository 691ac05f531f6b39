#include "host/api/command_access.h"

#include <string_view>

#include "host/config/host_config.h"

namespace tide::api {
namespace {

// OK when `caller` may run `program`; otherwise the refusal naming `field`.
Status mayRun(const ApiContext& context, const Principal& caller, std::string_view program, const std::string& field,
              std::string_view what) {
  if (caller.role == Role::kAdmin) return Status::ok();
  if (config::commandAllowed(context.command_allow, program)) return Status::ok();
  std::string rule = std::string(what) + " needs the admin role unless its program (\"" + std::string(program) +
                     "\") matches process.command_allow; image coordinates from the image catalog need no more "
                     "than operator";
  return Status(Code::kPermissionDenied, field + ": " + rule, {{field, rule, ""}});
}

}  // namespace

Status checkCommandAccess(const ApiContext& context, const Principal& caller, const model::Plan& plan) {
  for (size_t i = 0; i < plan.applications.size(); ++i) {
    const auto& check = plan.applications[i].health_check;
    if (!check || check->type != "exec") continue;
    const std::string program = check->command.empty() ? "" : check->command.front();
    TIDE_RETURN_IF_ERROR(mayRun(context, caller, program,
                                "applications[" + std::to_string(i) + "].health_check.command",
                                "an exec health check"));
  }
  return Status::ok();
}

Status checkCommandAccess(const ApiContext& context, const Principal& caller, const model::Deployment& deployment) {
  for (size_t i = 0; i < deployment.payload_coordinates.size(); ++i) {
    const model::Json& coordinates = deployment.payload_coordinates[i].coordinates;
    if (!coordinates.is_object() || !coordinates.contains("command")) continue;
    const model::Json& command = coordinates["command"];
    // A malformed command never runs (the driver refuses it), but is not let through either.
    const std::string program =
        command.is_array() && !command.empty() && command.front().is_string() ? command.front().get<std::string>() : "";
    TIDE_RETURN_IF_ERROR(mayRun(context, caller, program,
                                "payload_coordinates[" + std::to_string(i) + "].coordinates.command",
                                "a raw command"));
  }
  return Status::ok();
}

}  // namespace tide::api
