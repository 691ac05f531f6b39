// libFuzzer target: a request body through the route that reads it, as the API server
// dispatches it (host/api/server.cpp) minus the socket and the token check: the body's
// nesting depth is checked first (limits.max_json_depth), then the route's handler decodes
// it (readBodyText, readOptionalJsonObject, the manifest parsers, the op snapshot and ctx
// fixture of POST /v1/policies/evaluate) and acts on an in-memory ledger.
//
// An input is "<path> <content type>\n<body>", e.g. "/v1/manifests application/yaml\n...",
// so the seeds in corpus/api_body/ read like requests; the path picks a POST route of the
// route table (POST /v1/scripts/reload reads no body and is left out). The caller is an
// admin.
//
// The ledger holds examples/nodes.yaml, the nginx plan and its first deployment; it is
// built once per process and rebuilt after every request that succeeded (and may have
// written), so each input meets the same ledger. The shipped policies and strategies are
// loaded once, as `tide serve` loads them.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "host/api/auth.h"
#include "host/api/handler.h"
#include "host/api/metrics.h"
#include "host/api/request_inputs.h"
#include "host/api/routes.h"
#include "host/api/server.h"
#include "host/config/manifest.h"
#include "host/ledger/ledger.h"
#include "host/lua/policy/policy_pool.h"
#include "host/lua/registry/script_registry.h"

namespace {

using namespace tide;

const std::filesystem::path kSourceDir = TIDE_SOURCE_DIR;

// What outlives every ledger: the scripts, the dry runs' policy engines, the metrics.
struct Host {
  SystemClock clock;
  lua::DiscardingScriptRecorder recorder;
  std::unique_ptr<lua::ScriptRegistry> scripts;
  std::unique_ptr<lua::PolicyPool> policies;
  api::HttpMetrics metrics;
  std::atomic<bool> stopping{false};
  api::WaitSlots wait_slots{16};
};

Host& host() {
  static Host* instance = [] {
    auto* h = new Host;
    lua::ScriptRegistryOptions options;
    options.policies_dir = kSourceDir / "policies";
    options.scripts_dir = kSourceDir / "scripts";
    h->scripts = std::make_unique<lua::ScriptRegistry>(options, h->recorder, h->clock);
    if (!h->scripts->reloadAll().errors.empty()) std::abort();
    h->policies = std::make_unique<lua::PolicyPool>(*h->scripts, h->clock);
    return h;
  }();
  return *instance;
}

// The ledger a request meets, and what is bound to it.
struct World {
  std::unique_ptr<ledger::Ledger> ledger;
  std::unique_ptr<api::Authenticator> auth;
  std::unique_ptr<api::ApiContext> context;
};

std::unique_ptr<World> freshWorld() {
  Host& h = host();
  auto world = std::make_unique<World>();
  auto opened = ledger::Ledger::open("sqlite://:memory:", h.clock);
  if (!opened.isOk()) std::abort();
  world->ledger = std::move(opened).value();
  for (const char* example : {"nodes.yaml", "nginx-plan.yaml", "deployment-1.yaml"}) {
    auto manifest = config::loadManifestFile((kSourceDir / "examples" / example).string());
    if (!manifest.isOk() || !world->ledger->applyManifest(*manifest, "fuzz").isOk()) std::abort();
  }
  world->auth = std::make_unique<api::Authenticator>(*world->ledger, true, std::vector<config::TokenConfig>{}, h.clock);
  world->context = std::make_unique<api::ApiContext>(
      api::ApiContext{*world->ledger, h.clock, h.metrics, h.stopping, h.wait_slots, h.scripts.get(), h.policies.get(),
                      lua::LuaLimits{}, true, nullptr, nullptr, world->auth.get()});
  return world;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::unique_ptr<World> world = freshWorld();

  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t line_end = input.find('\n');
  if (line_end == std::string_view::npos) return 0;
  const std::string_view request_line = input.substr(0, line_end);
  const size_t space = request_line.find(' ');
  if (space == std::string_view::npos) return 0;

  api::RouteMatch match = api::matchRoute("POST", request_line.substr(0, space));
  if (match.route == nullptr || match.route->pattern == "/v1/scripts/reload") return 0;
  api::ApiRequest request;
  request.method = "POST";
  request.path = std::string(request_line.substr(0, space));
  request.path_params = std::move(match.params);
  request.content_type = std::string(request_line.substr(space + 1));
  request.body = std::string(input.substr(line_end + 1));
  request.principal = {"fuzz-admin", api::Role::kAdmin};

  const api::ServerOptions defaults;
  if (!api::checkNestingDepth(request.body, defaults.limits.max_json_depth).isOk()) return 0;
  Result<api::ApiResponse> response = match.route->handler(*world->context, request);
  if (response.isOk()) world = freshWorld();
  return 0;
}
