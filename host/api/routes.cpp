#include "host/api/routes.h"

#include "host/api/handlers.h"

namespace tide::api {
namespace {

using enum Role;

const std::vector<Route> kRoutes = {
    {"GET", "/healthz", kPublic, system::healthz},
    {"GET", "/readyz", kPublic, system::readyz},
    {"GET", "/metrics", kPublic, system::metrics},
    {"GET", "/v1/openapi.json", kPublic, system::openapi},
    {"GET", "/", kPublic, console::index},
    {"GET", "/console/{file}", kPublic, console::asset},
    {"GET", "/v1/whoami", kViewer, whoami::show},

    {"POST", "/v1/manifests", kOperator, manifests::apply, Scope::kBody},

    {"POST", "/v1/capabilities", kOperator, capabilities::create},
    {"GET", "/v1/capabilities", kViewer, capabilities::list},
    {"GET", "/v1/capabilities/{name}", kViewer, capabilities::get},
    {"DELETE", "/v1/capabilities/{name}", kAdmin, capabilities::remove},

    {"POST", "/v1/clusters", kOperator, clusters::create},
    {"GET", "/v1/clusters", kViewer, clusters::list},
    {"GET", "/v1/clusters/{name}", kViewer, clusters::get},
    {"DELETE", "/v1/clusters/{name}", kAdmin, clusters::remove},
    {"POST", "/v1/clusters/{name}/activate", kAdmin, clusters::activate},
    {"POST", "/v1/clusters/{name}/deactivate", kAdmin, clusters::deactivate},

    {"POST", "/v1/nodes", kOperator, nodes::create},
    {"GET", "/v1/nodes", kViewer, nodes::list},
    {"GET", "/v1/nodes/{name}", kViewer, nodes::get},
    {"DELETE", "/v1/nodes/{name}", kAdmin, nodes::remove},
    {"POST", "/v1/nodes/{name}/cordon", kOperator, nodes::cordon},
    {"POST", "/v1/nodes/{name}/uncordon", kOperator, nodes::uncordon},
    {"POST", "/v1/nodes/{name}/drain", kOperator, nodes::drain},

    {"POST", "/v1/plans", kOperator, plans::create, Scope::kBody},
    {"GET", "/v1/plans", kViewer, plans::list},
    {"GET", "/v1/plans/{name}", kViewer, plans::show},
    {"PUT", "/v1/plans/{name}", kOperator, plans::update, Scope::kPlan},
    {"DELETE", "/v1/plans/{name}", kAdmin, plans::remove, Scope::kPlan},
    {"POST", "/v1/plans/{name}/scale-to-zero", kOperator, plans::scaleToZero, Scope::kPlan},
    {"POST", "/v1/plans/{name}/scale", kOperator, plans::scale, Scope::kPlan},
    {"POST", "/v1/plans/{name}/set-image", kOperator, plans::setImage, Scope::kPlan},

    {"POST", "/v1/plans/{name}/deployments", kOperator, deployments::create, Scope::kPlan},
    {"GET", "/v1/plans/{name}/deployments", kViewer, deployments::list},
    {"GET", "/v1/plans/{name}/deployments/{id}", kViewer, deployments::get},
    {"POST", "/v1/plans/{name}/deployments/{id}/cancel", kOperator, deployments::cancel, Scope::kPlan},
    {"POST", "/v1/plans/{name}/deployments/{id}/promote", kOperator, deployments::promote, Scope::kPlan},
    {"POST", "/v1/plans/{name}/deployments/{id}/abort", kOperator, deployments::abort, Scope::kPlan},
    {"POST", "/v1/plans/{name}/deployments/{id}/pause", kOperator, deployments::pause, Scope::kPlan},
    {"POST", "/v1/plans/{name}/deployments/{id}/resume", kOperator, deployments::resume, Scope::kPlan},
    {"POST", "/v1/plans/{name}/deployments/{id}/rollback", kOperator, deployments::rollback, Scope::kPlan},
    {"POST", "/v1/plans/{name}/deployments/{id}/approve", kApprover, deployments::approve, Scope::kPlan},
    {"POST", "/v1/plans/{name}/deployments/{id}/retry", kOperator, deployments::retry, Scope::kPlan},

    {"GET", "/v1/instances", kViewer, instances::list},
    {"GET", "/v1/instances/{name}", kViewer, instances::get},
    {"POST", "/v1/instances/{name}/operations", kOperator, instances::operate, Scope::kInstance},
    {"GET", "/v1/instances/{name}/logs", kViewer, instances::logs},

    {"GET", "/v1/operations", kViewer, operations::list},
    {"GET", "/v1/operations/{id}", kViewer, operations::get},
    {"POST", "/v1/operations/{id}/approve", kApprover, operations::approve, Scope::kOperation},
    {"POST", "/v1/operations/{id}/reject", kApprover, operations::reject, Scope::kOperation},
    {"POST", "/v1/operations/{id}/cancel", kOperator, operations::cancel, Scope::kOperation},

    {"GET", "/v1/events", kViewer, events::list},
    {"GET", "/v1/events/stream", kViewer, events::stream},
    {"GET", "/v1/audit/verify", kViewer, audit::verify},
    {"GET", "/v1/doctor", kViewer, audit::doctor},

    {"GET", "/v1/status", kViewer, status::show},
    {"GET", "/v1/control", kViewer, control::show},
    {"POST", "/v1/control/resume", kAdmin, control::resume},

    {"GET", "/v1/scripts", kViewer, scripts::list},
    {"POST", "/v1/scripts/reload", kAdmin, scripts::reload},
    {"POST", "/v1/policies/evaluate", kOperator, scripts::evaluate},

    {"POST", "/v1/tokens", kAdmin, tokens::create},
    {"GET", "/v1/tokens", kAdmin, tokens::list},
    {"DELETE", "/v1/tokens/{name}", kAdmin, tokens::revoke},

    {"GET", "/v1/agents/{node}/desired", kAgent, agents::desired},
    {"POST", "/v1/agents/{node}/report", kAgent, agents::report},
    {"POST", "/v1/agents/{node}/logs/{id}", kAgent, agents::logs},
};

// Splits "/a/b" into {"a", "b"}; a trailing slash yields a final empty segment.
std::vector<std::string_view> segments(std::string_view path) {
  std::vector<std::string_view> out;
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  while (true) {
    size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

bool matchPattern(std::string_view pattern, const std::vector<std::string_view>& path,
                  std::map<std::string, std::string>& params) {
  std::vector<std::string_view> parts = segments(pattern);
  if (parts.size() != path.size()) return false;
  std::map<std::string, std::string> found;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string_view part = parts[i];
    if (part.size() > 2 && part.front() == '{' && part.back() == '}') {
      if (path[i].empty()) return false;
      found.emplace(std::string(part.substr(1, part.size() - 2)), std::string(path[i]));
    } else if (part != path[i]) {
      return false;
    }
  }
  params = std::move(found);
  return true;
}

}  // namespace

const std::vector<Route>& routeTable() { return kRoutes; }

RouteMatch matchRoute(std::string_view method, std::string_view path) {
  if (method == "HEAD") method = "GET";
  std::vector<std::string_view> parts = segments(path);
  RouteMatch match;
  for (const Route& route : kRoutes) {
    std::map<std::string, std::string> params;
    if (!matchPattern(route.pattern, parts, params)) continue;
    if (route.method == method) {
      match.route = &route;
      match.params = std::move(params);
      match.allowed_methods.clear();
      return match;
    }
    match.allowed_methods.push_back(route.method);
  }
  return match;
}

}  // namespace tide::api
