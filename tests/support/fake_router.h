#pragma once
// An in-memory drivers::traffic::Router for engine tests (docs/architecture.md#traffic): apply()
// records what the engine asks; applied() reports it as served — unless the test makes the
// router lag (keeps serving an older split), serve other weights, or be down. Sessions in
// flight per server are set by the test.

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "drivers/traffic/router.h"

namespace tide::testing {

class FakeRouter : public drivers::traffic::Router {
 public:
  Status start() override {
    std::lock_guard lock(mu_);
    ++starts;
    return Status::ok();
  }
  Status apply(const std::vector<drivers::traffic::DesiredPlanTraffic>& plans) override {
    std::lock_guard lock(mu_);
    ++applies;
    asked = plans;
    if (!up) return Status::unavailable("fake router down");
    if (!lagging) served = plans;
    return Status::ok();
  }
  Result<drivers::traffic::RouterState> applied() override {
    std::lock_guard lock(mu_);
    drivers::traffic::RouterState state;
    state.up = up;
    if (!up) {
      state.message = "haproxy is not running";
      return state;
    }
    for (const auto& plan : served) {
      drivers::traffic::AppliedPlanTraffic p;
      p.plan = plan.plan;
      p.listen = plan.endpoint.listen;
      p.preview_listen = plan.endpoint.preview_listen;
      for (const auto& s : plan.servers) {
        drivers::traffic::AppliedServer a;
        a.id = s.id;
        a.address = s.address;
        a.weight = override_weight.count(s.id) ? override_weight.at(s.id) : s.weight;
        a.state = s.drain ? "drain" : "ready";
        a.current_sessions = sessions.count(s.id) ? sessions.at(s.id) : 0;
        a.preview = s.preview;
        p.servers.push_back(a);
      }
      state.plans.push_back(std::move(p));
    }
    return state;
  }
  Status stop() override { return Status::ok(); }

  // What the engine last asked for `plan` (empty when it asked nothing of it).
  drivers::traffic::DesiredPlanTraffic askedFor(const std::string& plan) {
    std::lock_guard lock(mu_);
    for (const auto& p : asked) {
      if (p.plan == plan) return p;
    }
    return {};
  }
  void set(std::function<void(FakeRouter&)> change) {
    std::lock_guard lock(mu_);
    change(*this);
  }

  // Under mu_ (through set()) once the engine runs on other threads.
  bool up = true;
  bool lagging = false;                      // keep serving `served` whatever is asked
  std::map<std::string, int> override_weight;  // server id → weight served instead of asked
  std::map<std::string, int64_t> sessions;     // server id → sessions in flight
  std::vector<drivers::traffic::DesiredPlanTraffic> asked;
  std::vector<drivers::traffic::DesiredPlanTraffic> served;
  int starts = 0;
  int applies = 0;

 private:
  std::mutex mu_;
};

}  // namespace tide::testing
