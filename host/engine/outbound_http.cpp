#include "host/engine/outbound_http.h"

namespace tide::engine {
namespace {

std::string millisText(int ms) {
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

}  // namespace

bool splitUrl(const std::string& url, std::string& origin, std::string& path) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return false;
  const size_t slash = url.find('/', scheme + 3);
  origin = url.substr(0, slash);
  path = slash == std::string::npos ? "" : url.substr(slash);
  while (!path.empty() && path.back() == '/') path.pop_back();
  return origin.size() > scheme + 3;
}

std::string transportError(httplib::Error error, int timeout_ms) {
  switch (error) {
    case httplib::Error::Connection: return "cannot connect (refused or unreachable)";
    case httplib::Error::ConnectionTimeout: return "connecting timed out after " + millisText(timeout_ms);
    case httplib::Error::Read: return "no complete answer (timed out after " + millisText(timeout_ms) + " or closed)";
    case httplib::Error::Write: return "cannot send the request";
    default: return httplib::to_string(error);
  }
}

}  // namespace tide::engine
