#include "host/api/namespace_scope.h"

#include <algorithm>
#include <map>

#include "host/api/request_inputs.h"

namespace tide::api {
namespace {

// "token 'ci' acts only in namespaces prod, staging": how each refusal begins.
std::string scopedTo(const Principal& principal) {
  std::string names;
  for (const std::string& ns : principal.namespaces) names += (names.empty() ? "" : ", ") + ns;
  return "token '" + principal.name + "' acts only in namespace" + (principal.namespaces.size() == 1 ? " " : "s ") +
         names;
}

// The namespace of plan `plan`; nullopt when there is no such plan.
Result<std::optional<std::string>> planNamespace(ledger::Ledger& ledger, const std::string& plan) {
  Result<model::Plan> found = ledger.plans().getPlan(plan);
  if (found.status().code() == Code::kNotFound) return std::optional<std::string>();
  if (!found.isOk()) return found.status();
  return std::optional<std::string>(found->ns);
}

// The plan the route's target belongs to; "" when the target does not exist or its id does
// not parse (the handler says which).
Result<std::string> targetPlan(ledger::Ledger& ledger, const Route& route, const ApiRequest& request) {
  switch (route.scope) {
    case Scope::kPlan: return request.param("name");
    case Scope::kInstance: {
      Result<model::MetaInstance> meta = ledger.instances().getMetaInstance(request.param("name"));
      if (meta.status().code() == Code::kNotFound) return std::string();
      if (!meta.isOk()) return meta.status();
      return meta->plan;
    }
    case Scope::kOperation: {
      Result<int64_t> id = readIdParam(request, "id");
      if (!id.isOk()) return std::string();
      Result<model::Operation> operation = ledger.operations().getOperation(*id);
      if (operation.status().code() == Code::kNotFound) return std::string();
      if (!operation.isOk()) return operation.status();
      return operation->plan;
    }
    case Scope::kFleet:
    case Scope::kBody: break;
  }
  return std::string();
}

}  // namespace

Status authorizeNamespace(const Principal& principal, const std::string& ns, std::string_view what) {
  if (actsEverywhere(principal) ||
      std::find(principal.namespaces.begin(), principal.namespaces.end(), ns) != principal.namespaces.end()) {
    return Status::ok();
  }
  return Status::permissionDenied(scopedTo(principal) + "; " + std::string(what) + " is in namespace '" + ns + "'");
}

Status authorizeManifest(ledger::Ledger& ledger, const Principal& principal, const model::Manifest& manifest) {
  if (actsEverywhere(principal)) return Status::ok();
  auto fleetRecord = [&](const std::string& location, const std::string& what) {
    return Status::permissionDenied(location + ": " + scopedTo(principal) + "; " + what +
                                    " belongs to the whole fleet and needs a token without namespaces");
  };
  if (!manifest.capabilities.empty()) {
    const auto& first = manifest.capabilities.front();
    return fleetRecord(first.location, "capability '" + first.value.name + "'");
  }
  if (!manifest.clusters.empty()) {
    const auto& first = manifest.clusters.front();
    return fleetRecord(first.location, "cluster '" + first.value.name + "'");
  }
  if (!manifest.nodes.empty()) {
    const auto& first = manifest.nodes.front();
    return fleetRecord(first.location, "node '" + first.value.name + "'");
  }
  std::map<std::string, std::string> written;  // plan → the namespace the manifest gives it
  for (const auto& plan : manifest.plans) {
    const std::string what = "plan '" + plan.value.name + "'";
    TIDE_RETURN_IF_ERROR(authorizeNamespace(principal, plan.value.ns, what).withPrefix(plan.location));
    TIDE_ASSIGN_OR_RETURN(std::optional<std::string> held, planNamespace(ledger, plan.value.name));
    if (held) TIDE_RETURN_IF_ERROR(authorizeNamespace(principal, *held, what).withPrefix(plan.location));
    written[plan.value.name] = plan.value.ns;
  }
  for (const auto& deployment : manifest.deployments) {
    const std::string& plan = deployment.value.plan;
    if (written.contains(plan)) continue;
    TIDE_ASSIGN_OR_RETURN(std::optional<std::string> held, planNamespace(ledger, plan));
    if (held)
      TIDE_RETURN_IF_ERROR(authorizeNamespace(principal, *held, "plan '" + plan + "'").withPrefix(deployment.location));
  }
  return Status::ok();
}

Status authorizeScope(ledger::Ledger& ledger, const Route& route, const ApiRequest& request) {
  const Principal& principal = request.principal;
  if (actsEverywhere(principal)) return Status::ok();
  if (route.scope == Scope::kFleet) {
    return Status::permissionDenied(scopedTo(principal) + "; " + request.method + " " + std::string(route.pattern) +
                                    " acts on the whole fleet and needs a token without namespaces");
  }
  if (route.scope == Scope::kBody) return Status::ok();
  TIDE_ASSIGN_OR_RETURN(std::string plan, targetPlan(ledger, route, request));
  if (plan.empty()) return Status::ok();
  TIDE_ASSIGN_OR_RETURN(std::optional<std::string> ns, planNamespace(ledger, plan));
  if (!ns) return Status::ok();
  return authorizeNamespace(principal, *ns, "plan '" + plan + "'");
}

}  // namespace tide::api
