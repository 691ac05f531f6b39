#include "host/cli/serve.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>

#include "drivers/agent/agent_hub.h"
#include "drivers/process/workload_user.h"
#include "drivers/traffic/router.h"
#include "drivers/traffic/routers.h"
#include "host/api/server.h"
#include "host/config/host_config.h"
#include "host/core/clock.h"
#include "host/core/dir_lock.h"
#include "host/engine/doctor.h"
#include "host/engine/driver_set.h"
#include "host/engine/engine.h"
#include "host/engine/exit_stop.h"
#include "host/engine/notifier.h"
#include "host/engine/retention.h"
#include "host/engine/script_recorder.h"
#include "host/ledger/ledger.h"
#include "host/lua/registry/script_registry.h"

namespace tide::cli {
namespace {

// "127.0.0.1:7700" → {"127.0.0.1", 7700}; port 0 asks for an ephemeral one.
Result<std::pair<std::string, int>> splitListen(const std::string& listen) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::invalidArgument("listen address '" + listen + "' must be HOST:PORT",
                                   {{"listen", "not HOST:PORT", ""}});
  }
  const std::string port_text = listen.substr(colon + 1);
  int port = -1;
  try {
    size_t used = 0;
    port = std::stoi(port_text, &used);
    if (used != port_text.size()) port = -1;
  } catch (const std::exception&) {
    port = -1;
  }
  if (port < 0 || port > 65535) {
    return Status::invalidArgument("listen port '" + port_text + "' must be 0..65535", {{"listen", "bad port", ""}});
  }
  return std::make_pair(listen.substr(0, colon), port);
}

// The config file with the command line's flags laid over it, finalized.
Result<config::HostConfig> resolveConfig(const ServeOptions& options) {
  TIDE_ASSIGN_OR_RETURN(config::HostConfig config, config::loadHostConfig(options.config_path));
  if (!options.listen.empty()) config.listen = options.listen;
  if (!options.data_dir.empty()) config.data_dir = options.data_dir;
  config::finalizeHostConfig(config);
  return config;
}

// The data dir, readable by its owner only (it holds the admin token).
Status makeDataDir(const std::string& data_dir) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return Status::internal("cannot create data dir " + data_dir + ": " + ec.message());
  ::chmod(data_dir.c_str(), 0700);
  return Status::ok();
}

// docs/architecture.md#tide-doctor: the host runs the doctor's checks on start. Every finding is
// reported loudly (stderr, and an alarm event for violations). A broken ledger rule makes the
// answer false: the API still serves so operators can inspect, but the control loop does not
// act on a ledger it cannot trust. A driver's inventory that disagrees with the ledger (a leak,
// a duplicate) does not stop the start: the observer removes what the ledger does not know
// after its grace period, and the ledger's own rules keep a second runtime from becoming active.
Result<bool> hostIsSound(ledger::Ledger& ledger, engine::DriverSet& drivers, std::ostream& err) {
  TIDE_ASSIGN_OR_RETURN(engine::DoctorReport report, engine::examine(ledger, drivers));
  std::vector<std::string> ledger_violations, inventory_violations;
  for (const engine::Finding& f : report.findings) {
    if (!f.violation) {
      err << "tide serve: doctor: " << f.kind << ": " << f.message << "\n";
    } else if (f.subject == "ledger") {
      err << "tide serve: LEDGER INVARIANT VIOLATED: " << f.message << "\n";
      ledger_violations.push_back(f.message);
    } else {
      err << "tide serve: DRIVER INVENTORY DISAGREES WITH THE LEDGER: " << f.kind << ": " << f.message << "\n";
      inventory_violations.push_back(f.kind + ": " + f.message);
    }
  }
  if (!inventory_violations.empty()) {
    const Status alarmed = ledger.audit().appendEvent("alarm.inventory", "ledger",
                                                      model::Json{{"violations", inventory_violations}}, "host");
    if (!alarmed.isOk()) err << "tide serve: alarm.inventory not recorded: " << alarmed.message() << "\n";
  }
  if (ledger_violations.empty()) return true;
  const Status alarmed =
      ledger.audit().appendEvent("alarm.invariant", "ledger", model::Json{{"violations", ledger_violations}}, "host");
  if (!alarmed.isOk()) err << "tide serve: alarm.invariant not recorded: " << alarmed.message() << "\n";
  return false;
}

