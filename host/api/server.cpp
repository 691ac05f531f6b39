// The adapter between cpp-httplib and tide's handlers: with transport.cpp (connections,
// limits, TLS) the only file that sees httplib, and the one that catches what it throws. It
// matches the route, authenticates, reads the body within the limits, calls the handler and
// renders its Result; it also logs and counts requests.

#include "host/api/server.h"

#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <mutex>
#include <thread>

#include "host/api/auth.h"
#include "host/api/errors.h"
#include "host/api/handler.h"
#include "host/api/metrics.h"
#include "host/api/namespace_scope.h"
#include "host/api/read_cache.h"
#include "host/api/request_inputs.h"
#include "host/api/routes.h"
#include "host/api/transport.h"
#include "host/lua/policy/policy_pool.h"
#include "host/lua/registry/script_registry.h"

namespace tide::api {
namespace {

using std::chrono::steady_clock;

// Requests one kept-alive connection may carry before httplib closes it (its default, 5,
// makes a busy client reconnect all the time).
constexpr size_t kKeepAliveRequests = 100000;

// Long polls and event streams together; the rest of the pool stays free for requests.
constexpr int kMaxWaitingRequests = 16;
// How much past max_body_bytes is still read (and dropped) so that a client that is still
// sending gets to read the error response instead of a reset connection.
constexpr size_t kDrainAllowance = 1 << 20;

// What the logger needs to know about the request being served. Set by the pre-routing
// hook and the dispatcher, read by the logger: httplib runs all three on the thread that
// serves the request, one request at a time.
struct RequestTrace {
  steady_clock::time_point start;
  std::string_view route = kUnmatchedRoute;
  std::string actor;
  bool started = false;
  std::string allow;  // the methods the path serves, for a 405's Allow header
};
thread_local RequestTrace t_trace;

// What became of a request's body: left in the connection, read to the end, or cut off
// midway (the connection cannot carry another request then).
enum class BodyState { kUnread, kRead, kBroken };

std::string lowerMediaType(const std::string& header) {
  std::string type = header.substr(0, header.find(';'));
  type.erase(std::remove_if(type.begin(), type.end(), [](unsigned char c) { return std::isspace(c); }), type.end());
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
  return type;
}

// Request paths go to the log verbatim except for control characters.
std::string printable(std::string_view text) {
  std::string out(text.substr(0, 512));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

std::string joined(const std::vector<std::string_view>& items) {
  std::string out;
  for (std::string_view item : items) out += (out.empty() ? "" : ", ") + std::string(item);
  return out;
}

// Dry runs' policy engines (docs/architecture.md#lua-states-and-threads); none without scripts.
std::unique_ptr<lua::PolicyPool> makePolicyPool(const ServerOptions& options, const Clock& clock) {
  if (options.scripts == nullptr) return nullptr;
  lua::PolicyPoolOptions pool;
  pool.engine = {options.lua_limits, options.default_outcome};
  return std::make_unique<lua::PolicyPool>(*options.scripts, clock, pool);
}

void renderError(const Status& status, httplib::Response& response) {
  response.status = httpStatusOf(status.code());
  response.set_content(errorEnvelope(status), "application/json");
  if (status.code() == Code::kUnauthenticated) response.set_header("WWW-Authenticate", "Bearer realm=\"tide\"");
}

// The answer to a request whose head the transport refused (headers over the limits or
// framed ambiguously); its connection is then closed. False for a request in good standing.
bool renderRefusal(httplib::Response& response) {
  std::optional<Status> refusal = connectionRefusal();
  if (!refusal) return false;
  renderError(*refusal, response);
  response.set_header("Connection", "close");
  return true;
}

// Methods httplib parses but never routes to a handler (it answers them 400 itself).
bool unroutedMethod(const std::string& method) { return method == "TRACE" || method == "CONNECT" || method == "PRI"; }

bool isLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.starts_with("127.");
}

}  // namespace

class ApiServer::Impl {
 public:
  Impl(ServerOptions options, ledger::Ledger& ledger, const Clock& clock)
      : options_(std::move(options)),
        auth_(ledger, options_.auth_enabled, options_.config_tokens, clock),
        policy_pool_(makePolicyPool(options_, clock)),
        node_replies_(ledger, {"nodes", "clusters", "runtime_instances"}),
        context_{ledger,
                 clock,
                 metrics_,
                 stopping_,
                 wait_slots_,
                 options_.scripts,
                 policy_pool_.get(),
                 options_.lua_limits,
                 options_.approver_must_differ && options_.auth_enabled,
                 options_.read_logs,
                 options_.extra_metrics,
                 &auth_,
                 options_.command_allow,
                 &node_replies_,
                 options_.doctor,
                 options_.agents,
                 &agent_wait_slots_,
                 options_.traffic_view,
                 options_.traffic_unavailable} {}

