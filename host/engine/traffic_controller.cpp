#include "host/engine/traffic_controller.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "host/model/holds.h"
#include "host/model/states.h"
#include "host/model/transitions.h"

namespace tide::engine {
namespace {

using drivers::traffic::AppliedPlanTraffic;
using drivers::traffic::BackendServer;
using drivers::traffic::DesiredPlanTraffic;

// The deployment a plan's traffic follows (World::currentDeployment), "" for none; sets
// `in_progress` when that one is still rolling out. A route asked by any other deployment
// no longer applies.
std::string currentDeployment(const World& world, const std::string& plan, std::string* in_progress) {
  const model::Deployment* current = world.currentDeployment(plan);
  if (current == nullptr) return "";
  if (!model::isRolloutOver(current->state)) *in_progress = current->deployment_id;
  return current->deployment_id;
}

// "tcp/8080": the runtime instance's ports key of the port the plan's traffic names, else of its
// first declared port.
std::string routedPortKey(const model::Plan& plan) {
  if (plan.traffic.port > 0) return "tcp/" + std::to_string(plan.traffic.port);
  for (const auto& app : plan.applications) {
    for (const auto& port : app.ports) {
      std::string proto = port.protocol.empty() ? "tcp" : port.protocol;
      std::transform(proto.begin(), proto.end(), proto.begin(), [](unsigned char c) { return std::tolower(c); });
      return proto + "/" + std::to_string(port.port);
    }
  }
  return "";
}

bool hasHealthCheck(const model::Plan& plan) {
  return std::any_of(plan.applications.begin(), plan.applications.end(),
                     [](const model::Application& a) { return a.health_check.has_value(); });
}

Json sharesJson(const std::map<std::string, double>& shares) {
  Json out = Json::object();
  for (const auto& [deployment, pct] : shares) out[deployment] = std::round(pct * 10) / 10;
  return out;
}

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::round(v * 10) / 10);
  return buf;
}

// Each deployment's share of the requests `servers` would get, from their weights.
std::map<std::string, double> sharesOf(const std::vector<std::pair<std::string, int>>& weights) {
  std::map<std::string, double> out;
  double total = 0;
  for (const auto& [deployment, w] : weights) total += w;
  if (total <= 0) return out;
  for (const auto& [deployment, w] : weights) out[deployment] += 100.0 * w / total;
  return out;
}

}  // namespace

std::map<std::string, int> serverWeights(const std::map<std::string, int>& servers,
                                         const std::map<std::string, double>& percent) {
  std::map<std::string, int> out;
  if (percent.empty()) {
    for (const auto& [deployment, n] : servers) out[deployment] = n > 0 ? kMaxServerWeight : 0;
    return out;
  }
  // Per-server share of the requests, then scaled so the largest is kMaxServerWeight: the
  // most precision the router's 0..256 range gives.
  std::map<std::string, double> each;
  double largest = 0;
  for (const auto& [deployment, n] : servers) {
    auto p = percent.find(deployment);
    const double share = (n > 0 && p != percent.end()) ? std::max(0.0, p->second) / n : 0;
    each[deployment] = share;
    largest = std::max(largest, share);
  }
  for (const auto& [deployment, share] : each) {
    int w = largest > 0 ? static_cast<int>(std::lround(kMaxServerWeight * share / largest)) : 0;
    // A deployment asked for some share keeps at least weight 1, else it would get none.
    if (share > 0 && w == 0) w = 1;
    out[deployment] = std::clamp(w, 0, kMaxServerWeight);
  }
  return out;
}

Json trafficViewJson(const std::optional<PlanTrafficView>& view) {
  if (!view) return nullptr;
  Json out{{"listen", view->listen},
           {"asked", view->asked},
           {"applied", view->applied},
           {"router", view->router_up ? "up" : "down"}};
  if (!view->preview_listen.empty()) out["preview_listen"] = view->preview_listen;
  if (!view->reason.empty()) out["reason"] = view->reason;
  if (!view->metrics_url.empty()) out["metrics_url"] = view->metrics_url;
  return out;
}

TrafficController::TrafficController(ledger::Ledger& ledger, drivers::traffic::Router* router, const Clock& clock,
                                     EngineMetrics& metrics, std::string actor)
    : ledger_(ledger), router_(router), clock_(clock), metrics_(metrics), actor_(std::move(actor)) {}

