#pragma once
// Every route handler, by area. Each area lives in routes_<area>.cpp; the route table
// (routes.cpp) is the only caller. See handler.h for the calling convention.

#include <type_traits>

#include "host/api/handler.h"

namespace tide::api {

// The function type every handler has: Result<ApiResponse>(ApiContext&, const ApiRequest&).
using HandlerFunction = std::remove_pointer_t<Handler>;

namespace system {
HandlerFunction healthz, readyz, metrics, openapi;
}
namespace manifests {
HandlerFunction apply;
}
namespace capabilities {
HandlerFunction create, list, get, remove;
}
namespace clusters {
HandlerFunction create, list, get, remove, activate, deactivate;
}
namespace nodes {
HandlerFunction create, list, get, remove, cordon, uncordon, drain;
}
namespace plans {
HandlerFunction create, list, show, update, remove, scaleToZero, scale, setImage;
}
namespace deployments {
HandlerFunction create, list, get, cancel, promote, abort, pause, resume, rollback, retry, approve;

// Adds `deployment` on behalf of `principal` as POST /v1/plans/{name}/deployments does: the
// raw-command rule (command_access.h) and the strategy's params checked, then the ledger.
Result<model::Deployment> addChecked(ApiContext& context, const Principal& principal,
                                     const model::Deployment& deployment);
// addChecked for `request`, answered with the deployment and `extra` keys (201); with
// ?dry_run=true rehearsed instead (dry_run.h), answered 200 with "dry_run" and "rollout"
// (rolloutPreview): what it would roll out, nothing written.
Result<ApiResponse> addAndReply(ApiContext& context, const ApiRequest& request, const model::Deployment& deployment,
                                const Json& extra = Json::object());
}
namespace instances {
HandlerFunction list, get, operate, logs;
}
namespace operations {
HandlerFunction list, get, approve, reject, cancel;

// One person's approval of one operation, as POST /v1/operations/{id}/approve gives it and
// POST .../deployments/{id}/approve gives each operation of a rollout waiting for people:
// refused unless `operation` waits in PENDING_APPROVAL and model::judgeApproval (with the
// host's four-eyes rule) lets `principal` approve it; then recorded by the ledger, which
// asks the rule again. `generation`: the one the caller read (else `operation`'s).
struct ApprovalAsked {
  bool override = false;
  std::string reason;
  ledger::Generation generation;
};
Result<model::Operation> approveAs(ApiContext& context, const Principal& principal, const model::Operation& operation,
                                   ApprovalAsked asked);
// Whether `principal` may approve what `requested_by` asks for under the host's four-eyes
// rule, with both parties' minters: the check a rollout's approval passes once for all of
// its operations, which are requested by whoever added the deployment.
Status checkFourEyes(ApiContext& context, const Principal& principal, const std::string& requested_by);
}
namespace events {
HandlerFunction list, stream;
}
namespace audit {
HandlerFunction verify, doctor;
}
namespace control {
HandlerFunction show, resume;
}
namespace scripts {
HandlerFunction list, reload, evaluate;
}
namespace status {
HandlerFunction show;
}
namespace tokens {
HandlerFunction create, list, revoke;
}
namespace agents {
HandlerFunction desired, report, logs;
}
namespace whoami {
HandlerFunction show;
}
namespace console {
HandlerFunction index, asset;
}

}  // namespace tide::api