lua::ScriptRegistryOptions scriptRegistryOptions(const config::HostConfig& config) {
  lua::ScriptRegistryOptions options;
  options.policies_dir = config.policies_dir;
  options.scripts_dir = config.scripts_dir;
  options.limits.deadline = std::chrono::milliseconds(config.limits.lua_deadline_ms);
  options.limits.memory_bytes = static_cast<size_t>(config.limits.lua_memory_mib) << 20;
  return options;
}

// docs/architecture.md#the-lua-host: scripts load at start and on every change; a script that
// fails is reported, its last good version kept in the ledger runs instead (when there is
// one), and it never stops the host.
void loadScripts(lua::ScriptRegistry& scripts, const config::HostConfig& config, std::ostream& out, std::ostream& err) {
  const lua::ReloadSummary loaded = scripts.reloadAll();
  out << "tide: scripts: " << loaded.loaded << " loaded, " << loaded.failed << " failed";
  if (loaded.restored > 0) out << ", " << loaded.restored << " of them running their last good version from the ledger";
  out << " (" << config.policies_dir << ", " << config.scripts_dir << ")" << std::endl;
  for (const std::string& error : loaded.errors) err << "tide serve: script not loaded: " << error << "\n";
  if (Status watching = scripts.startWatching(); !watching.isOk()) {
    err << "tide serve: scripts will not reload on change: " << watching.toString() << "\n";
  }
}

// docs/architecture.md#the-process-driver: with process.run_as, workloads run as another user, who
// must not be able to read or change the data dir (the ledger, admin.token, other workloads' logs).
Result<std::optional<drivers::WorkloadUser>> workloadUser(const config::HostConfig& config) {
  if (config.process.run_as.empty()) return std::optional<drivers::WorkloadUser>();
  TIDE_ASSIGN_OR_RETURN(drivers::WorkloadUser user,
                        drivers::lookUpWorkloadUser(config.process.run_as, "process.run_as"));
  struct stat info {};
  if (::stat(config.data_dir.c_str(), &info) != 0) return Status::internal("cannot stat data dir " + config.data_dir);
  if (info.st_uid != ::geteuid() || (info.st_mode & 077) != 0) {
    return Status::invalidArgument(
        "process.run_as: the data dir " + config.data_dir + " must belong to the host's user with mode 0700, so " +
            user.name + " cannot read it",
        {{"data_dir", "must be owned by the host's user, mode 0700, when process.run_as is set", ""}});
  }
  return std::optional<drivers::WorkloadUser>(std::move(user));
}

drivers::DriverContext driverContext(const config::HostConfig& config, const Clock& clock) {
  drivers::DriverContext context;
  context.clock = &clock;
  context.data_dir = config.data_dir;
  context.volume_root = config.process.volume_root;
  context.port_range_start = config.process.port_range_start;
  context.port_range_end = config.process.port_range_end;
  context.image_catalog = config.process.image_catalog;
  context.log_max_bytes = config.process.log_max_bytes;
  context.log_retention = std::chrono::hours(config.process.log_retention_hours);
  std::error_code ec;
  context.tide_binary = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  return context;
}

