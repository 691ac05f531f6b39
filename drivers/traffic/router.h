#pragma once
// A traffic router owns each plan's stable endpoint and splits its requests among the plan's
// runtime instances (docs/architecture.md#traffic). The engine computes the desired state of
// every plan that declares `traffic:` and hands all of it to apply(); the router makes it so
// and reports through applied() what it really serves, read back from the router process
// itself (never from the router object's memory), so a mismatch can hold a rollout.
//
// A router outlives the host: kill -9 of `tide serve` leaves it serving the last split, and
// start() on the next host adopts it without changing what it serves.
//
// Thread-safety: apply(), applied() and stop() may be called from any one thread at a time;
// implementations may supervise their process from a thread of their own.

#include <cstdint>
#include <string>
#include <vector>

#include "host/core/clock.h"
#include "host/core/status.h"
#include "host/model/traffic.h"

namespace tide::drivers::traffic {

// One runtime instance in a plan's backend.
struct BackendServer {
  std::string id;          // the runtime instance id: the server's stable name in the router
  std::string deployment;  // the deployment id it runs
  std::string address;     // "127.0.0.1:31234"
  int weight = 0;          // 0..256 relative share of new requests; 0 takes none
  bool drain = false;      // leaving: no new requests, requests in flight finish
  bool preview = false;    // also serves the plan's preview_listen and header routes
  bool operator==(const BackendServer&) const = default;
};

struct DesiredPlanTraffic {
  std::string plan;
  model::PlanTraffic endpoint;
  std::vector<BackendServer> servers;
  bool operator==(const DesiredPlanTraffic&) const = default;
};

// What the router process reports for one server.
struct AppliedServer {
  std::string id;
  std::string address;
  int weight = 0;
  std::string state;             // "ready" | "drain" | "maint" | "down" (its health check fails)
  int64_t current_sessions = 0;  // requests/connections in flight through it
  bool preview = false;
};

struct AppliedPlanTraffic {
  std::string plan;
  std::string listen;          // what the router is bound to for the plan ("" if the bind failed)
  std::string preview_listen;
  std::string error;           // "" or why the plan is not served as asked (e.g. the port is taken)
  std::vector<AppliedServer> servers;
};

struct RouterState {
  bool up = false;      // the router process runs and answers
  std::string message;  // why not, when !up
  std::string metrics_url;  // the router's Prometheus metrics ("http://127.0.0.1:9101/metrics"), "" if none
  std::vector<AppliedPlanTraffic> plans;
};

class Router {
 public:
  virtual ~Router() = default;
  // Adopts a router left running by an earlier host, or notes that none runs. Changes nothing
  // the router serves.
  virtual Status start() = 0;
  // Makes the router serve exactly `plans`: plans not listed are removed. Idempotent; cheap
  // when nothing changed. Weight and drain changes never restart the router process.
  virtual Status apply(const std::vector<DesiredPlanTraffic>& plans) = 0;
  // What the router process serves now, read back from it.
  virtual Result<RouterState> applied() = 0;
  // Stops the router process (host shutdown that stops workloads).
  virtual Status stop() = 0;

  // The labels the router's own metrics (RouterState::metrics_url) give `plan`'s backend and
  // the server `server_id`, for the analyses that judge a deployment on the requests the
  // router passed to it (scripts/lib/analysis.lua, router_*). "" when the router has none.
  virtual std::string metricBackend(const std::string& /*plan*/) const { return ""; }
  virtual std::string metricServer(const std::string& /*server_id*/) const { return ""; }
  // Metrics the router keeps in the host, in Prometheus text format, for the host's /metrics
  // (the HAProxy router's per-request latency histograms); "" when it keeps none.
  virtual std::string metricsText() const { return ""; }
};

// What a router factory gets from the host besides the `traffic:` section of its config.
struct RouterContext {
  std::string data_dir;          // the router keeps its files under <data_dir>/traffic/<kind>
  const Clock* clock = nullptr;  // nullptr: the system clock
};

}  // namespace tide::drivers::traffic
