#include "drivers/traffic/routers.h"

#include "drivers/traffic/haproxy/haproxy_router.h"

namespace tide::drivers::traffic {
namespace {

Result<const RouterKind*> findRouterKind(const std::string& kind) {
  return findKind(routerKinds(), kind, "router", "router_kind");
}

}  // namespace

const std::vector<RouterKind>& routerKinds() {
  static const std::vector<RouterKind> kKinds = {
      {"haproxy", "HAProxy as a supervised child; servers and weights over its runtime API", parseHaproxyOptions,
       buildHaproxyRouter},
  };
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
