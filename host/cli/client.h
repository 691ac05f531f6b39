#pragma once
// The CLI's side of the HTTP API (docs/architecture.md#http-api-and-auth): one request in, one Result<Json> out. This
// is the adapter for cpp-httplib on the client side; nothing it calls throws past it.
//
// Errors: a response outside 2xx becomes the Status carried by the server's envelope
// {"error":{"code","message","details":[{"field","message","location"}]}} (the code by its
// codeName, falling back to the HTTP status); a server that cannot be reached becomes
// kUnavailable "cannot reach tide at URL (is `tide serve` running?)".
//
// Thread-compatible: one Client per command; not shared between threads.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/status.h"

namespace tide::cli {

using Json = nlohmann::json;
using Query = std::vector<std::pair<std::string, std::string>>;

inline constexpr std::string_view kDefaultServer = "http://127.0.0.1:7700";

// Ends requests from another thread: an agent stopping must not wait out a 30 s long poll.
// Thread-safe.
class RequestInterrupt {
 public:
  // Requests in flight end at once (their sockets are shut down) and fail kUnavailable
  // "interrupted", as does every later request of a Client given this interrupt.
  void interrupt();
  bool interrupted() const;

 private:
  friend class Client;
  // Registers how to end a request in flight; nullopt when already interrupted.
  std::optional<int> enter(std::function<void()> stop);
  void leave(int id);

  mutable std::mutex mu_;
  bool interrupted_ = false;                         // GUARDED_BY(mu_)
  int next_id_ = 0;                                  // GUARDED_BY(mu_)
  std::map<int, std::function<void()>> in_flight_;  // GUARDED_BY(mu_)
};

// A reply's body and headers, for a route whose headers say more than its body (a log's place).
struct TextReply {
  std::string body;
  std::map<std::string, std::string> headers;  // by lower-case name

  // The header's value; "" when the reply has none. `name` in any case.
  std::string header(std::string_view name) const;
};

struct Endpoint {
  std::string server = std::string(kDefaultServer);  // http[s]://host:port[/prefix]
  std::string token;                                 // bearer token; empty sends none
  // For https://: the PEM file of CAs the server's certificate must chain to (a
  // self-signed certificate is its own CA); empty: the system's CAs.
  std::string ca_file;
  // Long enough for the events long poll (wait=30) plus a slow server.
  std::chrono::seconds read_timeout{65};
  std::shared_ptr<RequestInterrupt> interrupt;  // optional
};

class Client {
 public:
  explicit Client(Endpoint endpoint);

  const std::string& server() const { return endpoint_.server; }

  Result<Json> get(const std::string& path, const Query& query = {});
  // A reply that is not JSON, e.g. an instance's log (text/plain), as the bytes sent.
  Result<std::string> getText(const std::string& path, const Query& query = {});
  // As getText, with the reply's headers.
  Result<TextReply> getTextReply(const std::string& path, const Query& query = {});
  // Every item of a paginated list ({"items":[...],"next_after":N}) past `after`, following
  // next_after until the server says there is no more: {"items":[...all pages...]}. With
  // `at_most` > 0, only the first `at_most` items, each page asked for no larger than what
  // is still wanted; when more follow, the reply's "next_after" says where they start.
  Result<Json> getAll(const std::string& path, Query query = {}, int64_t after = 0, int64_t at_most = 0);
  Result<Json> post(const std::string& path, const Json& body = Json::object());
  // A body that is not JSON, e.g. a YAML manifest ("application/yaml").
  Result<Json> postText(const std::string& path, const std::string& text, const std::string& content_type,
                        const Query& query = {});
  // PUT with a body that replaces the record; `if_match` (a generation, "" for none) makes it
  // conditional: the server answers 412 when the record has moved past it.
  Result<Json> putText(const std::string& path, const std::string& text, const std::string& content_type,
                       const std::string& if_match = "");
  Result<Json> del(const std::string& path);

 private:
  Result<Json> send(const std::string& method, const std::string& path, const Query& query, const std::string& body,
                    const std::string& content_type, const std::string& if_match = "");
  // The reply's body, unparsed.
  Result<std::string> sendRaw(const std::string& method, const std::string& path, const Query& query,
                              const std::string& body, const std::string& content_type,
                              const std::string& if_match = "");
  // The reply's body, unparsed, and its headers.
  Result<TextReply> sendForReply(const std::string& method, const std::string& path, const Query& query,
                                 const std::string& body, const std::string& content_type,
                                 const std::string& if_match = "");

  Endpoint endpoint_;
};

// `segment` percent-encoded for use as one path segment ("/v1/nodes/" + pathSegment(name)).
std::string pathSegment(std::string_view segment);
// "/v1/plans/<plan>", the plan's segment encoded.
std::string planPath(const std::string& plan);

// The Status carried by an error response: `body` is the envelope; `http_status` decides
// the code when the envelope is missing or names no known code.
Status statusFromErrorResponse(int http_status, const std::string& body);

}  // namespace tide::cli
