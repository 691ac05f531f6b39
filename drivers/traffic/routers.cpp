#include "drivers/traffic/routers.h"

namespace tide::drivers::traffic {
namespace {

Result<const RouterKind*> findRouterKind(const std::string& kind) {
  return findKind(routerKinds(), kind, "router", "router_kind");
}

}  // namespace

const std::vector<RouterKind>& routerKinds() {
  // Empty until the first router lands. The HAProxy router (drivers/traffic/haproxy/) joins as
  //   {"haproxy", "HAProxy as a supervised child, weights over its runtime API",
  //    objectConfig, makeHaproxyRouter},
  // or, once it has a typed config, with its own parse function in place of objectConfig.
  static const std::vector<RouterKind> kKinds = {};
  return kKinds;
}

Result<std::unique_ptr<Router>> makeRouter(const std::string& kind, const nlohmann::json& config,
                                           const RouterContext& context) {
  TIDE_ASSIGN_OR_RETURN(const RouterKind* row, findRouterKind(kind));
  return row->make(config, context);
}

Status checkRouterConfig(const std::string& kind, const nlohmann::json& config) {
  TIDE_ASSIGN_OR_RETURN(const RouterKind* row, findRouterKind(kind));
  return row->check(config);
}

}  // namespace tide::drivers::traffic