// The control loop's settings from the config's limits; hook log lines go to `out`, one whole
// line at a time under `out_mu`.
engine::EngineOptions engineOptions(const config::HostConfig& config, const lua::LuaLimits& lua_limits,
                                    std::ostream& out, std::mutex& out_mu) {
  engine::EngineOptions options;
  options.interval = std::chrono::milliseconds(config.limits.reconcile_interval_ms);
  options.chunk = config.limits.executor_chunk;
  options.approval.max_per_pass = config.limits.approval_chunk;
  options.rate_per_second = config.limits.executor_rate_per_second;
  options.executor.workers = config.limits.executor_workers;
  options.executor.operation_deadline = std::chrono::seconds(config.limits.operation_deadline_s);
  options.executor.max_attempts = config.limits.max_attempts;
  options.observer.discrepancy_threshold = config.limits.discrepancy_threshold;
  options.observer.orphan_grace = std::chrono::seconds(config.limits.orphan_grace_s);
  options.liveness.replace_after = std::chrono::seconds(config.agents.replace_after_s);
  options.liveness.max_unreachable_share = config.agents.max_unreachable_share;
  options.liveness.partition_window = std::chrono::seconds(config.agents.partition_window_s);
  options.lua_limits = lua_limits;
  options.default_outcome = config.default_verdict == "deny" ? lua::Outcome::kRejected : lua::Outcome::kPendingApproval;
  options.hooks_output_dir = std::filesystem::path(config.data_dir) / "hooks";
  options.metric_providers = config.analysis.providers;
  options.hook_log = [&out, &out_mu](const lua::LogRecord& r) {
    const std::string fields =
        r.fields.is_null() ? "" : " " + r.fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const std::string line = "tide: hook " + r.where + ": " + r.level + " " + r.message + fields;
    std::lock_guard<std::mutex> lock(out_mu);
    out << line << std::endl;
  };
  return options;
}

api::ServerOptions serverOptions(const config::HostConfig& config, const std::pair<std::string, int>& address,
                                 const engine::EngineOptions& engine_options) {
  api::ServerOptions options;
  options.host = address.first;
  options.port = address.second;
  options.max_body_bytes = config.limits.max_body_bytes;
  options.limits.max_connections = static_cast<size_t>(config.limits.max_connections);
  options.limits.request_read_deadline = std::chrono::seconds(config.limits.request_read_deadline_s);
  options.limits.max_header_bytes = static_cast<size_t>(config.limits.max_header_bytes);
  options.limits.max_headers = static_cast<size_t>(config.limits.max_headers);
  options.limits.max_json_depth = config.limits.max_json_depth;
  options.tls = {config.tls.cert, config.tls.key};
  options.auth_enabled = config.auth.enabled;
  options.config_tokens = config.auth.tokens;
  options.approver_must_differ = config.auth.approver_must_differ;
  options.data_dir = config.data_dir;
  options.command_allow = config.process.command_allow;
  options.lua_limits = engine_options.lua_limits;
  options.default_outcome = engine_options.default_outcome;
  return options;
}

// Lets the API hold the connections its limits allow (docs/architecture.md#connections-limits-and-tls):
// every waiting connection is a file descriptor, and a soft limit of 1,024 (a common default)
// would stop accept() well before limits.max_waiting_connections. Raised as far as the hard
// limit allows; best effort, since the host runs with fewer too.
void raiseOpenFileLimit(const api::HttpLimits& limits) {
  const rlim_t wanted = static_cast<rlim_t>(limits.max_connections + limits.max_waiting_connections + 1024);
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= wanted) return;
  files.rlim_cur = std::min(wanted, files.rlim_max);
  (void)::setrlimit(RLIMIT_NOFILE, &files);  // best effort, see above
}

// docs/architecture.md#stopping-workloads-on-exit: after the control loop and the API stopped, so
// nothing starts a workload again meanwhile.
void stopWorkloads(ledger::Ledger& ledger, engine::DriverSet& drivers, std::ostream& out, std::ostream& err) {
  auto stopped = engine::stopWorkloadsOnExit(ledger, drivers, "host");
  if (!stopped.isOk()) {
    err << "tide serve: workloads not stopped: " << stopped.status().toString() << "\n";
    return;
  }
  out << "tide: stopped " << stopped->stopped.size() << " workload" << (stopped->stopped.size() == 1 ? "" : "s")
      << " (--stop-workloads-on-exit); the next start restarts them" << std::endl;
  for (const std::string& left : stopped->left) err << "tide serve: workload left running: " << left << "\n";
}

}  // namespace

