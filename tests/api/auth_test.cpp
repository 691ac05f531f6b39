#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "host/core/sha256.h"
#include "tests/api/api_test_support.h"
#include "tests/support/files.h"

using namespace tide;
using namespace tide::testing;

namespace {

}  // namespace

TEST_CASE("api: requests without a valid token are 401 and change nothing") {
  ApiHarness h;
  Json before = h.everything();

  Reply none = h.get("/v1/nodes", "");
  CHECK(none.status == 401);
  CHECK(none.errorCode() == "unauthenticated");
  CHECK(none.header("WWW-Authenticate").find("Bearer") == 0);

  CHECK(h.get("/v1/nodes", "not-a-token").status == 401);
  CHECK(h.post("/v1/capabilities", R"({"name":"x","type":"GPU"})", "application/json", "wrong").status == 401);

  httplib::Client basic = h.client("");
  basic.set_basic_auth("admin", "admin-secret");
  CHECK(toReply(basic.Get("/v1/nodes")).status == 401);

  CHECK(h.everything() == before);
}

TEST_CASE("api: a refused request's body is drained so the connection carries the next one") {
  ApiHarness h;
  httplib::Client c = h.client("wrong-token");
  c.set_keep_alive(true);
  std::string body = R"({"name":"x","type":"GPU","pad":")" + std::string(20000, 'x') + "\"}";
  for (int i = 0; i < 3; ++i) {
    auto refused = c.Post("/v1/capabilities", body, "application/json");
    REQUIRE(refused);
    CHECK(refused->status == 401);
    auto missing = c.Post("/v1/nope", body, "application/json");
    REQUIRE(missing);
    CHECK(missing->status == 404);
  }
  auto health = c.Get("/healthz");
  REQUIRE(health);
  CHECK(health->status == 200);
}

TEST_CASE("api: roles are ordered viewer < operator < approver < admin") {
  ApiHarness h;
  REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml", kOperatorToken).status == 201);
  Json before = h.everything();

  // Reading needs viewer.
  CHECK(h.get("/v1/nodes", kViewerToken).status == 200);
  // Creating and cordoning need operator.
  Reply viewer_create = h.post("/v1/capabilities", R"({"name":"x","type":"GPU"})", "application/json", kViewerToken);
  CHECK(viewer_create.status == 403);
  CHECK(viewer_create.errorCode() == "permission_denied");
  CHECK(h.post("/v1/nodes/kind-worker/cordon", "", "", kViewerToken).status == 403);
  // Deletes and cluster (de)activation need admin.
  CHECK(h.del("/v1/capabilities/nvidia-v100", kOperatorToken).status == 403);
  CHECK(h.del("/v1/capabilities/nvidia-v100", kApproverToken).status == 403);
  CHECK(h.post("/v1/clusters/local/deactivate", "", "", kApproverToken).status == 403);
  CHECK(h.everything() == before);

  CHECK(h.post("/v1/nodes/kind-worker/cordon", "", "", kOperatorToken).status == 200);
  CHECK(h.post("/v1/capabilities", R"({"name":"x","type":"GPU"})", "application/json", kApproverToken).status == 201);
  CHECK(h.del("/v1/capabilities/x", kAdminToken).status == 200);
}

TEST_CASE("api: a config token's name (auth.tokens) is the actor in ledger events") {
  ApiHarness h;
  REQUIRE(h.post("/v1/capabilities", R"({"name":"gpu-x","type":"GPU"})", "application/json", kOperatorToken).status ==
          201);
  Reply events = h.get("/v1/events?kind=capability.*");
  REQUIRE(events.status == 200);
  REQUIRE(events.json()["items"].size() == 1);
  CHECK(events.json()["items"][0]["actor"] == kOperatorName);
}

TEST_CASE("api: tokens stored in the ledger authenticate with their role") {
  ApiHarness h;
  REQUIRE(h.ledger->tokens().createToken("ci-bot", sha256Hex("ci-token"), "operator", "test").isOk());
  CHECK(h.get("/v1/nodes", "ci-token").status == 200);
  CHECK(h.post("/v1/capabilities", R"({"name":"ci","type":"GPU"})", "application/json", "ci-token").status == 201);
  CHECK(h.del("/v1/capabilities/ci", "ci-token").status == 403);
  Reply events = h.get("/v1/events?subject=capability/ci");
  REQUIRE(events.json()["items"].size() == 1);
  CHECK(events.json()["items"][0]["actor"] == "ci-bot");
}

TEST_CASE("api: first start without tokens writes a 0600 admin.token that works") {
  std::filesystem::path dir = freshDir("api", "bootstrap") / "nested";
  api::ServerOptions options;
  options.port = 0;
  options.data_dir = dir.string();
  ApiHarness h(options);

  std::filesystem::path file = dir / "admin.token";
  REQUIRE(std::filesystem::exists(file));
  struct stat info {};
  REQUIRE(::stat(file.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);
  std::string token = readFile(file);
  CHECK(token.size() == 64);
  CHECK(token.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(h.ledger->tokens().countTokens() == 1);

  CHECK(h.get("/v1/nodes", token).status == 200);
  CHECK(h.del("/v1/capabilities/none", token).status == 404);  // admin: past auth, then not found
  CHECK(h.get("/v1/nodes", "").status == 401);

  // A restart finds the token and leaves the file alone.
  h.server->stop();
  REQUIRE(h.server->start().isOk());
  CHECK(readFile(file) == token);
  CHECK(h.ledger->tokens().countTokens() == 1);
  std::filesystem::remove_all(dir.parent_path());
}

TEST_CASE("api: no bootstrap token when config tokens exist or auth is off") {
  std::filesystem::path dir = freshDir("api", "no-bootstrap");
  api::ServerOptions with_tokens = testServerOptions();
  with_tokens.data_dir = dir.string();
  {
    ApiHarness h(with_tokens);
    CHECK_FALSE(std::filesystem::exists(dir / "admin.token"));
    CHECK(h.ledger->tokens().countTokens() == 0);
  }
  api::ServerOptions no_auth;
  no_auth.port = 0;
  no_auth.auth_enabled = false;
  no_auth.data_dir = dir.string();
  ApiHarness h(no_auth);
  CHECK_FALSE(std::filesystem::exists(dir / "admin.token"));
  CHECK(h.post("/v1/capabilities", R"({"name":"anon","type":"GPU"})", "application/json", "").status == 201);
  CHECK(h.get("/v1/events?subject=capability/anon").json()["items"][0]["actor"] == "anonymous");
  std::filesystem::remove_all(dir);
}

TEST_CASE("api: start refuses bad token configuration") {
  FakeClock clock(*parseTimestamp("2026-11-21T12:00:00Z"));
  auto opened = ledger::Ledger::open("sqlite://:memory:", clock);
  REQUIRE(opened.isOk());
  api::ServerOptions options;
  options.port = 0;
  options.config_tokens = {{"t", "a-long-enough-secret", "superuser", {}}};
  api::ApiServer bad_role(options, **opened, clock);
  CHECK(bad_role.start().code() == Code::kInvalidArgument);

  api::ServerOptions no_dir;
  no_dir.port = 0;
  api::ApiServer nowhere(no_dir, **opened, clock);
  CHECK(nowhere.start().code() == Code::kInvalidArgument);
  CHECK((*opened)->tokens().countTokens() == 0);
}
