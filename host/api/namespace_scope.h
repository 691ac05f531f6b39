#pragma once
// Namespace-scoped tokens (docs/architecture.md#namespace-scoped-tokens). A token minted with
// `namespaces: [prod]` holds its role only in those namespaces: it reads everything a viewer
// may, but its writes and approvals reach only plans of those namespaces, and routes that act
// on the whole fleet (nodes, clusters, capabilities, tokens, scripts, control) refuse it.
//
// The route table says where each route acts (Route::scope); authorizeScope() finds the
// namespace before the handler runs. Handlers whose body names the namespaces (POST /v1/plans,
// PUT /v1/plans/{name}, POST /v1/manifests) call authorizeNamespace() for each of them.

#include <string>
#include <string_view>

#include "host/api/handler.h"
#include "host/api/routes.h"
#include "host/core/status.h"
#include "host/ledger/ledger.h"
#include "host/model/manifest.h"

namespace tide::api {

// Whether `principal` acts in every namespace (its token names none).
inline bool actsEverywhere(const Principal& principal) { return principal.namespaces.empty(); }

// kPermissionDenied, naming the principal's namespaces and `what` ("plan 'web'"), unless
// `principal` acts in `ns`.
Status authorizeNamespace(const Principal& principal, const std::string& ns, std::string_view what);

// Whether `principal` may apply `manifest`: a scoped principal only plans of its namespaces
// (the namespace written and, for a plan the ledger holds, the one it is in) and deployments
// of such plans, no fleet records (capabilities, clusters, nodes). The error names the
// record's location.
Status authorizeManifest(ledger::Ledger& ledger, const Principal& principal, const model::Manifest& manifest);

// For a route that needs more than the viewer role: whether `request.principal` may act where
// `route` acts (Route::scope). Ok for an unscoped principal, and when the target does not
// exist (the handler answers 404 as for anyone who may read it).
Status authorizeScope(ledger::Ledger& ledger, const Route& route, const ApiRequest& request);

}  // namespace tide::api
