#include "host/cli/client.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <optional>

#include <httplib.h>

#include "host/api/errors.h"
#include "host/ledger/ledger.h"

namespace tide::cli {
namespace {

std::string lowerCase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

constexpr std::string_view kPlainScheme = "http://";
constexpr std::string_view kTlsScheme = "https://";
constexpr std::chrono::seconds kConnectTimeout{5};

constexpr int kFirstErrorCode = static_cast<int>(Code::kInvalidArgument);
constexpr int kLastErrorCode = static_cast<int>(Code::kInternal);

std::optional<Code> codeNamed(const std::string& name) {
  for (int c = kFirstErrorCode; c <= kLastErrorCode; ++c) {
    if (name == codeName(static_cast<Code>(c))) return static_cast<Code>(c);
  }
  return std::nullopt;
}

// The server's own mapping read backwards (the first code for a shared status), for
// error replies without an envelope: a proxy's, or a server's that is not tide.
Code codeForHttpStatus(int http_status) {
  for (int c = kFirstErrorCode; c <= kLastErrorCode; ++c) {
    if (api::httpStatusOf(static_cast<Code>(c)) == http_status) return static_cast<Code>(c);
  }
  return Code::kInternal;
}

std::string percentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

std::string withQuery(const std::string& path, const Query& query) {
  std::string out = path;
  char separator = '?';
  for (const auto& [key, value] : query) {
    out += separator + percentEncode(key) + "=" + percentEncode(value);
    separator = '&';
  }
  return out;
}

bool hasScheme(const std::string& server) { return server.starts_with(kPlainScheme) || server.starts_with(kTlsScheme); }

// "http://host:port/prefix" → {"http://host:port", "/prefix"}.
std::pair<std::string, std::string> splitServer(const std::string& server) {
  size_t slash = server.find('/', server.find("://") + 3);
  if (slash == std::string::npos) return {server, ""};
  std::string prefix = server.substr(slash);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return {server.substr(0, slash), prefix};
}

Result<Json> parseBody(const std::string& body) {
  if (body.empty()) return Json::object();
  Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Status::internal("the server's reply is not JSON: " + body.substr(0, 200));
  return json;
}

}  // namespace

std::string pathSegment(std::string_view segment) { return percentEncode(segment); }

std::string planPath(const std::string& plan) { return "/v1/plans/" + pathSegment(plan); }

Status statusFromErrorResponse(int http_status, const std::string& body) {
  Json envelope = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (envelope.is_discarded() || !envelope.is_object() || !envelope.contains("error") ||
      !envelope["error"].is_object()) {
    std::string text = body.empty() ? "no error message" : body.substr(0, 200);
    return Status(codeForHttpStatus(http_status), "HTTP " + std::to_string(http_status) + ": " + text);
  }
  const Json& error = envelope["error"];
  auto text = [](const Json& object, const char* key) {
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::vector<ErrorDetail> details;
  if (auto it = error.find("details"); it != error.end() && it->is_array()) {
    for (const Json& detail : *it) {
      if (detail.is_object())
        details.push_back({text(detail, "field"), text(detail, "message"), text(detail, "location")});
    }
  }
  Code code = codeNamed(text(error, "code")).value_or(codeForHttpStatus(http_status));
  std::string message = text(error, "message");
  if (message.empty()) message = "HTTP " + std::to_string(http_status);
  return Status(code, message, std::move(details));
}

void RequestInterrupt::interrupt() {
  std::lock_guard<std::mutex> lock(mu_);
  interrupted_ = true;
  for (auto& [id, stop] : in_flight_) stop();
}

bool RequestInterrupt::interrupted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return interrupted_;
}

std::optional<int> RequestInterrupt::enter(std::function<void()> stop) {
  std::lock_guard<std::mutex> lock(mu_);
  if (interrupted_) return std::nullopt;
  in_flight_.emplace(next_id_, std::move(stop));
  return next_id_++;
}

void RequestInterrupt::leave(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.erase(id);
}

Client::Client(Endpoint endpoint) : endpoint_(std::move(endpoint)) {
  while (endpoint_.server.size() > kTlsScheme.size() && endpoint_.server.back() == '/') endpoint_.server.pop_back();
}

Result<Json> Client::get(const std::string& path, const Query& query) { return send("GET", path, query, "", ""); }

std::string TextReply::header(std::string_view name) const {
  auto it = headers.find(lowerCase(std::string(name)));
  return it == headers.end() ? "" : it->second;
}

Result<std::string> Client::getText(const std::string& path, const Query& query) {
  return sendRaw("GET", path, query, "", "");
}

Result<TextReply> Client::getTextReply(const std::string& path, const Query& query) {
  return sendForReply("GET", path, query, "", "");
}

Result<Json> Client::getAll(const std::string& path, Query query, int64_t after, int64_t at_most) {
  Json items = Json::array();
  query.emplace_back("after", "");
  const size_t after_at = query.size() - 1;
  if (at_most > 0) query.emplace_back("limit", "");
  int64_t next_after = 0;
  while (true) {
    query[after_at].second = std::to_string(after);
    const int64_t wanted = at_most - static_cast<int64_t>(items.size());
    if (at_most > 0) query.back().second = std::to_string(std::min(wanted, ledger::kMaxPageSize));
    TIDE_ASSIGN_OR_RETURN(Json page, get(path, query));
    if (!page.is_object() || !page.contains("items") || !page["items"].is_array()) {
      return Status::internal("GET " + path + ": the reply is not a list of items");
    }
    for (Json& item : page["items"]) items.push_back(std::move(item));
    auto next = page.find("next_after");
    next_after = next != page.end() && next->is_number_integer() ? next->get<int64_t>() : 0;
    // A cursor that does not move forward would loop forever; treat it as the end.
    if (next_after <= after) return Json{{"items", std::move(items)}};
    if (at_most > 0 && static_cast<int64_t>(items.size()) >= at_most) break;
    after = next_after;
  }
  return Json{{"items", std::move(items)}, {"next_after", next_after}};
}

Result<Json> Client::post(const std::string& path, const Json& body) {
  return send("POST", path, {}, body.dump(), "application/json");
}

Result<Json> Client::postText(const std::string& path, const std::string& text, const std::string& content_type,
                              const Query& query) {
  return send("POST", path, query, text, content_type);
}

Result<Json> Client::putText(const std::string& path, const std::string& text, const std::string& content_type,
                             const std::string& if_match) {
  return send("PUT", path, {}, text, content_type, if_match);
}

Result<Json> Client::del(const std::string& path) { return send("DELETE", path, {}, "", ""); }

Result<Json> Client::send(const std::string& method, const std::string& path, const Query& query,
                          const std::string& body, const std::string& content_type, const std::string& if_match) {
  TIDE_ASSIGN_OR_RETURN(std::string reply, sendRaw(method, path, query, body, content_type, if_match));
  return parseBody(reply);
}

Result<std::string> Client::sendRaw(const std::string& method, const std::string& path, const Query& query,
                                    const std::string& body, const std::string& content_type,
                                    const std::string& if_match) {
  TIDE_ASSIGN_OR_RETURN(TextReply reply, sendForReply(method, path, query, body, content_type, if_match));
  return std::move(reply.body);
}

Result<TextReply> Client::sendForReply(const std::string& method, const std::string& path, const Query& query,
                                       const std::string& body, const std::string& content_type,
                                       const std::string& if_match) {
  if (!hasScheme(endpoint_.server)) {
    return Status::invalidArgument("server URL must start with http:// or https:// (got \"" + endpoint_.server + "\")");
  }
  auto [host, prefix] = splitServer(endpoint_.server);
  std::string target = withQuery(prefix + path, query);
  try {
    httplib::Client http(host);
    if (!http.is_valid()) return Status::invalidArgument("invalid server URL \"" + endpoint_.server + "\"");
    http.set_connection_timeout(kConnectTimeout);
    if (!endpoint_.ca_file.empty()) http.set_ca_cert_path(endpoint_.ca_file);
    http.enable_server_certificate_verification(true);
    http.set_read_timeout(endpoint_.read_timeout);
    std::optional<int> interruptible;
    if (endpoint_.interrupt) {
      interruptible = endpoint_.interrupt->enter([&http] { http.stop(); });
      if (!interruptible) return Status::unavailable("interrupted");
    }
    struct Leave {
      RequestInterrupt* interrupt;
      std::optional<int> id;
      ~Leave() {
        if (id) interrupt->leave(*id);
      }
    } leave{endpoint_.interrupt.get(), interruptible};
    httplib::Headers headers = {{"Accept", "application/json"}};
    if (!endpoint_.token.empty()) headers.emplace("Authorization", "Bearer " + endpoint_.token);
    if (!if_match.empty()) headers.emplace("If-Match", if_match);

    httplib::Result result = method == "GET"    ? http.Get(target, headers)
                             : method == "POST" ? http.Post(target, headers, body, content_type)
                             : method == "PUT"  ? http.Put(target, headers, body, content_type)
                                                : http.Delete(target, headers);
    if (!result) {
      if (endpoint_.interrupt && endpoint_.interrupt->interrupted()) return Status::unavailable("interrupted");
      if (result.error() == httplib::Error::Connection || result.error() == httplib::Error::ConnectionTimeout) {
        return Status::unavailable("cannot reach tide at " + endpoint_.server + " (is `tide serve` running?)");
      }
      if (result.error() == httplib::Error::SSLServerVerification) {
        return Status::unavailable("the certificate of " + endpoint_.server +
                                   " is not trusted; pass the CA that signed it with --ca-file or TIDE_CA_FILE");
      }
      return Status::unavailable(method + " " + endpoint_.server + target +
                                 " failed: " + httplib::to_string(result.error()));
    }
    if (result->status < 200 || result->status >= 300) return statusFromErrorResponse(result->status, result->body);
    TextReply reply{std::move(result->body), {}};
    for (const auto& [name, value] : result->headers) reply.headers.emplace(lowerCase(name), value);
    return reply;
  } catch (const std::exception& e) {
    return Status::internal(method + " " + target + ": " + e.what());
  }
}

}  // namespace tide::cli
