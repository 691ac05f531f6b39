#pragma once
// Dry runs (docs/api.md#dry-runs): `?dry_run=true` on the routes that apply something
// (manifests, plans, deployments, scale, set-image) runs the request whole — every check,
// error and warning it would give — inside a Ledger::Rehearsal, so nothing is written, and
// says what it would have done: what would be created or changed, which instances a new
// deployment would replace, create or remove, and which approvals its operations would need
// and which policies would decide them.

#include <string>

#include "host/api/handler.h"
#include "host/core/status.h"
#include "host/model/manifest.h"
#include "host/model/records.h"

namespace tide::api {

// `dry_run=true` (or 1) asks for a dry run; false, 0 or absent does not; anything else is
// 400 naming dry_run.
Result<bool> readDryRun(const ApiRequest& request);

// What adding `next` to `plan` would roll out, as `principal`:
// {"deployment": "plan/id", "strategy", "instance_count", "replaces": {"deployment": id or
// null, "instances": live instances of the plan}, "updates", "creates", "removes",
// "approvals": [{"type", "operations", "outcome", "summary", "approvals", "decisions"}]}.
// "approvals" is null, with "approvals_note" saying why, when the host runs without policies.
Result<Json> rolloutPreview(ApiContext& context, const Principal& principal, const model::Plan& plan,
                            const model::Deployment& next);

// POST /v1/manifests?dry_run=true: each record of `manifest` against the ledger —
// {"dry_run": true, "applies": whether POST /v1/manifests would take it as it is,
//  "changes": [{"kind", "name", "location", "action": create | update | unchanged | exists,
//  "changed"?: [fields], "rollout"?: rolloutPreview}], "warnings"}.
// A plan the ledger holds is compared as PUT /v1/plans/{name} would change it ("update" lists
// the fields; `tide deployment update -m` applies them); a capability, cluster, node or
// deployment that exists "exists" (a manifest creates, it never changes). The records to
// create are rehearsed as POST /v1/manifests would apply them: its errors are this call's.
Result<Json> manifestDryRun(ApiContext& context, const Principal& principal, const model::Manifest& manifest);

}  // namespace tide::api