  Status start();
  void stop();
  int port() const { return port_; }
  int waitingRequests() const { return wait_slots_.used(); }

 private:
  void configure(httplib::Server& http);
  void serve(const httplib::Request& request, httplib::Response& response, const httplib::ContentReader* reader);
  Result<ApiResponse> dispatch(const httplib::Request& request, const httplib::ContentReader* reader, BodyState& body);
  Result<std::string> readBody(const httplib::Request& request, const httplib::ContentReader& reader,
                               BodyState& body) const;
  // Reads and drops a body no handler wanted, so a keep-alive connection stays in step.
  BodyState drainBody(const httplib::Request& request, const httplib::ContentReader& reader) const;
  // The declared Content-Length; nullopt when there is none or the body is chunked.
  Result<std::optional<uint64_t>> declaredLength(const httplib::Request& request) const;
  void render(Result<ApiResponse> result, httplib::Response& response) const;
  void logRequest(const httplib::Request& request, const httplib::Response& response) const;

  const ServerOptions options_;
  Authenticator auth_;
  HttpMetrics metrics_;
  std::atomic<bool> stopping_{false};
  WaitSlots wait_slots_{kMaxWaitingRequests};
  WaitSlots agent_wait_slots_{options_.agent_long_polls};
  std::unique_ptr<lua::PolicyPool> policy_pool_;  // before context_, which points to it
  ReadCache<ApiResponse> node_replies_;           // before context_, which points to it
  ApiContext context_;

  std::mutex lifecycle_mu_;              // serializes start() and stop()
  std::unique_ptr<GuardedServer> http_;  // REQUIRES: lifecycle_mu_ is held
  std::thread listener_;                 // REQUIRES: lifecycle_mu_ is held
  std::atomic<int> port_{0};
};

Status ApiServer::Impl::start() {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (http_) return Status::conflict("the API server is already running");
  if (options_.max_body_bytes == 0) return Status::invalidArgument("max_body_bytes must be positive");
  if (options_.port < 0 || options_.port > 65535) {
    return Status::invalidArgument("port must be between 0 and 65535, got " + std::to_string(options_.port));
  }
  if (options_.limits.max_connections == 0 || options_.limits.max_header_bytes == 0 ||
      options_.limits.max_headers == 0 || options_.limits.max_json_depth < 1 ||
      options_.limits.request_read_deadline.count() <= 0) {
    return Status::invalidArgument("every HTTP limit must be positive");
  }
  TIDE_RETURN_IF_ERROR(auth_.checkConfig());
  TIDE_RETURN_IF_ERROR(auth_.bootstrap(options_.data_dir));

  try {
    ConnectionEvents events{[this] { metrics_.connectionDropped(); }, [this] { metrics_.connectionRefused(); }};
    TIDE_ASSIGN_OR_RETURN(std::unique_ptr<GuardedServer> http,
                          GuardedServer::create(options_.limits, options_.tls, std::move(events)));
    configure(*http);
    errno = 0;
    int port = options_.port == 0 ? http->bind_to_any_port(options_.host)
                                  : (http->bind_to_port(options_.host, options_.port) ? options_.port : -1);
    if (port <= 0) {
      const std::string address = options_.host + ":" + std::to_string(options_.port);
      if (errno == EADDRINUSE) {
        return Status::unavailable("cannot listen on " + address +
                                   ": the address is in use (another tide serve or another program listens there)");
      }
      return Status::unavailable("cannot listen on " + address + " (address in use, not local, or not permitted)");
    }
    http->setListenBacklog();  // agents reconnecting after a restart come in a burst
    stopping_ = false;
    auto listening = std::make_shared<std::atomic<bool>>(false);
    listener_ = std::thread([server = http.get(), listening] {
      server->listen_after_bind();
      *listening = true;  // also when it returned early, so start() never waits forever
    });
    // httplib's stop() is lost if it comes before the accept loop runs; wait for it.
    while (!http->is_running() && !*listening) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!http->is_running()) {
      listener_.join();
      return Status::unavailable("the API server stopped right after binding " + options_.host);
    }
    http_ = std::move(http);
    port_ = port;
    return Status::ok();
  } catch (const std::exception& error) {
    return Status::internal(std::string("starting the API server: ") + error.what());
  }
}

