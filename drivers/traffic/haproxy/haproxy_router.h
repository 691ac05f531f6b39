#pragma once
// The HAProxy traffic router (docs/architecture.md#traffic): haproxy 2.6 as a supervised
// child with its files under <data_dir>/traffic/haproxy/ (haproxy.cfg, haproxy.pid,
// admin.sock, haproxy.log for what haproxy prints while starting, running.json for what the
// running process was started with, desired.json for the last desired state, log.sock for
// its per-request log: RequestLog, the latency histograms of the host's /metrics).
//
// - haproxy runs daemonized (-D: its own session, no parent-death signal), so it outlives
//   the host; start() adopts it by pid file + /proc (a live process whose command line names
//   our config) without touching it.
// - It is spawned on the first apply() that lists a plan and ended when none is left.
// - Server, weight and drain changes go over the admin socket (no reload). Only a change of
//   what the config's frontends and backends are (plan set, listen, preview_listen, header
//   routes, health path) rewrites it and reloads seamlessly (-sf <old> -x admin.sock: the
//   listeners are handed over, no connection is refused). The config file is rewritten on
//   every change so a restarted haproxy serves the last split.
// - A supervisor thread restarts haproxy when it dies (backoff 0.5 s doubling up to
//   restart_backoff_max_ms) and removes servers that left once their sessions reach 0.
// - A plan whose address is taken by another program is left out (its error says which
//   address and why) so the other plans keep serving.
//
// Thread-safety: every public call takes one mutex, shared with the supervisor thread.
// Nothing throws.

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "drivers/process/proc_stat.h"
#include "drivers/traffic/haproxy/haproxy_config.h"
#include "drivers/traffic/haproxy/request_log.h"
#include "drivers/traffic/router.h"

namespace tide::drivers::traffic {

using Json = nlohmann::json;

struct HaproxyOptions {
  std::string binary = "/usr/sbin/haproxy";
  std::string metrics_listen;  // "" = 127.0.0.1 on a port free when haproxy first starts
  HealthCheckOptions check;
  std::chrono::milliseconds restart_backoff_max{30000};
  // haproxy's per-request log (RequestLog): 1 logs every request, N one in N (the histograms
  // then count a sample), 0 none (no p95 at the router). Each logged request costs haproxy
  // and the host a few microseconds of CPU (docs/performance.md).
  int request_log_sample = 1;
};

// The `traffic:` section of the host config for kind "haproxy": {binary, metrics_listen,
// check_interval_ms, check_fall, check_rise, restart_backoff_max_ms, request_log_sample}, all
// optional.
// Unknown keys and bad values are kInvalidArgument with one detail per field ("traffic.<key>").
Result<HaproxyOptions> parseHaproxyOptions(const Json& config);

// Errors: the config's (above); no data dir; no executable haproxy at `binary`.
Result<std::unique_ptr<Router>> makeHaproxyRouter(const Json& config, const RouterContext& context);
// The same from options already parsed: the factory of the router table's "haproxy" row.
Result<std::unique_ptr<Router>> buildHaproxyRouter(const HaproxyOptions& options, const RouterContext& context);

class HaproxyRouter final : public Router {
 public:
  HaproxyRouter(HaproxyOptions options, std::string dir);
  // Stops the supervisor, leaves haproxy running (a host that ends without stop()).
  ~HaproxyRouter() override;

  Status start() override;
  Status apply(const std::vector<DesiredPlanTraffic>& plans) override;
  Result<RouterState> applied() override;
  Status stop() override;
  // HAProxy's exporter labels: proxy="be_<plan>", server="<server id>" (both as the config
  // names them, encoded).
  std::string metricBackend(const std::string& plan) const override;
  std::string metricServer(const std::string& server_id) const override;
  // RequestLog's latency histograms (tide_router_response_seconds).
  std::string metricsText() const override;

 private:
  struct Running {
    ProcessIdentity identity;
    Json structure;  // what its config's frontends and backends are; null when unknown
  };

  // REQUIRES: mu_ is held (for all the *Locked members).
  bool aliveLocked();
  Status reconcileLocked();
  Status launchLocked(const Json& structure, bool reload);
  Status reconcileRuntimeLocked(const std::vector<const DesiredPlanTraffic*>& served);
  void endProcessesLocked();
  std::string metricsListenLocked();
  void supervise();

  const HaproxyOptions options_;
  const std::string dir_;
  const std::string config_path_;
  const std::string pid_path_;
  const std::string socket_path_;
  const std::string log_path_;
  const std::string running_path_;
  const std::string desired_path_;
  // haproxy's per-request log (log.sock), read on its own thread; the config names its socket
  // only while it runs (log_socket_).
  RequestLog request_log_;

  std::mutex mu_;
  std::condition_variable wake_;
  std::thread supervisor_;
  bool started_ = false;
  bool stopping_ = false;
  std::vector<DesiredPlanTraffic> desired_;
  std::map<std::string, std::string> plan_errors_;  // plan -> why it is not served
  std::optional<Running> running_;
  std::string metrics_listen_;     // chosen once, kept across restarts and reloads
  std::string log_socket_;         // request_log_'s socket once it started; "" without one
  std::string last_launch_error_;  // why the last start of haproxy failed
  bool removals_pending_ = false;  // servers that left still have sessions or errored
  std::chrono::steady_clock::time_point launched_at_{};
  std::chrono::steady_clock::time_point next_restart_{};
  std::chrono::milliseconds backoff_{0};
};

}  // namespace tide::drivers::traffic
