#pragma once
// The embedded HTTP API (docs/architecture.md#http-api-and-auth): JSON over cpp-httplib, one route table (routes.h),
// bearer-token auth with roles (auth.h), Prometheus metrics (metrics.h).
//
//   ledger::Ledger& ledger = ...;
//   ApiServer server({.port = 0, .data_dir = "/var/lib/tide"}, ledger, clock);
//   if (Status s = server.start(); !s) ...;   // binds, then serves on its own threads
//   int port = server.port();
//   server.stop();                             // also done by the destructor
//
// Thread-safety: every method may be called from any thread. Requests are served on a
// pool owned by the server; `ledger` and `clock` must outlive it.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "drivers/driver.h"
#include "host/core/clock.h"
#include "host/core/status.h"
#include "host/ledger/ledger.h"
#include "host/lua/policy/policy_verdict.h"
#include "host/config/host_config.h"
#include "host/lua/runtime/lua_state.h"

namespace tide::drivers {
class AgentHub;
}  // namespace tide::drivers

namespace tide::lua {
class ScriptRegistry;
}

namespace tide::api {

// What one client may ask of the transport (docs/api.md#limits; the host config's `limits`).
struct HttpLimits {
  // Requests served at once, each on its own thread; a request whose head arrives beyond
  // them is answered 503 at once. A connection waiting for its next request, or for the rest
  // of its headers, holds none of them.
  size_t max_connections = 128;
  // A request's TLS handshake, request line, headers and body must all arrive within this,
  // counted from the request's first byte.
  std::chrono::milliseconds request_read_deadline{30'000};
  size_t max_header_bytes = 16 * 1024;  // the request line and all header lines
  size_t max_headers = 100;
  int max_json_depth = 64;  // arrays and objects nested in a body
  // Connections whose request head has not arrived whole (they hold no thread); past this a
  // new one is closed at once, unanswered, so a flood holds a bounded number of sockets.
  size_t max_waiting_connections = 4096;
};

// PEM files for TLS (the host config's `tls`); both empty: plain HTTP.
struct TlsFiles {
  std::string cert;  // the certificate chain, leaf first
  std::string key;
  bool enabled() const { return !cert.empty() || !key.empty(); }
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 7700;  // 0 = ephemeral; see ApiServer::port()
  size_t max_body_bytes = 1 << 20;
  HttpLimits limits;
  TlsFiles tls;
  bool auth_enabled = true;
  std::vector<config::TokenConfig> config_tokens;  // auth.tokens: each acts under its name
  // Where the bootstrap admin token is written (<data_dir>/admin.token, mode 0600).
  std::string data_dir;
  // process.command_allow: globs over argv[0] of the raw commands and exec health checks
  // callers below admin may submit (host/api/command_access.h).
  std::vector<std::string> command_allow;
  // The scripts /v1/scripts and /v1/policies/evaluate serve; not owned, must outlive the
  // server. Null: those routes answer 503.
  lua::ScriptRegistry* scripts = nullptr;
  lua::LuaLimits lua_limits;                                      // for dry-run evaluations
  lua::Outcome default_outcome = lua::Outcome::kPendingApproval;  // when no policy approves
  // docs/architecture.md#human-approval: a person may approve or reject only operations someone else requested
  // (config `auth.approver_must_differ`). With auth disabled every caller is the same
  // "anonymous" principal, so the rule is not applied.
  bool approver_must_differ = true;
  // Reads a meta instance's log, its last `max_bytes` or from a place on, as
  // engine::readMetaInstanceLog (through the drivers; the server cannot). kNotFound when there is no log. Called on the server's threads, so it must be
  // thread-safe. Null: GET /v1/instances/{name}/logs answers 503.
  std::function<Result<drivers::LogSlice>(const std::string& meta_instance, const std::string& application,
                                          const std::optional<drivers::LogCursor>& from, size_t max_bytes)>
      read_logs;
  // More Prometheus text appended to /metrics (the control loop's pass, driver-call and
  // attempt series). Called on the server's threads, so it must be thread-safe.
  std::function<std::string()> extra_metrics;
  // docs/architecture.md#tide-doctor: the ledger's invariants and the drivers' inventories against
  // it, as engine::doctorReportJson. Called on the server's threads, so it must be thread-safe.
  // Null: GET /v1/doctor answers 503.
  std::function<Result<model::Json>()> doctor;
  // docs/architecture.md#traffic: a plan's traffic as the engine last saw it ({listen,
  // preview_listen, asked, applied, router, reason}), or null when the plan serves none or the
  // host has no router. Called on the server's threads (engine::TrafficController::view locks).
  std::function<model::Json(const std::string& plan)> traffic_view;
  // Why this host runs no traffic router ("" when it runs one): plans that declare `traffic:`
  // are refused (422 naming traffic.listen) with this reason.
  std::string traffic_unavailable;
  // The host's node agents (docs/agents.md): the /v1/agents routes answer 503 without them.
  // Must outlive the server.
  drivers::AgentHub* agents = nullptr;
  // Desired-state long polls held at once (agents.max_long_polls); beyond them, answered at once.
  int agent_long_polls = 64;
};

// What a person starting the host must hear about how exposed it is: auth turned off, or a
// listener beyond loopback without TLS (tokens and records would cross the network in clear
// text). Empty when neither holds.
std::vector<std::string> exposureWarnings(const ServerOptions& options);

class ApiServer {
 public:
  ApiServer(ServerOptions options, ledger::Ledger& ledger, const Clock& clock);
  ~ApiServer();  // stop()s
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Checks the options, writes the bootstrap admin token when auth is on and no token
  // exists anywhere (see Authenticator::bootstrap), binds, and starts serving. When it
  // returns OK the port accepts connections. Errors: kInvalidArgument for bad options,
  // kUnavailable when the address cannot be bound, kConflict when already started.
  Status start();

  // Stops accepting, ends long polls and event streams, waits for requests in flight.
  // Idempotent; start() may be called again afterwards.
  void stop();

  // The bound port while started (the real one when options.port was 0), else 0.
  int port() const;

  // How many requests hold a wait slot now (long polls and event streams that found nothing
  // and wait for events), so a test can act once its request waits instead of sleeping.
  int waitingRequests() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tide::api
