#pragma once
// A plan's traffic: the stable endpoint its clients use across every rollout
// (docs/architecture.md#traffic). Declared in the plan manifest under `traffic:`; the engine
// turns it, with the plan's ready instances and its strategy's route(...) weights, into the
// desired state of a traffic router (drivers/traffic/router.h).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
  // How long a leaving instance may keep requests in flight before the driver stops it
  // anyway (docs/architecture.md#traffic); kMinDrainSeconds..kMaxDrainSeconds.
  double drain_seconds = 10;
  // How many connections the router opens to one instance at most; requests beyond wait in the
  // router's queue (HAProxy's per-server maxconn). 0: no limit.
  int max_connections = 0;
  // The declared TCP port (of any application of the plan) the router sends requests to
  // (docs/architecture.md#applications); 0: the plan's first declared port.
  int port = 0;

  bool declared() const { return !listen.empty(); }
  bool operator==(const PlanTraffic&) const = default;
};

inline constexpr double kMinDrainSeconds = 0;
inline constexpr double kMaxDrainSeconds = 3600;
inline constexpr int kMaxServerConnections = 100000;

// Why `address` is not a traffic address ("" when it is one): host:port where host is an IPv4
// address or `localhost` and port is 1..65535.
std::string trafficAddressProblem(const std::string& address);

// {listen, preview_listen?, health?: {path}, header_routes?, drain_seconds, max_connections?, port?}: the manifest's
// shape, which the ledger stores in the plan's spec and the API shows.
void to_json(nlohmann::json& j, const HeaderRoute& v);
void from_json(const nlohmann::json& j, HeaderRoute& v);
void to_json(nlohmann::json& j, const PlanTraffic& v);
void from_json(const nlohmann::json& j, PlanTraffic& v);

}  // namespace tide::model
