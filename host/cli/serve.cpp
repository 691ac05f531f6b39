#include "host/cli/serve.h"

#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <ostream>

#include "host/api/server.h"
#include "host/config/host_config.h"
#include "host/core/clock.h"
#include "host/engine/driver_set.h"
#include "host/engine/engine.h"
#include "host/engine/script_recorder.h"
#include "host/ledger/ledger.h"
#include "host/lua/registry/script_registry.h"

namespace tide::cli {
namespace {

// "127.0.0.1:7700" → {"127.0.0.1", 7700}; port 0 asks for an ephemeral one.
Result<std::pair<std::string, int>> splitListen(const std::string& listen) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::invalidArgument("listen address '" + listen + "' must be HOST:PORT", {{"listen", "not HOST:PORT", ""}});
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

}  // namespace

int runServe(const ServeOptions& options, std::ostream& out, std::ostream& err) {
  auto loaded = config::loadHostConfig(options.config_path);
  if (!loaded.isOk()) {
    err << "tide serve: " << loaded.status().toString() << "\n";
    return 2;
  }
  config::HostConfig config = std::move(loaded).value();
  if (!options.listen.empty()) config.listen = options.listen;
  if (!options.data_dir.empty()) config.data_dir = options.data_dir;
  config::finalizeHostConfig(config);

  auto address = splitListen(config.listen);
  if (!address.isOk()) {
    err << "tide serve: " << address.status().toString() << "\n";
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(config.data_dir, ec);
  if (ec) {
    err << "tide serve: cannot create data dir " << config.data_dir << ": " << ec.message() << "\n";
    return 1;
  }
  ::chmod(config.data_dir.c_str(), 0700);

  // Block the stop signals before any thread starts so every thread inherits the mask
  // and only sigwait() below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  SystemClock clock;
  auto opened = ledger::Ledger::open(config.database, clock);
  if (!opened.isOk()) {
    err << "tide serve: " << opened.status().toString() << "\n";
    return 1;
  }
  auto& ledger = *opened.value();

  // docs/architecture.md#invariants: the host checks the ledger's rules on start. A violation is reported
  // loudly (stderr and an alarm event); the API still serves so operators can inspect,
  // but the control loop does not act on a ledger it cannot trust.
  bool ledger_sound = true;
  if (auto violations = ledger.checkInvariants(); !violations.isOk()) {
    err << "tide serve: invariant check failed: " << violations.status().toString() << "\n";
    return 1;
  } else if (!violations->empty()) {
    for (const auto& v : *violations) err << "tide serve: LEDGER INVARIANT VIOLATED: " << v << "\n";
    ledger.appendEvent("alarm.invariant", "ledger", model::Json{{"violations", *violations}}, "host");
    ledger_sound = false;
  }

  // docs/architecture.md#the-lua-host: scripts load at start and on every change; a script that fails is reported
  // and left out (or its previous version kept), and never stops the host.
  engine::LedgerScriptRecorder recorder(ledger);
  lua::ScriptRegistryOptions registry_options;
  registry_options.policies_dir = config.policies_dir;
  registry_options.scripts_dir = config.scripts_dir;
  registry_options.limits.deadline = std::chrono::milliseconds(config.limits.lua_deadline_ms);
  registry_options.limits.memory_bytes = static_cast<size_t>(config.limits.lua_memory_mib) << 20;
  lua::ScriptRegistry scripts(registry_options, recorder, clock);
  const lua::ReloadSummary loaded_scripts = scripts.reloadAll();
  out << "tide: scripts: " << loaded_scripts.loaded << " loaded, " << loaded_scripts.failed << " failed ("
      << config.policies_dir << ", " << config.scripts_dir << ")" << std::endl;
  for (const std::string& error : loaded_scripts.errors) err << "tide serve: script not loaded: " << error << "\n";
  if (Status watching = scripts.startWatching(); !watching.isOk()) {
    err << "tide serve: scripts will not reload on change: " << watching.toString() << "\n";
  }

  // docs/architecture.md#the-control-loop, docs/architecture.md#drivers: the control loop and the drivers it runs workloads through.
  drivers::DriverContext driver_context;
  driver_context.data_dir = config.data_dir;
  driver_context.volume_root = config.process.volume_root;
  driver_context.port_range_start = config.process.port_range_start;
  driver_context.port_range_end = config.process.port_range_end;
  driver_context.image_catalog = config.process.image_catalog;
  std::error_code self_ec;
  driver_context.tide_binary = std::filesystem::read_symlink("/proc/self/exe", self_ec).string();
  engine::DriverSet driver_set(ledger, driver_context);
  engine::EngineOptions engine_options;
  engine_options.interval = std::chrono::milliseconds(config.limits.reconcile_interval_ms);
  engine_options.chunk = config.limits.executor_chunk;
  engine_options.rate_per_second = config.limits.executor_rate_per_second;
  engine_options.executor.workers = config.limits.executor_workers;
  engine_options.executor.operation_deadline = std::chrono::seconds(config.limits.operation_deadline_s);
  engine_options.executor.max_attempts = config.limits.max_attempts;
  engine_options.lua_limits = registry_options.limits;
  engine_options.default_outcome =
      config.default_verdict == "deny" ? lua::Outcome::kRejected : lua::Outcome::kPendingApproval;
  engine_options.hooks_output_dir = std::filesystem::path(config.data_dir) / "hooks";
  std::mutex hook_log_mu;
  engine_options.hook_log = [&out, &hook_log_mu](const lua::LogRecord& r) {
    const std::string fields =
        r.fields.is_null() ? "" : " " + r.fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const std::string line = "tide: hook " + r.where + ": " + r.level + " " + r.message + fields;
    std::lock_guard<std::mutex> lock(hook_log_mu);
    out << line << std::endl;
  };
  engine::Engine control_loop(ledger, scripts, driver_set, clock, engine_options);

  api::ServerOptions server_options;
  server_options.host = address->first;
  server_options.port = address->second;
  server_options.max_body_bytes = config.limits.max_body_bytes;
  server_options.auth_enabled = config.auth.enabled;
  for (const auto& token : config.auth.tokens) server_options.config_tokens.emplace_back(token.token, token.role);
  server_options.approver_must_differ = config.auth.approver_must_differ;
  server_options.data_dir = config.data_dir;
  server_options.scripts = &scripts;
  server_options.lua_limits = registry_options.limits;
  server_options.default_outcome = engine_options.default_outcome;
  server_options.read_logs = [&](const std::string& meta_instance, size_t tail_bytes) {
    return engine::readMetaInstanceLog(ledger, driver_set, meta_instance, tail_bytes);
  };
  server_options.extra_metrics = [&] { return control_loop.metrics().render(); };
  api::ApiServer server(server_options, ledger, clock);
  if (Status started = server.start(); !started.isOk()) {
    err << "tide serve: " << started.toString() << "\n";
    return 1;
  }
  const std::string url = "http://" + address->first + ":" + std::to_string(server.port());
  {
    std::ofstream addr(std::filesystem::path(config.data_dir) / "tide.addr", std::ios::trunc);
    addr << url << "\n";
  }
  if (ledger_sound) {
    control_loop.start();
  } else {
    err << "tide serve: the control loop is not started until the ledger's invariants hold\n";
  }
  out << "tide listening on " << url << " (ledger " << config.database << ", schema v" << ledger.schemaVersion()
      << ")" << std::endl;

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  out << "tide: " << (signal_number == SIGINT ? "SIGINT" : "SIGTERM") << " received, stopping" << std::endl;
  control_loop.stop();
  server.stop();
  scripts.stopWatching();
  return 0;
}

}  // namespace tide::cli
