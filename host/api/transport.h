#pragma once
// How connections reach the API's handlers (docs/architecture.md#connections-limits-and-tls): a
// cpp-httplib server whose connection loop is tide's own, so that
//   - a connection holds a serving thread only while a request whose head has arrived whole
//     is served: until then (new, kept alive between requests, or slow to send its headers)
//     it waits in one epoll thread, the lobby, which reads heads without waiting on anyone,
//   - at most `max_connections` requests are served at once; a head that arrives with all of
//     them busy is answered 503 at once, by the lobby, and its connection closed,
//   - a request must arrive whole (TLS handshake, request line, headers and body) within
//     `request_read_deadline`, however slowly its bytes trickle in,
//   - the request line and headers may take `max_header_bytes` and `max_headers` fields,
//     and framing a proxy in front could read differently is refused (400, closed),
//   - TLS is spoken when a certificate and key are given.
// Debian's cpp-httplib is a compiled library: its compile-time limits cannot be changed and
// its read timeout restarts with every byte, so GuardedServer overrides the per-connection
// entry point (Server::process_and_close_socket, a virtual, which its TaskQueue runs on the
// accepting thread) and feeds httplib's request parser (Server::process_request) through a
// Stream that enforces the limits. TLS is that Stream over an OpenSSL session, for the
// same reason.
//
// Only server.cpp includes this header (with httplib's); its hooks ask
// connectionRefusal() what to answer when the transport refused a request's head.
//
// Thread-safety: a connection is served on one thread at a time (the lobby's or a serving
// thread), and what httplib's hooks ask of it is that thread's. interruptConnections() may
// be called from any thread.

#include <httplib.h>

#include <functional>
#include <memory>
#include <optional>

#include "drivers/http/listening_server.h"
#include "host/api/server.h"
#include "host/core/status.h"

namespace tide::api {

// What the transport did with a connection that never reached a handler. Each may be empty;
// each runs on the thread that did it and must be quick and thread-safe.
struct ConnectionEvents {
  std::function<void()> dropped;  // closed unanswered: limits.max_waiting_connections wait already
  std::function<void()> refused;  // answered 503: limits.max_connections requests were being served
};

class GuardedServer final : public drivers::ListeningServer {
 public:
  // kInvalidArgument naming the file when the TLS certificate or key cannot be loaded.
  static Result<std::unique_ptr<GuardedServer>> create(const HttpLimits& limits, const TlsFiles& tls,
                                                       ConnectionEvents events = {});
  ~GuardedServer() override;

  // Ends every connection at its next wait, including one whose request is still being
  // read, so stop() does not wait for clients. Call before stop(); not undone.
  void interruptConnections();

 private:
  class Tls;
  GuardedServer(const HttpLimits& limits, std::unique_ptr<Tls> tls, ConnectionEvents events);
  bool process_and_close_socket(socket_t sock) override;

  const HttpLimits limits_;
  std::unique_ptr<Tls> tls_;  // null: plain HTTP
  int interrupt_fd_ = -1;     // an eventfd, readable once interruptConnections() ran
};

// What to answer on the connection being served on this thread when the transport refused
// its request's head: kInvalidArgument for headers over the limits or framed ambiguously.
// nullopt for a request in good standing (or on a thread that serves none).
std::optional<Status> connectionRefusal();

// Closes the connection being served on this thread once its response is written, letting
// the client finish sending first (for a request whose body was left unread).
void closeConnectionAfterResponse();

// Sends what the connection being served on this thread holds of its response now (the
// transport holds small writes so a response goes out in one send). A streamed body calls
// it after each piece its client must see before the next. False when the socket failed.
bool flushConnectionOutput();

// Sends the rest of the response being served on this thread, which is complete: the thread
// counts as free from here on for limits.max_connections, so a client that has its answer
// and asks again at once is served, not refused 503. False when the socket failed.
bool sendCompleteAnswer();

// True when the connection being served on this thread stopped reading its request because
// a read deadline passed (limits.request_read_deadline_s, or the idle read timeout): the
// request gets no answer, and the access log says 408 rather than what the server would
// have answered a request it could read.
bool connectionTimedOut();

}  // namespace tide::api
