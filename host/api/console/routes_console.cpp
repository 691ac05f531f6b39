// The web console (docs/console.md): GET / answers its page, GET /console/{file} its
// scripts and style sheet, all embedded in the binary (console_assets.h). The page is
// public, as it holds no data: the browser signs in with a token and calls /v1 itself.
//
// Every console response forbids what the console never needs, so that text an operator
// reads cannot turn into code: scripts, styles and requests only from this host
// (Content-Security-Policy default-src 'self': no inline script, no CDN), no content-type
// guessing, no framing by another page.

#include <algorithm>
#include <utility>

#include "host/api/console/console_assets.h"
#include "host/api/handlers.h"

namespace tide::api::console {
namespace {

constexpr std::string_view kIndexPage = "index.html";

const std::vector<std::pair<std::string, std::string>> kConsoleHeaders = {
    {"Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"},
    {"X-Content-Type-Options", "nosniff"},
    {"X-Frame-Options", "DENY"},
    {"Referrer-Policy", "no-referrer"},
    // A new binary may serve new files under the same names.
    {"Cache-Control", "no-cache"},
};

// The media type a file is served as, by its extension; nullopt for one the console does
// not ship.
std::optional<std::string> mediaTypeOf(std::string_view name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view extension = name.substr(dot + 1);
  if (extension == "html") return "text/html; charset=utf-8";
  if (extension == "js") return "text/javascript; charset=utf-8";
  if (extension == "css") return "text/css; charset=utf-8";
  if (extension == "png") return "image/png";
  if (extension == "svg") return "image/svg+xml";
  return std::nullopt;
}

Result<ApiResponse> assetReply(std::string_view name) {
  const std::vector<Asset>& files = assets();
  auto found = std::find_if(files.begin(), files.end(), [&](const Asset& asset) { return asset.name == name; });
  std::optional<std::string> media_type = mediaTypeOf(name);
  if (found == files.end() || !media_type) {
    return Status::notFound("the console has no file '" + std::string(name) + "'");
  }
  ApiResponse response;
  response.content_type = *media_type;
  response.body = std::string(found->bytes);
  response.headers = kConsoleHeaders;
  return response;
}

}  // namespace

// Query parameters are ignored (the page's own state lives after the '#'; a proxy may add
// a cache-buster).
Result<ApiResponse> index(ApiContext&, const ApiRequest&) { return assetReply(kIndexPage); }

Result<ApiResponse> asset(ApiContext&, const ApiRequest& request) { return assetReply(request.param("file")); }

}  // namespace tide::api::console
