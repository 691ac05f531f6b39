#pragma once
// The engine's side of traffic (docs/architecture.md#traffic): each pass it computes, for every
// ACTIVE plan that declares `traffic:`, the split its router should serve — the plan's ready
// instances, weighted so that each deployment gets the share of REQUESTS its strategy's last
// route(...) asked for whatever its instance count — hands all of it to the router when it
// changed or the router serves something else, and reads back what the router applies.
//
// - Servers: the plan's RUNNING instances, once ready (healthy when the plan has a health
//   check): an instance joins only after readiness. Instances the executor is about to stop
//   stay as drain=true servers (weight 0) until they are stopped (beginDrain/drained).
// - Weights: the route a plan's strategy asked for ({"new": 10, "old": 90}: `new` is the
//   deployment that asked, `old` every other one; other keys name deployments), kept in the
//   ledger (plans.traffic_route, migration 013) so a restarted host re-applies it. Without a
//   route, every ready server gets the same weight. Per-server weights are 0..256, scaled so
//   the largest is 256: new 10% on 1 server and old 90% on 9 servers → 256 each.
// - Events, once per change: traffic.applied {plan, deployment, asked, applied} when what the
//   router applies changes and matches what was asked; traffic.mismatch and
//   traffic.router_down otherwise.
// - route(...) completes only when the router applies it (routeHold, within ±1 percentage
//   point): the deployment controller holds the rollout until then.
//
// - Errors: a failed start, apply or read of the router (or a read that finds it down) counts
//   in /metrics, once per pass it happens in (tide_router_errors_total{call}).
//
// No router (nullptr) or no plan with traffic: pass() returns at once and routeHold() never
// holds, so nothing changes for plans without traffic. The router is started lazily, on the
// first pass that sees a plan with traffic.
//
// Thread-safety: pass(), routeHold() and view() on the control loop's thread (view() also from
// API threads: it locks); beginDrain()/drained() from executor workers (they lock).

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "drivers/traffic/router.h"
#include "host/core/clock.h"
#include "host/engine/engine_metrics.h"
#include "host/engine/world.h"
#include "host/ledger/ledger.h"

namespace tide::engine {

// Shares closer than this (percentage points) count as applied.
inline constexpr double kRouteTolerance = 1.0;
// The largest per-server weight the engine asks for (the router's range is 0..256).
inline constexpr int kMaxServerWeight = 256;

// The weight of each server of one plan such that each deployment gets its `percent` of the
// requests: `servers` maps deployment id → how many of its servers take requests; `percent`
// maps deployment id → share (missing = 0). Empty `percent`: the same weight for every server.
// Returns deployment id → per-server weight, 0..kMaxServerWeight.
std::map<std::string, int> serverWeights(const std::map<std::string, int>& servers,
                                         const std::map<std::string, double>& percent);

// What the API shows of one plan's traffic.
struct PlanTrafficView {
  std::string listen;
  std::string preview_listen;
  Json asked = Json::object();    // deployment id → percent
  Json applied = Json::object();  // deployment id → percent, as the router reports
  bool router_up = false;
  std::string reason;  // "" when applied == asked; else why not
  std::string metrics_url;  // the router's Prometheus metrics, "" if it has none (or is down)
};

// {listen, preview_listen?, asked, applied, router: "up"|"down", reason?, metrics_url?}, or null for nullopt:
// the API's and the CLI's shape.
Json trafficViewJson(const std::optional<PlanTrafficView>& view);

class TrafficController {
 public:
  // `router` may be null: no traffic. Everything must outlive the controller.
  TrafficController(ledger::Ledger& ledger, drivers::traffic::Router* router, const Clock& clock,
                    EngineMetrics& metrics, std::string actor = "traffic");

  bool enabled() const { return router_ != nullptr; }

  // One pass: desired state, apply when needed, read back, events. Returns ledger changes.
  int pass(const World& world);

  // Called by the deployment controller when `deployment`'s strategy returns route(weights):
  // keeps the route (ledger and memory) and returns why the rollout must hold (the router does
  // not serve it yet, or is down), or nullopt when it is applied or the plan has no traffic.
  std::optional<std::string> routeHold(const World& world, const model::Deployment& deployment, const Json& weights);

  // The executor asks before it stops `runtime_id` of `plan`: marks it draining (the next pass
  // sends it no new requests) and answers true once the router reports no session in flight
  // through it, or the plan's drain_seconds passed, or the plan has no traffic.
  bool drained(const std::string& plan, const std::string& runtime_id);
  // ExecutorOptions::before_stop: why the running instance `meta_instance` must drain before it
  // is stopped (it serves a plan's traffic and is not drained yet), or nullopt.
  std::optional<std::string> drainFor(const std::string& meta_instance);

  std::optional<PlanTrafficView> view(const std::string& plan) const;

  // For the rollout snapshot's analyses (scripts/lib/analysis.lua, router_*): the label the
  // router's metrics give `plan`'s backend, and the server of `meta_instance` as of the last
  // pass. "" without a router, a plan without traffic, or an instance that takes none.
  std::string metricBackend(const std::string& plan) const;
  std::string metricServer(const std::string& meta_instance) const;

 private:
  struct PlanState {
    Json route = Json::object();  // {"deployment", "weights"}: the strategy's last route
    bool route_loaded = false;
    std::string in_progress;  // the deployment being rolled out ("" none)
    std::map<std::string, std::string> deployment_of;  // server id → deployment
    std::map<std::string, double> asked;               // deployment → percent
    std::map<std::string, double> applied;             // deployment → percent
    bool applied_known = false;
    std::string reason;
    std::string last_event;  // kind + data of the last traffic.* event, to append each once
    double drain_seconds = 10;
    model::PlanTraffic endpoint;
  };

  std::map<std::string, double> askedShares(const PlanState& state, const std::map<std::string, int>& servers) const;
  static std::string describe(const std::map<std::string, double>& shares, const std::string& in_progress);
  bool matches(const PlanState& state) const;

  ledger::Ledger& ledger_;
  drivers::traffic::Router* router_;
  const Clock& clock_;
  EngineMetrics& metrics_;
  std::string actor_;
  bool started_ = false;  // loop thread only, like the two below
  std::vector<drivers::traffic::DesiredPlanTraffic> last_applied_desired_;
  bool ever_applied_ = false;

  mutable std::mutex mu_;  // guards everything below (the router is called without it)
  bool router_up_ = false;
  bool router_matches_ = false;  // the last read showed exactly the desired servers
  std::string router_message_;
  std::string metrics_url_;
  std::map<std::string, PlanState> plans_;
  std::map<std::string, TimePoint> draining_;  // runtime id → when the executor first asked
  std::set<std::string> drain_done_;           // draining, out of rotation, no session in flight
  std::map<std::string, int64_t> sessions_;    // runtime id → sessions, as last read
  // meta instance → (plan, runtime id) of every server of the last pass.
  std::map<std::string, std::pair<std::string, std::string>> server_of_;
};

}  // namespace tide::engine