void ApiServer::Impl::stop() {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (!http_) return;
  stopping_ = true;
  http_->interruptConnections();
  http_->stop();
  if (listener_.joinable()) listener_.join();
  http_.reset();
  port_ = 0;
}

void ApiServer::Impl::configure(httplib::Server& http) {
  // readBody() enforces max_body_bytes; httplib only stops what is not worth draining.
  http.set_payload_max_length(options_.max_body_bytes + kDrainAllowance);
  http.set_keep_alive_timeout(2);
  http.set_keep_alive_max_count(kKeepAliveRequests);
  http.set_tcp_nodelay(true);

  http.set_pre_routing_handler([this](const httplib::Request& request, httplib::Response& response) {
    t_trace = RequestTrace{steady_clock::now(), kUnmatchedRoute, "", true, ""};
    if (renderRefusal(response)) return httplib::Server::HandlerResponse::Handled;
    if (!unroutedMethod(request.method)) return httplib::Server::HandlerResponse::Unhandled;
    // 405 naming what the path serves (or 404), like any method it does not serve. A body
    // such a request may carry is not read: the connection closes after the answer.
    serve(request, response, nullptr);
    response.set_header("Connection", "close");
    closeConnectionAfterResponse();
    return httplib::Server::HandlerResponse::Handled;
  });
  auto plain = [this](const httplib::Request& request, httplib::Response& response) {
    serve(request, response, nullptr);
  };
  auto with_body = [this](const httplib::Request& request, httplib::Response& response,
                          const httplib::ContentReader& reader) { serve(request, response, &reader); };
  http.Get(".*", plain);
  http.Options(".*", plain);
  http.Delete(".*", plain);
  http.Delete(".*", with_body);
  http.Post(".*", with_body);
  http.Put(".*", with_body);
  http.Patch(".*", with_body);

  // Responses httplib makes itself (unparsable requests, bodies over the limit) get the
  // same envelope as everything else. After a request httplib could not parse (a method it
  // does not know, say) nothing on the connection can be trusted to start a request: it
  // closes.
  http.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& request, httplib::Response& response) {
        if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        if (renderRefusal(response)) return httplib::Server::HandlerResponse::Handled;
        if (response.status == 400) {
          response.set_header("Connection", "close");
          closeConnectionAfterResponse();
        }
        renderError(statusForTransportError(response.status, request.method, request.path), response);
        return httplib::Server::HandlerResponse::Handled;
      }));
  http.set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr) {
    renderError(Status::internal("unexpected error while serving the request"), response);
  });
  // Counted just before the response is written, so a client that has its response sees
  // it in /metrics; logged once it is written (streams: when they end).
  http.set_post_routing_handler([this](const httplib::Request& request, httplib::Response& response) {
    std::chrono::duration<double> elapsed{0};
    if (t_trace.started) elapsed = steady_clock::now() - t_trace.start;
    metrics_.observe(request.method, t_trace.route, response.status, elapsed);
  });
  // The response goes out before its line is logged (the transport holds small writes).
  http.set_logger([this](const httplib::Request& request, const httplib::Response& response) {
    sendCompleteAnswer();
    logRequest(request, response);
  });
}