std::map<std::string, double> TrafficController::askedShares(const PlanState& state,
                                                             const std::map<std::string, int>& servers) const {
  std::map<std::string, double> out;
  const std::string route_deployment = state.route.value("deployment", "");
  const Json weights = state.route.value("weights", Json::object());
  int old_servers = 0;
  for (const auto& [deployment, n] : servers) {
    if (deployment != route_deployment && !weights.contains(deployment)) old_servers += n;
  }
  for (const auto& [key, value] : weights.items()) {
    if (!value.is_number()) continue;
    const double pct = value.get<double>();
    if (key == "new") {
      out[route_deployment] += pct;
    } else if (key == "old") {
      if (pct <= 0) continue;
      if (old_servers == 0) {
        out["old"] += pct;  // asked of servers that do not exist: never applied
        continue;
      }
      for (const auto& [deployment, n] : servers) {
        if (deployment == route_deployment || weights.contains(deployment)) continue;
        out[deployment] += pct * n / old_servers;
      }
    } else {
      out[key] += pct;
    }
  }
  for (auto it = out.begin(); it != out.end();) it = it->second <= 0 ? out.erase(it) : std::next(it);
  return out;
}

std::string TrafficController::describe(const std::map<std::string, double>& shares, const std::string& new_id) {
  if (shares.empty()) return "nothing";
  double mine = 0, others = 0;
  for (const auto& [deployment, pct] : shares) (deployment == new_id ? mine : others) += pct;
  return "new " + percent(mine) + " / old " + percent(others);
}

bool TrafficController::matches(const PlanState& state) const {
  if (!state.applied_known || !router_up_) return false;
  std::set<std::string> keys;
  for (const auto& [k, v] : state.asked) keys.insert(k);
  for (const auto& [k, v] : state.applied) keys.insert(k);
  for (const auto& k : keys) {
    const double a = state.asked.count(k) ? state.asked.at(k) : 0;
    const double b = state.applied.count(k) ? state.applied.at(k) : 0;
    if (std::abs(a - b) > kRouteTolerance) return false;
  }
  return true;
}

