#pragma once
// The one route table of the HTTP API. Every route is one row: method, path pattern, the
// least role that may call it, and its handler. The OpenAPI document lists exactly these
// rows (a test holds the two equal). New areas add rows here and a routes_<area>.cpp.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "host/api/handler.h"

namespace tide::api {

// Where a route that changes things acts, for namespace-scoped tokens (namespace_scope.h).
// Routes a viewer may call read, and reads are not scoped.
enum class Scope {
  kFleet,      // the whole fleet (nodes, clusters, tokens, scripts, control): needs an unscoped token
  kPlan,       // the plan {name} names
  kInstance,   // the plan of the meta instance {name} names
  kOperation,  // the plan of the operation {id} names
  kBody,       // the plans the body names: the handler calls authorizeNamespace for each
};

struct Route {
  std::string_view method;   // GET | POST | DELETE
  std::string_view pattern;  // "/v1/nodes/{name}/cordon": literal and {param} segments
  Role role;                 // least role allowed; kPublic needs no token
  Handler handler;
  Scope scope = Scope::kFleet;  // where it acts, when `role` is above viewer
};

const std::vector<Route>& routeTable();

struct RouteMatch {
  const Route* route = nullptr;                   // nullptr when nothing matched
  std::map<std::string, std::string> params;      // {param} → path segment
  std::vector<std::string_view> allowed_methods;  // when only other methods match the path
};

// The first row whose method and pattern match; HEAD matches GET rows.
RouteMatch matchRoute(std::string_view method, std::string_view path);

}  // namespace tide::api