void ApiServer::Impl::serve(const httplib::Request& request, httplib::Response& response,
                            const httplib::ContentReader* reader) {
  BodyState body = reader == nullptr ? BodyState::kRead : BodyState::kUnread;
  Result<ApiResponse> result = Status::internal("no response");
  try {
    result = dispatch(request, reader, body);
    if (body == BodyState::kUnread) body = drainBody(request, *reader);
  } catch (const std::exception& error) {
    result = Status::internal(std::string("unexpected error: ") + error.what());
  } catch (...) {
    result = Status::internal("unexpected error");
  }
  // Whatever is left of the body would be taken for the next request.
  if (body != BodyState::kRead) {
    response.set_header("Connection", "close");
    closeConnectionAfterResponse();
  }
  render(std::move(result), response);
  if (response.status == 405) response.set_header("Allow", t_trace.allow);
}

Result<ApiResponse> ApiServer::Impl::dispatch(const httplib::Request& http_request,
                                              const httplib::ContentReader* reader, BodyState& body) {
  RouteMatch match = matchRoute(http_request.method, http_request.path);
  if (match.route == nullptr) {
    if (match.allowed_methods.empty()) {
      return Status::notFound("no route for " + http_request.method + " " + http_request.path);
    }
    t_trace.allow = joined(match.allowed_methods);
    return Status::methodNotAllowed(http_request.method + " is not served on " + http_request.path + "; it serves " +
                                    t_trace.allow);
  }
  const Route& route = *match.route;
  t_trace.route = route.pattern;

  ApiRequest request;
  request.method = http_request.method;
  request.path = http_request.path;
  request.path_params = std::move(match.params);
  if (route.role != Role::kPublic) {
    TIDE_ASSIGN_OR_RETURN(request.principal, auth_.authenticate(http_request.get_header_value("Authorization")));
    t_trace.actor = request.principal.name;
    TIDE_RETURN_IF_ERROR(authorize(request.principal, route.role, request.param("node")));
    if (route.role != Role::kViewer) TIDE_RETURN_IF_ERROR(authorizeScope(context_.ledger, route, request));
  }
  for (const auto& [name, value] : http_request.params) {
    if (!request.query.emplace(name, value).second) {
      return Status::invalidArgument("query parameter '" + name + "' is given more than once",
                                     {{name, "is given more than once", ""}});
    }
  }
  request.content_type = lowerMediaType(http_request.get_header_value("Content-Type"));
  request.if_match = http_request.get_header_value("If-Match");
  request.last_event_id = http_request.get_header_value("Last-Event-ID");
  if (reader != nullptr) {
    TIDE_ASSIGN_OR_RETURN(request.body, readBody(http_request, *reader, body));
    // Before any handler parses it: a parsed document this deep would overflow the stack
    // when copied or destroyed.
    TIDE_RETURN_IF_ERROR(checkNestingDepth(request.body, options_.limits.max_json_depth));
  }
  return route.handler(context_, request);
}

Result<std::optional<uint64_t>> ApiServer::Impl::declaredLength(const httplib::Request& request) const {
  // The transport lets Transfer-Encoding through only as "chunked", in any case, as httplib reads it.
  if (request.has_header("Transfer-Encoding")) return std::optional<uint64_t>();
  if (!request.has_header("Content-Length")) return std::optional<uint64_t>(0);
  const std::string declared = request.get_header_value("Content-Length");
  uint64_t length = 0;
  auto [end, error] = std::from_chars(declared.data(), declared.data() + declared.size(), length);
  if (error != std::errc() || end != declared.data() + declared.size()) {
    return Status::invalidArgument("Content-Length '" + declared + "' is not a number");
  }
  return std::optional<uint64_t>(length);
}

Result<std::string> ApiServer::Impl::readBody(const httplib::Request& request, const httplib::ContentReader& reader,
                                              BodyState& body) const {
  const size_t limit = options_.max_body_bytes;
  const Status too_large =
      Status::payloadTooLarge("the request body is larger than the limit of " + std::to_string(limit) + " bytes");
  TIDE_ASSIGN_OR_RETURN(std::optional<uint64_t> length, declaredLength(request));
  if (length == 0) {
    body = BodyState::kRead;
    return std::string();
  }
  if (length && *length > limit) return too_large;  // serve() drains what is worth draining
  std::string text;
  size_t received = 0;
  bool complete = reader([&](const char* data, size_t size) {
    received += size;
    if (received <= limit) text.append(data, size);
    return received <= limit + kDrainAllowance;
  });
  body = complete ? BodyState::kRead : BodyState::kBroken;
  if (received > limit) return too_large;
  if (!complete) return Status::invalidArgument("the request body could not be read completely");
  return text;
}

