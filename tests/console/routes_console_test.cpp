// The web console as the host serves it (host/api/console/): its page and files from the
// binary, with the headers that keep server text from becoming code, and GET /v1/whoami,
// which it signs in with. The console in a browser: tests/console/console_test.py.

#include <algorithm>
#include <regex>
#include <set>
#include <string>

#include "host/api/console/console_assets.h"
#include "tests/api/api_test_support.h"

namespace tide {
namespace {

using testing::ApiHarness;
using testing::Json;
using testing::Reply;

std::string assetText(std::string_view name) {
  const auto& files = api::console::assets();
  auto found = std::find_if(files.begin(), files.end(), [&](const auto& asset) { return asset.name == name; });
  REQUIRE_MESSAGE(found != files.end(), "no embedded " << name);
  return std::string(found->bytes);
}

std::set<std::string> assetNames() {
  std::set<std::string> names;
  for (const auto& asset : api::console::assets()) names.emplace(asset.name);
  return names;
}

void checkConsoleHeaders(const Reply& reply) {
  CHECK(reply.header("Content-Security-Policy").starts_with("default-src 'self'"));
  CHECK(reply.header("X-Content-Type-Options") == "nosniff");
  CHECK(reply.header("X-Frame-Options") == "DENY");
}

}  // namespace

TEST_CASE("console: / serves the page without a token, with the security headers") {
  ApiHarness h;
  Reply page = h.get("/", "");
  REQUIRE(page.status == 200);
  CHECK(page.header("Content-Type") == "text/html; charset=utf-8");
  CHECK(page.body == assetText("index.html"));
  CHECK(page.body.find("src=\"/console/app.js\"") != std::string::npos);
  checkConsoleHeaders(page);
}

TEST_CASE("console: every embedded file is served under /console/ byte for byte, with its media type") {
  ApiHarness h;
  REQUIRE(api::console::assets().size() >= 3);
  for (const auto& asset : api::console::assets()) {
    CAPTURE(asset.name);
    Reply served = h.get("/console/" + std::string(asset.name), "");
    REQUIRE(served.status == 200);
    CHECK(served.body == asset.bytes);
    checkConsoleHeaders(served);
    const std::string type = served.header("Content-Type");
    if (asset.name.ends_with(".js")) CHECK(type == "text/javascript; charset=utf-8");
    if (asset.name.ends_with(".css")) CHECK(type == "text/css; charset=utf-8");
  }
}

TEST_CASE("console: a file the console does not ship is 404 with the error envelope") {
  ApiHarness h;
  for (const char* path : {"/console/nope.js", "/console/", "/console/..%2Froutes.cpp", "/console/app.js/x"}) {
    CAPTURE(path);
    Reply missing = h.get(path, "");
    CHECK(missing.status == 404);
    CHECK(missing.errorCode() == "not_found");
  }
}

TEST_CASE("console: the page and its modules load only files the binary embeds") {
  const std::set<std::string> names = assetNames();
  const std::string page = assetText("index.html");
  const std::regex page_reference(R"re((?:src|href)="/console/([^"]+)")re");
  int references = 0;
  for (std::sregex_iterator it(page.begin(), page.end(), page_reference), end; it != end; ++it, ++references) {
    CHECK_MESSAGE(names.contains((*it)[1].str()), "index.html loads " << (*it)[1].str());
  }
  CHECK(references == 2);  // the style sheet and app.js
  const std::regex module_import(R"re(from "\./([^"]+)")re");
  for (const std::string& name : names) {
    if (!name.ends_with(".js")) continue;
    const std::string text = assetText(name);
    for (std::sregex_iterator it(text.begin(), text.end(), module_import), end; it != end; ++it) {
      CHECK_MESSAGE(names.contains((*it)[1].str()), name << " imports " << (*it)[1].str());
    }
  }
}

// The console inserts what the server sends as text: a plan name or a policy reason that
// holds markup must show as characters, never run. So no script may parse strings as HTML
// or code, and the page may hold no inline script the CSP would refuse anyway.
TEST_CASE("console: no console script turns a string into markup or code") {
  for (const auto& asset : api::console::assets()) {
    CAPTURE(asset.name);
    for (const char* sink : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                             "new Function", "setTimeout(\"", "javascript:"}) {
      CHECK_MESSAGE(asset.bytes.find(sink) == std::string_view::npos, "uses " << std::string(sink));
    }
  }
  const std::string page = assetText("index.html");
  CHECK(page.find("<script>") == std::string::npos);
  CHECK(page.find(" style=") == std::string::npos);
  CHECK_FALSE(std::regex_search(page, std::regex(R"(\son[a-z]+\s*=)")));  // no onclick= and the like
}

TEST_CASE("whoami: names the token's principal and role, and where the event log stands") {
  ApiHarness h;
  REQUIRE(h.post("/v1/manifests", testing::kInventoryManifest, "application/yaml").status == 201);
  Reply alice = h.get("/v1/whoami", testing::kApproverToken);
  REQUIRE(alice.status == 200);
  CHECK(alice.json() == Json{{"name", testing::kApproverName},
                             {"role", "approver"},
                             {"namespaces", Json::array()},
                             {"last_event_seq", h.lastEventSeq()}});
  CHECK(h.lastEventSeq() > 0);
  CHECK(h.get("/v1/whoami", testing::kViewerToken).json()["role"] == "viewer");

  Reply anonymous = h.get("/v1/whoami", "");
  CHECK(anonymous.status == 401);
  CHECK(h.get("/v1/whoami", "not-a-token").status == 401);
  CHECK(h.get("/v1/whoami?x=1", testing::kViewerToken).status == 400);
}

}  // namespace tide
