#pragma once
// A plan's traffic: the stable endpoint its clients use across every rollout
// (docs/architecture.md#traffic). Declared in the plan manifest under `traffic:`; the engine
// turns it, with the plan's ready instances and its strategy's route(...) weights, into the
// desired state of a traffic router (drivers/traffic/router.h).

#include <string>
#include <vector>

namespace tide::model {

// Requests carrying `header` equal to `value` go to the plan's preview set (the deployment
// being rolled out), whatever the weights; e.g. X-Canary: always.
struct HeaderRoute {
  std::string header;
  std::string value;
  bool operator==(const HeaderRoute&) const = default;
};

struct PlanTraffic {
  std::string listen;          // "127.0.0.1:8080": the plan's endpoint; "" = the plan has no traffic
  std::string preview_listen;  // "" = none; serves only the deployment being rolled out
  std::string health_path;     // "" = the router checks a TCP connect; else an HTTP GET of this path
  std::vector<HeaderRoute> header_routes;

  bool declared() const { return !listen.empty(); }
  bool operator==(const PlanTraffic&) const = default;
};

}  // namespace tide::model
