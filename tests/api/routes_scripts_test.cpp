// The Lua host wired into the API and the CLI: /v1/scripts, /v1/policies/evaluate and
// `tide policy ...` against a real server whose registry watches a temp policies dir.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "host/cli/cli.h"
#include "host/engine/script_recorder.h"
#include "host/lua/registry/script_registry.h"
#include "tests/api/api_test_support.h"
#include "tests/support/eventually.h"
#include "tests/support/files.h"
#include "tests/support/source_tree.h"

using namespace tide;
using namespace tide::testing;
namespace fs = std::filesystem;

namespace {

// An empty watched policies dir and a scripts dir holding the shipped libs, a registry
// over them, and a server serving it.
struct ScriptsHarness {
  fs::path root = freshDir("wire", "scripts");
  fs::path policies = root / "policies";
  SystemClock system_clock;
  std::unique_ptr<ledger::Ledger> recorder_ledger;
  std::unique_ptr<engine::LedgerScriptRecorder> recorder;
  std::unique_ptr<lua::ScriptRegistry> registry;
  std::unique_ptr<ApiHarness> api;

  ScriptsHarness() {
    fs::create_directories(policies);
    fs::create_directories(root / "scripts" / "lib");
    fs::copy(kSourceTree / "scripts" / "lib", root / "scripts" / "lib", fs::copy_options::recursive);
    auto opened = ledger::Ledger::open("sqlite://:memory:", system_clock);
    REQUIRE(opened.isOk());
    recorder_ledger = std::move(opened).value();
    recorder = std::make_unique<engine::LedgerScriptRecorder>(*recorder_ledger);
    lua::ScriptRegistryOptions options;
    options.policies_dir = policies;
    options.scripts_dir = root / "scripts";
    options.debounce = std::chrono::milliseconds(50);
    registry = std::make_unique<lua::ScriptRegistry>(options, *recorder, system_clock);
    lua::ReloadSummary summary = registry->reloadAll();
    REQUIRE(summary.failed == 0);
    REQUIRE(registry->startWatching().isOk());
    api::ServerOptions server = testServerOptions();
    server.scripts = registry.get();
    // A liveness bound, not the production 50 ms: a plan's or deployment's params are checked
    // by loading every shipped strategy, which takes longer under ThreadSanitizer on a loaded
    // machine. No test here is about the deadline (tests/lua/ are).
    server.lua_limits.deadline = std::chrono::seconds(5);
    api = std::make_unique<ApiHarness>(server);
  }
  ~ScriptsHarness() {
    api.reset();
    registry->stopWatching();
    fs::remove_all(root);
  }

