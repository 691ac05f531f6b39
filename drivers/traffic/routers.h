#pragma once
// Which traffic router a host runs (docs/architecture.md#traffic): one explicit table from
// router kind to the kind's config parser and factory, in the shape every extension family
// shares (drivers/extension_table.h). Adding a router means adding a row in routers.cpp.

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "drivers/extension_table.h"
#include "drivers/traffic/router.h"

namespace tide::drivers::traffic {

// A row of the router table: kind, summary, the kind's config parser, its factory.
using RouterKind = ExtensionKind<Router, RouterContext>;

// Every kind tide can build, in a fixed order.
const std::vector<RouterKind>& routerKinds();

// A router of `kind` configured by `config` (null or an object). kInvalidArgument for an
// unknown kind (the message lists the known ones, detail `router_kind`) or a bad config
// (details name the field); what the factory returns otherwise.
Result<std::unique_ptr<Router>> makeRouter(const std::string& kind, const nlohmann::json& config,
                                           const RouterContext& context);

// What makeRouter would say of `kind` and `config`, building nothing.
Status checkRouterConfig(const std::string& kind, const nlohmann::json& config);

}  // namespace tide::drivers::traffic