sigset_t blockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

void waitForStopSignal(const sigset_t& stop_signals, std::ostream& out) {
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  out << "tide: " << (signal_number == SIGINT ? "SIGINT" : "SIGTERM") << " received, stopping" << std::endl;
}

Result<config::HostConfig> resolveHostConfig(const ServeOptions& options) { return resolveConfig(options); }

drivers::DriverContext hostDriverContext(const config::HostConfig& config, const Clock& clock) {
  return driverContext(config, clock);
}

int runServe(const ServeOptions& options, std::ostream& out, std::ostream& err) {
  auto resolved = resolveConfig(options);
  if (!resolved.isOk()) {
    err << "tide serve: " << resolved.status().toString() << "\n";
    return 2;
  }
  const config::HostConfig config = std::move(resolved).value();
  auto address = splitListen(config.listen);
  if (!address.isOk()) {
    err << "tide serve: " << address.status().toString() << "\n";
    return 2;
  }
  if (Status made = makeDataDir(config.data_dir); !made.isOk()) {
    err << "tide serve: " << made.message() << "\n";
    return 1;
  }
  // docs/architecture.md#start-up: one host per data dir, held until this process ends.
  auto data_dir_lock = DirLock::acquire(config.data_dir);
  if (!data_dir_lock.isOk()) {
    err << "tide serve: " << data_dir_lock.status().message() << "\n";
    return 1;
  }
  auto run_as = workloadUser(config);
  if (!run_as.isOk()) {
    err << "tide serve: " << run_as.status().toString() << "\n";
    return 2;
  }
  sigset_t stop_signals = blockStopSignals();

  SystemClock clock;
  auto opened = ledger::Ledger::open(config.database, clock);
  if (!opened.isOk()) {
    err << "tide serve: " << opened.status().toString() << "\n";
    return 1;
  }
  auto& ledger = *opened.value();

  engine::LedgerScriptRecorder recorder(ledger);
  const lua::ScriptRegistryOptions registry_options = scriptRegistryOptions(config);
  lua::ScriptRegistry scripts(registry_options, recorder, clock);
  loadScripts(scripts, config, out, err);

  // docs/agents.md: the node agents' documents and reports, kept under <data_dir>/agents; a
  // new epoch from here on.
  auto agent_hub = drivers::AgentHub::open((std::filesystem::path(config.data_dir) / "agents").string(), clock,
                                           {std::chrono::seconds(config.agents.heartbeat_ttl_s)});
  if (!agent_hub.isOk()) {
    err << "tide serve: " << agent_hub.status().toString() << "\n";
    return 1;
  }

  // docs/architecture.md#the-control-loop, #drivers: the control loop and the drivers it runs workloads through.
  drivers::DriverContext driver_context = driverContext(config, clock);
  driver_context.run_as = *run_as;
  driver_context.agent_hub = agent_hub->get();
  engine::DriverSet driver_set(ledger, driver_context);
  std::mutex out_mu;
  engine::EngineOptions engine_options = engineOptions(config, registry_options.limits, out, out_mu);
  // docs/architecture.md#traffic: the router of `traffic.router`. Constructing it starts
  // nothing; the engine starts it once some plan declares traffic.
  std::unique_ptr<drivers::traffic::Router> router;
  std::string traffic_unavailable;
  {
    drivers::traffic::RouterContext router_context;
    router_context.data_dir = config.data_dir;
    router_context.clock = &clock;
    auto made = drivers::traffic::makeRouter(config.traffic.router, config.traffic.settings, router_context);
    if (made.isOk()) {
      router = std::move(made).value();
    } else if (config.traffic.declared) {
      err << "tide serve: traffic: " << made.status().toString() << "\n";
      return 1;
    } else {
      // No `traffic:` in tide.yaml and no default router (haproxy is not installed): the host
      // runs, and refuses plans that declare traffic with this reason.
      traffic_unavailable = made.status().message();
      err << "tide serve: WARNING: no traffic router: " << traffic_unavailable
          << "; plans that declare traffic: are refused" << std::endl;
    }
  }
  engine_options.router = router.get();
  engine::Engine control_loop(ledger, scripts, driver_set, clock, engine_options);

  api::ServerOptions server_options = serverOptions(config, *address, engine_options);
  server_options.scripts = &scripts;
  server_options.agents = agent_hub->get();
  server_options.agent_long_polls = config.agents.max_long_polls;
  server_options.read_logs = [&](const std::string& meta_instance, const std::string& application,
                                 const std::optional<drivers::LogCursor>& from, size_t max_bytes) {
    return engine::readMetaInstanceLog(ledger, driver_set, meta_instance, application, from, max_bytes);
  };
  // The control loop's, and the router's own (the HAProxy router's latency histograms).
  server_options.extra_metrics = [&] {
    return control_loop.metrics().render() + (router ? router->metricsText() : std::string());
  };
  server_options.doctor = [&]() -> Result<model::Json> {
    TIDE_ASSIGN_OR_RETURN(engine::DoctorReport report, engine::examine(ledger, driver_set));
    return engine::doctorReportJson(report);
  };
  if (router) {
    server_options.traffic_view = [&](const std::string& plan) -> model::Json {
      return engine::trafficViewJson(control_loop.traffic().view(plan));
    };
  }
  server_options.traffic_unavailable = traffic_unavailable;
  raiseOpenFileLimit(server_options.limits);
  api::ApiServer server(server_options, ledger, clock);
  if (Status started = server.start(); !started.isOk()) {
    err << "tide serve: " << started.toString() << "\n";
    return 1;
  }
  for (const std::string& warning : api::exposureWarnings(server_options)) {
    err << "tide serve: WARNING: " << warning << std::endl;
  }
  if (::geteuid() == 0 && !*run_as) {
    err << "tide serve: WARNING: the host runs as root and process.run_as is not set: workloads run as root and "
           "can read the data dir"
        << std::endl;
  }
  const std::string scheme = server_options.tls.enabled() ? "https://" : "http://";
  const std::string url = scheme + address->first + ":" + std::to_string(server.port());
  std::ofstream(std::filesystem::path(config.data_dir) / "tide.addr", std::ios::trunc) << url << "\n";
  // The API serves while the invariants are checked (walking the event chain takes seconds on
  // a long history): whatever the check finds, people can look; only the control loop waits.
  auto sound = hostIsSound(ledger, driver_set, err);
  if (!sound.isOk()) {
    err << "tide serve: invariant check failed: " << sound.status().toString() << "\n";
    server.stop();
    return 1;
  }
  // docs/architecture.md#retention-and-audit: pruning runs only on a ledger that verified, so
  // it never cuts away the evidence of a broken chain.
  engine::Pruner pruner(ledger, clock, config.retention);
  // docs/operating.md#notifications: events keep accumulating whether or not the loop runs.
  engine::Notifier notifier(ledger, clock, config.notifications.webhooks,
                            (std::filesystem::path(config.data_dir) / "notifications").string());
  notifier.start();
  if (*sound) {
    control_loop.start();
    pruner.start();
  } else {
    err << "tide serve: the control loop and retention are not started until the ledger's invariants hold\n";
  }
  out << "tide listening on " << url << " (ledger " << config.database << ", schema v" << ledger.schemaVersion() << ")"
      << std::endl;

  waitForStopSignal(stop_signals, out);
  notifier.stop();
  pruner.stop();
  control_loop.stop();
  server.stop();
  if (options.stop_workloads_on_exit && *sound) stopWorkloads(ledger, driver_set, out, err);
  // The router outlives the host like the workloads it sends requests to (a restarted host
  // adopts it), unless the host stops those workloads too.
  if (options.stop_workloads_on_exit && router) {
    if (Status stopped = router->stop(); !stopped.isOk()) err << "tide serve: " << stopped.toString() << "\n";
  }
  scripts.stopWatching();
  return 0;
}

}  // namespace tide::cli