int TrafficController::pass(const World& world) {
  if (router_ == nullptr) return 0;
  std::vector<const model::Plan*> traffic_plans;
  for (const auto& plan : world.plans) {
    if (plan.state == model::PlanState::kActive && plan.traffic.declared()) traffic_plans.push_back(&plan);
  }
  if (traffic_plans.empty() && !ever_applied_) return 0;  // zero cost until a plan declares traffic
  if (!started_) {
    Status s = router_->start();
    started_ = s.isOk();
    if (!s.isOk()) {
      router_message_ = s.message();
      metrics_.countRouterError("start");
    }
  }

  std::unique_lock lock(mu_);
  std::vector<DesiredPlanTraffic> desired;
  std::set<std::string> live_runtimes;
  server_of_.clear();
  for (const model::Plan* plan : traffic_plans) {
    PlanState& st = plans_[plan->name];
    if (!st.route_loaded) {
      st.route = plan->traffic_route;  // a restarted host re-applies what was asked
      st.route_loaded = true;
    }
    st.endpoint = plan->traffic;
    st.drain_seconds = plan->traffic.drain_seconds;
    st.in_progress.clear();
    const std::string current = currentDeployment(world, plan->name, &st.in_progress);
    const bool route_applies = !st.route.empty() && st.route.value("deployment", "") == current;

    std::vector<BackendServer> servers;
    std::map<std::string, int> counts;  // deployment → servers taking requests
    for (const InstanceView* view : world.instancesOf(plan->name)) {
      if (!view->active || view->active->state != model::RuntimeState::kRunning) continue;
      const model::RuntimeInstance& rt = *view->active;
      const std::string id = std::to_string(rt.meta.id);
      live_runtimes.insert(id);
      const bool draining = draining_.count(id) > 0;
      const model::Plan* deployed = world.planAsDeployed(plan->name, view->meta.deployment_id);
      if (deployed == nullptr) deployed = plan;
      const bool ready = hasHealthCheck(*deployed) ? rt.healthy : true;
      if (!ready && !draining) continue;  // joins only once ready
      const std::string key = routedPortKey(*deployed);
      if (key.empty() || !rt.ports.is_object() || !rt.ports.contains(key) || !rt.ports[key].is_number_integer()) {
        continue;
      }
      BackendServer s;
      s.id = id;
      s.deployment = view->meta.deployment_id;
      s.address = "127.0.0.1:" + std::to_string(rt.ports[key].get<int64_t>());
      s.drain = draining;
      s.preview = !st.in_progress.empty() && s.deployment == st.in_progress;
      if (!draining) ++counts[s.deployment];
      server_of_[view->meta.name] = {plan->name, id};
      servers.push_back(std::move(s));
    }
    std::map<std::string, double> pct;
    if (route_applies) pct = askedShares(st, counts);
    const auto weights = serverWeights(counts, route_applies ? pct : std::map<std::string, double>{});
    std::vector<std::pair<std::string, int>> planned;
    st.deployment_of.clear();
    for (auto& s : servers) {
      s.weight = s.drain ? 0 : weights.count(s.deployment) ? weights.at(s.deployment) : 0;
      st.deployment_of[s.id] = s.deployment;
      planned.emplace_back(s.deployment, s.weight);
    }
    std::sort(servers.begin(), servers.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    st.asked = route_applies ? pct : sharesOf(planned);
    desired.push_back(DesiredPlanTraffic{plan->name, plan->traffic, std::move(servers)});
  }
  // Plans that no longer declare traffic (or were deleted) are forgotten.
  for (auto it = plans_.begin(); it != plans_.end();) {
    const bool kept = std::any_of(traffic_plans.begin(), traffic_plans.end(),
                                  [&](const model::Plan* p) { return p->name == it->first; });
    it = kept ? std::next(it) : plans_.erase(it);
  }
  for (auto it = draining_.begin(); it != draining_.end();) {
    if (live_runtimes.count(it->first)) {
      ++it;
    } else {
      drain_done_.erase(it->first);
      it = draining_.erase(it);
    }
  }

  // Apply when what is desired changed or the router serves something else.
  if (started_ && (desired != last_applied_desired_ || !router_matches_)) {
    lock.unlock();
    Status applied = router_->apply(desired);
    lock.lock();
    if (applied.isOk()) {
      last_applied_desired_ = desired;
      ever_applied_ = true;
    } else {
      router_message_ = applied.message();
      metrics_.countRouterError("apply");
    }
  }
  drivers::traffic::RouterState state;
  if (started_) {
    lock.unlock();
    auto read = router_->applied();
    lock.lock();
    if (read.isOk()) {
      state = std::move(read).value();
      if (!state.up && state.message.empty()) state.message = "the router does not answer";
    } else {
      state.up = false;
      state.message = read.status().message();
    }
    if (!state.up) metrics_.countRouterError("read");
  } else {
    state.message = router_message_.empty() ? "the router did not start" : router_message_;
  }
  router_up_ = state.up;
  router_message_ = state.message;
  metrics_url_ = state.up ? state.metrics_url : "";

  // What the router serves, per plan; and whether it is what was desired.
  router_matches_ = state.up;
  int changes = 0;
  for (const DesiredPlanTraffic& want : desired) {
    PlanState& st = plans_[want.plan];
    const AppliedPlanTraffic* got = nullptr;
    for (const auto& p : state.plans) {
      if (p.plan == want.plan) got = &p;
    }
    std::vector<std::pair<std::string, int>> served;
    bool same = got != nullptr && got->error.empty();
    if (got) {
      for (const auto& s : got->servers) {
        sessions_[s.id] = s.current_sessions;
        auto dep = st.deployment_of.find(s.id);
        if (s.state == "ready" && dep != st.deployment_of.end()) served.emplace_back(dep->second, s.weight);
      }
    }
    for (const BackendServer& s : want.servers) {
      const drivers::traffic::AppliedServer* a = nullptr;
      if (got) {
        for (const auto& x : got->servers) {
          if (x.id == s.id) a = &x;
        }
      }
      if (a == nullptr || (s.drain ? (a->state == "ready" && a->weight > 0) : a->weight != s.weight)) same = false;
      if (s.drain) {
        // Out of rotation (or never in it) and nothing in flight: the executor may stop it.
        const bool out = a == nullptr || a->state != "ready" || a->weight == 0;
        if (state.up && out && (a == nullptr || a->current_sessions == 0)) drain_done_.insert(s.id);
      }
    }
    if (got && got->servers.size() != want.servers.size()) same = false;
    if (!same) router_matches_ = false;
    st.applied = sharesOf(served);
    st.applied_known = state.up;

    const std::string new_id = st.route.value("deployment", "");
    Json data{{"plan", want.plan},
              {"deployment", new_id.empty() ? Json(nullptr) : Json(new_id)},
              {"asked", sharesJson(st.asked)},
              {"applied", sharesJson(st.applied)}};
    std::string kind;
    if (!state.up) {
      kind = "traffic.router_down";
      data["message"] = state.message;
      st.reason = "router down: " + state.message;
    } else if (got != nullptr && !got->error.empty()) {
      kind = "traffic.mismatch";
      data["message"] = got->error;
      st.reason = "the router does not serve the plan: " + got->error;
    } else if (!matches(st)) {
      kind = "traffic.mismatch";
      st.reason = "waiting for the router: asked " + describe(st.asked, new_id) + ", applied " +
                  describe(st.applied, new_id);
      data["message"] = st.reason;
    } else {
      kind = "traffic.applied";
      st.reason.clear();
    }
    const std::string signature = kind + data.dump();
    if (signature != st.last_event) {
      if (ledger_.audit().appendEvent(kind, "plan/" + want.plan, data, actor_).isOk()) {
        st.last_event = signature;
        ++changes;
      }
    }
  }
  return changes;
}

std::optional<std::string> TrafficController::routeHold(const World& world, const model::Deployment& deployment,
                                                        const Json& weights) {
  if (router_ == nullptr) return std::nullopt;
  auto plan = world.plan_by_name.find(deployment.plan);
  if (plan == world.plan_by_name.end() || !plan->second->traffic.declared()) return std::nullopt;
  std::lock_guard lock(mu_);
  PlanState& st = plans_[deployment.plan];
  if (!st.route_loaded) {
    st.route = plan->second->traffic_route;
    st.route_loaded = true;
  }
  const Json route{{"deployment", deployment.deployment_id}, {"weights", weights}};
  const std::string asked = [&] {
    std::string out;
    for (const auto& key : {"new", "old"}) {
      if (weights.contains(key) && weights[key].is_number()) {
        out += std::string(out.empty() ? "" : " / ") + key + " " + percent(weights[key].get<double>());
      }
    }
    return out.empty() ? weights.dump() : out;
  }();
  if (st.route != route) {
    st.route = route;
    st.applied_known = false;  // the next pass applies it and reads it back
    // Best effort: the route is applied from memory either way; one not kept is written again
    // when a restarted host's first pass asks for it (setPlanTrafficRoute is a no-op when unchanged).
    (void)ledger_.plans().setPlanTrafficRoute(deployment.plan, route, actor_);
    return std::string(model::kRouterWaitPrefix) + ": asked " + asked + ", applied " +
           describe(st.applied, deployment.deployment_id);
  }
  if (!router_up_) return std::string(model::kRouterDownPrefix) + ": " + router_message_ + "; asked " + asked;
  if (!matches(st)) {
    return std::string(model::kRouterWaitPrefix) + ": asked " + asked + ", applied " +
           describe(st.applied, deployment.deployment_id);
  }
  return std::nullopt;
}

bool TrafficController::drained(const std::string& plan, const std::string& runtime_id) {
  if (router_ == nullptr) return true;
  std::lock_guard lock(mu_);
  auto it = plans_.find(plan);
  if (it == plans_.end()) return true;
  auto [since, marked] = draining_.try_emplace(runtime_id, clock_.now());
  if (marked) return false;  // the next pass takes it out of rotation first
  if (drain_done_.count(runtime_id)) return true;
  return clock_.now() - since->second >= std::chrono::duration<double>(it->second.drain_seconds);
}

std::optional<std::string> TrafficController::drainFor(const std::string& meta_instance) {
  if (router_ == nullptr) return std::nullopt;
  std::string plan, id;
  {
    std::lock_guard lock(mu_);
    auto it = server_of_.find(meta_instance);
    if (it == server_of_.end()) return std::nullopt;  // takes no traffic: nothing to drain
    std::tie(plan, id) = it->second;
  }
  if (drained(plan, id)) return std::nullopt;
  std::lock_guard lock(mu_);
  const auto s = sessions_.find(id);
  const double limit = plans_.count(plan) ? plans_.at(plan).drain_seconds : 0;
  return "instance " + meta_instance + " leaves the traffic of plan " + plan + " (" +
         (s != sessions_.end() ? std::to_string(s->second) : std::string("?")) +
         " sessions in flight; stopped anyway after " + percent(limit) + " s)";
}

std::optional<PlanTrafficView> TrafficController::view(const std::string& plan) const {
  std::lock_guard lock(mu_);
  auto it = plans_.find(plan);
  if (it == plans_.end()) return std::nullopt;
  const PlanState& st = it->second;
  PlanTrafficView out;
  out.listen = st.endpoint.listen;
  out.preview_listen = st.endpoint.preview_listen;
  out.asked = sharesJson(st.asked);
  out.applied = sharesJson(st.applied);
  out.router_up = router_up_;
  out.reason = st.reason;
  out.metrics_url = metrics_url_;
  return out;
}

std::string TrafficController::metricBackend(const std::string& plan) const {
  if (router_ == nullptr) return "";
  {
    std::lock_guard lock(mu_);
    if (!plans_.count(plan)) return "";
  }
  return router_->metricBackend(plan);
}

std::string TrafficController::metricServer(const std::string& meta_instance) const {
  if (router_ == nullptr) return "";
  std::string id;
  {
    std::lock_guard lock(mu_);
    auto it = server_of_.find(meta_instance);
    if (it == server_of_.end()) return "";
    id = it->second.second;
  }
  return router_->metricServer(id);
}

}  // namespace tide::engine