BodyState ApiServer::Impl::drainBody(const httplib::Request& request, const httplib::ContentReader& reader) const {
  const size_t most = options_.max_body_bytes + kDrainAllowance;
  Result<std::optional<uint64_t>> length = declaredLength(request);
  if (!length.isOk() || (*length && **length > most)) return BodyState::kBroken;
  if (*length == 0) return BodyState::kRead;
  size_t received = 0;
  bool complete = reader([&](const char*, size_t size) {
    received += size;
    return received <= most;
  });
  return complete ? BodyState::kRead : BodyState::kBroken;
}

void ApiServer::Impl::render(Result<ApiResponse> result, httplib::Response& response) const {
  if (!result.isOk()) {
    renderError(result.status(), response);
    return;
  }
  ApiResponse& reply = result.value();
  response.status = reply.status;
  for (const auto& [name, value] : reply.headers) response.set_header(name, value);
  if (!reply.stream) {
    response.set_content(std::move(reply.body), reply.content_type);
    return;
  }
  response.set_chunked_content_provider(
      reply.content_type, [stream = std::move(reply.stream)](size_t, httplib::DataSink& sink) {
        // The headers, and then each piece, reach the client before the stream waits for
        // the next piece (the transport holds small writes: transport.h).
        StreamWriter write = [&sink](std::string_view piece) {
          return piece.empty() || (sink.write(piece.data(), piece.size()) && flushConnectionOutput());
        };
        bool more = false;
        try {
          more = flushConnectionOutput() && stream(write);
        } catch (...) {
          more = false;
        }
        if (!more) sink.done();
        return true;
      });
}

void ApiServer::Impl::logRequest(const httplib::Request& request, const httplib::Response& response) const {
  RequestTrace trace = std::move(t_trace);
  t_trace = RequestTrace{};
  std::chrono::duration<double, std::milli> elapsed{0};
  if (trace.started) elapsed = steady_clock::now() - trace.start;
  char millis[32];
  const char* millis_end =
      std::to_chars(millis, millis + sizeof millis, elapsed.count(), std::chars_format::fixed, 1).ptr;
  std::string line = "tide api: ";
  line.reserve(128);
  line += printable(request.method);
  line += ' ';
  line += printable(request.path);
  line += ' ';
  // httplib answers a request it could not read with 400; one cut off at its deadline got
  // no answer at all, and the client was too slow, not wrong.
  const bool cut_off = connectionTimedOut();
  line += std::to_string(cut_off ? 408 : response.status);
  line += ' ';
  line.append(millis, static_cast<size_t>(millis_end - millis));
  line += "ms";
  if (!trace.actor.empty()) {
    line += " actor=";
    line += trace.actor;
  }
  if (cut_off) line += " (cut off: the request was not read in time; no answer sent)";
  line += '\n';
  // write(2) rather than stdio, whose lock on stderr the threads of requests that end
  // together queue on.
  for (size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
}

std::vector<std::string> exposureWarnings(const ServerOptions& options) {
  std::vector<std::string> warnings;
  if (!options.auth_enabled) {
    warnings.push_back("auth is off (auth.enabled: false): anyone who can reach " + options.host + " acts as admin");
  }
  if (!isLoopback(options.host) && !options.tls.enabled()) {
    warnings.push_back("listening on " + options.host +
                       " without TLS: tokens and records cross the network in clear text; set tls.cert and tls.key");
  }
  return warnings;
}

ApiServer::ApiServer(ServerOptions options, ledger::Ledger& ledger, const Clock& clock)
    : impl_(std::make_unique<Impl>(std::move(options), ledger, clock)) {}

ApiServer::~ApiServer() { stop(); }

Status ApiServer::start() { return impl_->start(); }

void ApiServer::stop() { impl_->stop(); }

int ApiServer::port() const { return impl_->port(); }

int ApiServer::waitingRequests() const { return impl_->waitingRequests(); }

}  // namespace tide::api