  Json evaluate(const std::string& body) {
    Reply reply = api->post("/v1/policies/evaluate", body, "application/json", kOperatorToken);
    REQUIRE_MESSAGE(reply.status == 200, reply.body);
    return reply.json();
  }
};

Json scriptAt(const Json& list, const std::string& file) {
  for (const Json& s : list["items"]) {
    if (s.value("path", "").ends_with(file)) return s;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("wire: a policy copied into the watched dir changes the verdict without a restart") {
  ScriptsHarness h;
  const std::string op_file = readFile(kSourceTree / "examples" / "op-dev-create.json");

  Json none = h.evaluate(op_file);
  CHECK(none["outcome"] == "PENDING_APPROVAL");
  CHECK(none["decisions"].empty());
  // Without a ctx fixture the ledger answers ctx.*; the op itself is enough.
  CHECK(h.evaluate(Json::parse(op_file)["op"].dump())["outcome"] == "PENDING_APPROVAL");

  fs::copy_file(kSourceTree / "policies" / "auto_approve_dev.lua", h.policies / "auto_approve_dev.lua");
  REQUIRE(eventually([&] { return h.evaluate(op_file)["outcome"] == "APPROVED"; }));

  Json list = h.api->get("/v1/scripts", kViewerToken).json();
  Json script = scriptAt(list, "auto_approve_dev.lua");
  REQUIRE(script.is_object());
  CHECK(script["status"] == "active");
  CHECK(script["kind"] == "policy");
  const std::string sha = script["active_sha256"];
  CHECK(sha.size() == 64);
  CHECK(!script["loaded_at"].get<std::string>().empty());
  Json approved = h.evaluate(op_file);
  REQUIRE(approved["decisions"].size() == 1);
  CHECK(approved["decisions"][0]["policy"] == "auto-approve-dev");
  CHECK(approved["decisions"][0]["verdict"] == "approve");
  CHECK(approved["decisions"][0]["script_sha256"] == sha);

  // A broken edit is refused: the error shows, the previous version keeps deciding.
  std::ofstream(h.policies / "auto_approve_dev.lua", std::ios::trunc) << "return { name = \n";
  REQUIRE(eventually([&] {
    Json s = scriptAt(h.api->get("/v1/scripts").json(), "auto_approve_dev.lua");
    return s.is_object() && !s.value("last_error", "").empty();
  }));
  Json stale = scriptAt(h.api->get("/v1/scripts").json(), "auto_approve_dev.lua");
  CHECK(stale["status"] == "stale");
  CHECK(stale["active_sha256"] == sha);
  Json still = h.evaluate(op_file);
  CHECK(still["outcome"] == "APPROVED");
  REQUIRE(still["decisions"].size() == 1);
  CHECK(still["decisions"][0]["script_sha256"] == sha);

  // Nothing of a dry run reaches the ledger's decisions.
  CHECK(h.api->ledger->operations().listDecisions(0)->empty());
}

TEST_CASE("wire: a policy file broken from the start shows as failed, raises an alarm and holds a dry run") {
  ScriptsHarness h;
  const std::string op_file = readFile(kSourceTree / "examples" / "op-dev-create.json");
  fs::copy_file(kSourceTree / "policies" / "auto_approve_dev.lua", h.policies / "auto_approve_dev.lua");
  REQUIRE(eventually([&] { return h.evaluate(op_file)["outcome"] == "APPROVED"; }));

  std::ofstream(h.root / "typo.lua.tmp") << "return { name = \n";
  fs::rename(h.root / "typo.lua.tmp", h.policies / "typo.lua");
  REQUIRE(eventually([&] { return scriptAt(h.api->get("/v1/scripts").json(), "typo.lua").is_object(); }));
  Json typo = scriptAt(h.api->get("/v1/scripts", kViewerToken).json(), "typo.lua");
  CHECK(typo["status"] == "failed");
  CHECK(typo["active_sha256"] == "");
  CHECK(typo["last_error"].get<std::string>().find("typo.lua") != std::string::npos);

  Json held = h.evaluate(op_file);
  CHECK(held["outcome"] == "PENDING_APPROVAL");
  REQUIRE(held["decisions"].size() == 2);
  Json failing = held["decisions"][0]["error_class"] == "load" ? held["decisions"][0] : held["decisions"][1];
  CHECK(failing["verdict"] == "manual");
  CHECK(failing["level"] == "hard");
  auto alarms =
      ledger::listAll(h.recorder_ledger->audit(), &ledger::AuditRecords::listEvents, {{"kind", "alarm.script"}});
  REQUIRE(alarms.isOk());
  REQUIRE(alarms->size() == 1);
  CHECK(alarms->front().data["path"].get<std::string>().ends_with("typo.lua"));
}

TEST_CASE("wire: concurrent dry runs at different fixture times each get their own answer") {
  ScriptsHarness h;
  fs::copy_file(kSourceTree / "policies" / "business_hours.lua", h.policies / "business_hours.lua");
  REQUIRE(h.registry->reloadAll().failed == 0);
  // The pooled Lua states are reused between requests; each request's ctx.now must still
  // be its own fixture's.
  auto body = [](const std::string& now) {
    return Json{{"op", {{"type", "UPDATE"}, {"plan", {{"name", "web"}, {"namespace", "prod-web"}}}}},
                {"ctx", {{"now", now}}}}
        .dump();
  };
  const std::string open_hours = body("2026-03-03T10:00:00Z");
  const std::string saturday = body("2026-03-07T11:00:00Z");
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const bool weekend = (t + i) % 2 == 1;
        Reply reply =
            h.api->post("/v1/policies/evaluate", weekend ? saturday : open_hours, "application/json", kOperatorToken);
        if (reply.status != 200) {
          ++wrong;
          continue;
        }
        Json evaluation = reply.json();
        const bool manual = !evaluation["decisions"].empty() && evaluation["decisions"][0]["verdict"] == "manual";
        if (manual != weekend) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(wrong == 0);
}

TEST_CASE("wire: scripts reload is admin-only and returns the summary") {
  ScriptsHarness h;
  fs::copy_file(kSourceTree / "policies" / "auto_approve_dev.lua", h.policies / "auto_approve_dev.lua");
  CHECK(h.api->post("/v1/scripts/reload", "", "application/json", kOperatorToken).status == 403);
  Reply reply = h.api->post("/v1/scripts/reload", "");
  REQUIRE(reply.status == 200);
  Json summary = reply.json();
  CHECK(summary["failed"] == 0);
  CHECK(summary.contains("version"));
  CHECK(summary["errors"].empty());
}

TEST_CASE("wire: a bad evaluate body is a 400 naming the field") {
  ScriptsHarness h;
  auto post = [&](const std::string& body) {
    return h.api->post("/v1/policies/evaluate", body, "application/json", kOperatorToken);
  };
  Reply not_json = post("{nope");
  CHECK(not_json.status == 400);
  CHECK(not_json.detailNames("body"));
  CHECK(post("[1]").detailNames("body"));
  CHECK(post(R"({"op": 3})").detailNames("op"));
  CHECK(post(R"({"op": {"type": "CREATE", "plan": {"name": "p"}}, "ctx": 1})").detailNames("ctx"));
  CHECK(post(R"({"op": {"plan": {"name": "p"}}})").detailNames("op.type"));
  CHECK(post(R"({"type": "CREATE"})").detailNames("op.plan"));
  // A fixture time beyond the years tide can hold (api_body_fuzz found the string one
  // overflowing under UBSan).
  const std::string op = R"("op": {"type": "CREATE", "plan": {"name": "p"}})";
  CHECK(post("{" + op + R"(, "ctx": {"now": "4026-03-03T10:00:00Z"}})").detailNames("ctx.now"));
  CHECK(post("{" + op + R"(, "ctx": {"now": 1e15}})").detailNames("ctx.now"));
  CHECK(h.api->post("/v1/policies/evaluate", "{}", "application/json", kViewerToken).status == 403);
}

TEST_CASE("wire: without a registry the script routes answer 503") {
  ApiHarness h;
  Reply list = h.get("/v1/scripts");
  CHECK(list.status == 503);
  CHECK(list.json()["error"]["message"].get<std::string>().find("scripts are not loaded") != std::string::npos);
  CHECK(h.post("/v1/scripts/reload", "").status == 503);
  CHECK(h.post("/v1/policies/evaluate", "{}").status == 503);
}

namespace {

struct CliRun {
  int code = 0;
  std::string out;
  std::string err;
};

CliRun runCli(std::vector<std::string> args) {
  args.insert(args.begin(), "tide");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  std::ostringstream out, err;
  CliRun run;
  run.code = cli::run(static_cast<int>(argv.size()), argv.data(), out, err);
  run.out = out.str();
  run.err = err.str();
  return run;
}

}  // namespace

TEST_CASE("wire: tide policy test passes every shipped policy and fails a failing case") {
  const std::string scripts = (kSourceTree / "scripts").string();
  CliRun shipped = runCli({"policy", "test", (kSourceTree / "policies").string(), "--scripts", scripts});
  CHECK_MESSAGE(shipped.code == 0, shipped.out);
  CHECK(shipped.out.find(" 0 failed") != std::string::npos);

  fs::path dir = freshDir("wire", "failing-policy");
  std::ofstream(dir / "always_deny.lua") << R"(return {
  name = "always-deny",
  decide = function(op, ctx) return deny("never") end,
  tests = {
    { name = "claims to approve", op = { type = "CREATE", plan = { name = "p", namespace = "n" } }, expect = "approve" },
  },
}
)";
  CliRun failing = runCli({"policy", "test", dir.string(), "--scripts", scripts});
  CHECK_MESSAGE(failing.code != 0, failing.out);
  CHECK(failing.out.find("FAIL") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("wire: tide policy eval and tide scripts list talk to the running host") {
  ScriptsHarness h;
  fs::copy_file(kSourceTree / "policies" / "auto_approve_dev.lua", h.policies / "auto_approve_dev.lua");
  REQUIRE(h.api->post("/v1/scripts/reload", "").status == 200);
  const std::string server = "http://127.0.0.1:" + std::to_string(h.api->server->port());
  const std::string op = (kSourceTree / "examples" / "op-dev-create.json").string();

  CliRun eval = runCli({"policy", "eval", "--op", op, "--server", server, "--token", kOperatorToken});
  REQUIRE_MESSAGE(eval.code == 0, eval.err);
  CHECK(eval.out.find("verdict: APPROVED") != std::string::npos);
  CHECK(eval.out.find("auto-approve-dev") != std::string::npos);

  CliRun json = runCli({"policy", "eval", "--op", op, "--server", server, "--token", kOperatorToken, "-o", "json"});
  REQUIRE(json.code == 0);
  CHECK(Json::parse(json.out)["outcome"] == "APPROVED");

  CliRun offline = runCli({"policy", "eval", "--op", op, "--offline", "--policies", h.policies.string(), "--scripts",
                           (h.root / "scripts").string()});
  REQUIRE_MESSAGE(offline.code == 0, offline.out);
  CHECK(offline.out.find("verdict: APPROVED") != std::string::npos);

  CliRun list = runCli({"scripts", "list", "--server", server, "--token", kViewerToken});
  REQUIRE_MESSAGE(list.code == 0, list.err);
  CHECK(list.out.find("auto_approve_dev.lua") != std::string::npos);
  const std::string sha = scriptAt(h.api->get("/v1/scripts").json(), "auto_approve_dev.lua")["active_sha256"];
  CHECK(list.out.find(sha.substr(0, 12)) != std::string::npos);

  CliRun reload = runCli({"scripts", "reload", "--server", server, "--token", kAdminToken, "-o", "json"});
  REQUIRE(reload.code == 0);
  CHECK(Json::parse(reload.out)["failed"] == 0);
}

TEST_CASE("wire: a deployment whose strategy params the script does not accept is refused, naming the param") {
  ScriptsHarness h;
  fs::copy(kSourceTree / "scripts" / "rollout", h.root / "scripts" / "rollout", fs::copy_options::recursive);
  REQUIRE(h.registry->reloadAll().failed == 0);
  for (const char* gpu : {"nvidia-v100", "nvidia-p100"}) {
    REQUIRE(h.api->post("/v1/capabilities", Json{{"name", gpu}, {"type", "GPU"}}.dump()).status == 201);
  }
  Reply bad_plan = h.api->post("/v1/plans", std::string(kMrdsPlan) + "strategy: {script: canary, params: {steps: 5}}\n",
                               "application/yaml");
  CHECK(bad_plan.status == 400);
  CHECK_MESSAGE(bad_plan.body.find("params.steps") != std::string::npos, bad_plan.body);
  const std::string plan = std::string(kMrdsPlan) + "strategy: {script: canary, params: {steps: [20, 100]}}\n";
  Reply created = h.api->post("/v1/plans", plan, "application/yaml");
  REQUIRE_MESSAGE(created.status == 201, created.body);
  const std::string url = "/v1/plans/nginx-deployment-plan/deployments";
  auto submit = [&](const std::string& id, const std::string& strategy) {
    std::string body = kMrdsDeployment;
    body.replace(body.find("deployment-1"), 12, id);
    return h.api->post(url, body + strategy, "application/yaml");
  };

  Reply unknown = submit("d1", "strategy: {params: {stepz: [50]}}\n");
  CHECK(unknown.status == 400);
  CHECK_MESSAGE(unknown.body.find("params.stepz") != std::string::npos, unknown.body);
  Reply mistyped = submit("d2", "strategy: {params: {pause_seconds: soon}}\n");
  CHECK(mistyped.status == 400);
  CHECK_MESSAGE(mistyped.body.find("params.pause_seconds") != std::string::npos, mistyped.body);
  Reply missing = submit("d3", "strategy: {script: no-such-strategy}\n");
  CHECK(missing.status == 400);
  CHECK(missing.detailNames("strategy.script"));
  // Nothing half-written: none of them is in the ledger.
  CHECK(h.api->get(url).json()["items"].empty());

  CHECK(submit("d4", "strategy: {params: {pause_seconds: 30}}\n").status == 201);
  // A whole manifest is checked the same way.
  Reply manifest = h.api->post("/v1/manifests",
                               "deployments:\n  - deployment_plan_name: nginx-deployment-plan\n    deployment_id: d5\n"
                               "    instance_count: 1\n    payload_coordinates: [{payload_name: nginx-payload, "
                               "coordinates: {image: \"nginx:1\"}}]\n    strategy: {params: {stepz: [1]}}\n",
                               "application/yaml");
  CHECK(manifest.status == 400);
  CHECK_MESSAGE(manifest.body.find("params.stepz") != std::string::npos, manifest.body);
}

namespace {

// A manifest with a problem of each layer: a key the parser does not know (line 7), params
// the rolling strategy does not take (a near miss of max_surge, and a value below its
// bound), a value of the wrong type, and a payload the deployment's plan does not have.
const char* kManifestOfManyErrors = R"(capabilities:
  - {name: gpu-a, type: GPU}
plans:
  - name: web
    namespace: prod
    serviceName: web
    colour: blue
    applications:
      - payloadName: web
        resources: {cores: 1, memory: 1}
    strategy:
      script: rolling
      params:
        max_surg: 1
        progress_deadline_seconds: 0
deployments:
  - deployment_plan_name: web
    deployment_id: web-1
    instance_count: lots
    payload_coordinates:
      - payload_name: webb
        coordinates: {image: "nginx:1"}
)";

// What POST /v1/manifests answers kManifestOfManyErrors from `source`: every problem, in
// file order, each at the line and column of the key or value at fault.
std::vector<ErrorDetail> manyErrorsExpected(const std::string& source) {
  return {
      {"plans[0].colour",
       "unknown key \"colour\"; known keys: metadata, name, namespace, serviceName, "
       "matchingComputeCapabilities, applications, strategy, approval, placement, traffic",
       source + ":7:5"},
      {"plans[0].strategy.params.max_surg",
       "unknown plan param 'max_surg' (did you mean 'max_surge'?); rolling knows max_surge, max_unavailable, "
       "progress_deadline_seconds",
       source + ":14:9"},
      {"plans[0].strategy.params.progress_deadline_seconds",
       "plan param 'progress_deadline_seconds' must be at least 1, not 0", source + ":15:36"},
      {"deployments[0].instance_count", "expected an integer, got the string \"lots\"", source + ":19:21"},
      {"deployments[0].payload_coordinates", "no coordinates for application 'web'", source + ":21:7"},
      {"deployments[0].payload_coordinates[0].payload_name", "plan 'web' has no application 'webb'", source + ":21:23"},
  };
}

std::vector<ErrorDetail> detailsOf(const Json& error) {
  std::vector<ErrorDetail> out;
  for (const Json& d : error["details"]) out.push_back({d["field"], d["message"], d["location"]});
  return out;
}

}  // namespace

TEST_CASE("wire: a manifest's errors of every layer come at once, in file order, each at its line and column") {
  ScriptsHarness h;
  fs::copy(kSourceTree / "scripts" / "rollout", h.root / "scripts" / "rollout", fs::copy_options::recursive);
  REQUIRE(h.registry->reloadAll().failed == 0);

  Reply named = h.api->post("/v1/manifests?source=web.yaml", kManifestOfManyErrors, "application/yaml");
  CHECK(named.status == 400);
  const Json error = named.json()["error"];
  CHECK(error["code"] == "invalid_argument");
  CHECK(detailsOf(error) == manyErrorsExpected("web.yaml"));
  CHECK(error["message"] ==
        "web.yaml:7:5: plans[0].colour: " + manyErrorsExpected("web.yaml")[0].message + " (and 5 more errors)");

  // Without a name the body is the source.
  Reply unnamed = h.api->post("/v1/manifests", kManifestOfManyErrors, "application/yaml");
  CHECK(detailsOf(unnamed.json()["error"]) == manyErrorsExpected("request body"));
  Reply control = h.api->post("/v1/manifests?source=a%1Bb", kManifestOfManyErrors, "application/yaml");
  CHECK(control.status == 400);
  CHECK(control.detailNames("source"));

  // Nothing is written.
  CHECK(h.api->get("/v1/capabilities").json()["items"].empty());
  CHECK(h.api->get("/v1/plans").json()["items"].empty());
}

TEST_CASE(
    "wire: tide deployment create prints every error of the file, one per line, as file:line:column: field: message") {
  ScriptsHarness h;
  fs::copy(kSourceTree / "scripts" / "rollout", h.root / "scripts" / "rollout", fs::copy_options::recursive);
  REQUIRE(h.registry->reloadAll().failed == 0);
  const std::string file = (h.root / "web.yaml").string();
  std::ofstream(file) << kManifestOfManyErrors;
  const std::string server = "http://127.0.0.1:" + std::to_string(h.api->server->port());

  CliRun created = runCli({"deployment", "create", "-m", file, "--server", server, "--token", kOperatorToken});
  CHECK(created.code == 1);
  std::string expected = "error: 6 errors in " + file + "\n";
  for (const ErrorDetail& d : manyErrorsExpected(file))
    expected += d.location + ": " + d.field + ": " + d.message + "\n";
  CHECK(created.err == expected);

  CliRun json = runCli({"node", "create", "-m", file, "--server", server, "--token", kOperatorToken, "-o", "json"});
  CHECK(json.code == 1);
  const Json error = Json::parse(json.err)["error"];
  CHECK(error["code"] == "invalid_argument");
  CHECK(detailsOf(error) == manyErrorsExpected(file));
  CHECK(h.api->get("/v1/plans").json()["items"].empty());
}

TEST_CASE("wire: a deployment's dry run names the approvals its operations would need and the policies deciding") {
  ScriptsHarness h;
  fs::copy(kSourceTree / "scripts" / "rollout", h.root / "scripts" / "rollout", fs::copy_options::recursive);
  fs::copy_file(kSourceTree / "policies" / "auto_approve_dev.lua", h.policies / "auto_approve_dev.lua");
  REQUIRE(h.registry->reloadAll().failed == 0);
  REQUIRE(h.api->post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
  for (const char* ns : {"dev-web", "prod-web"}) {
    REQUIRE(h.api->post("/v1/plans", mrdsPlanIn(std::string("web-") + ns, ns), "application/yaml").status == 201);
  }
  auto dryRun = [&](const std::string& plan) {
    std::string body = mrdsDeploymentOf(plan);
    body.replace(body.find("instance_count: 1"), 17, "instance_count: 3");
    Reply reply = h.api->post("/v1/plans/" + plan + "/deployments?dry_run=true", body, "application/yaml");
    REQUIRE_MESSAGE(reply.status == 200, reply.body);
    return reply.json();
  };
  const int64_t events = h.api->lastEventSeq();
  const Json dev = dryRun("web-dev-web");
  CHECK(dev["dry_run"] == true);
  CHECK(dev["rollout"]["strategy"] == "rolling");
  CHECK(dev["rollout"]["creates"] == 3);
  CHECK(dev["rollout"]["updates"] == 0);
  REQUIRE(dev["rollout"]["approvals"].size() == 1);
  const Json creates = dev["rollout"]["approvals"][0];
  CHECK(creates["type"] == "CREATE");
  CHECK(creates["operations"] == 3);
  CHECK(creates["outcome"] == "APPROVED");
  REQUIRE(creates["decisions"].size() == 1);
  CHECK(creates["decisions"][0]["policy"] == "auto-approve-dev");

  const Json prod = dryRun("web-prod-web");
  REQUIRE(prod["rollout"]["approvals"].size() == 1);
  CHECK(prod["rollout"]["approvals"][0]["outcome"] == "PENDING_APPROVAL");  // no policy approves prod
  for (const Json& decision : prod["rollout"]["approvals"][0]["decisions"]) CHECK(decision["verdict"] != "approve");
  // Nothing was written: no deployment, no event.
  CHECK(h.api->get("/v1/plans/web-dev-web/deployments").json()["items"].empty());
  CHECK(h.api->lastEventSeq() == events);
}
