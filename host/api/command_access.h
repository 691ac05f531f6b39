#pragma once
// Who may make the host run a program of their choosing (docs/architecture.md#roles).
//
// A deployment whose coordinates are a raw `command`, and a plan with an `exec` health
// check, run whatever the caller names on the host. They need the admin role, unless the
// program (argv[0], as written) matches a glob of the host config's process.command_allow.
// Image coordinates stay open to operators: the host's image catalog decides what they run.
// Checked before anything is written; kPermissionDenied names the field and the rule.

#include "host/api/handler.h"
#include "host/model/records.h"

namespace tide::api {

Status checkCommandAccess(const ApiContext& context, const Principal& caller, const model::Plan& plan);
Status checkCommandAccess(const ApiContext& context, const Principal& caller, const model::Deployment& deployment);

}  // namespace tide::api
