// /v1/tokens over real HTTP: an admin issues a token (its secret shown once), lists tokens
// without secrets, and revokes them; expired and revoked tokens stop working at once.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/api/api_test_support.h"

using namespace tide;
using namespace tide::testing;

namespace {

// The list item named `name`, or null.
Json listed(const ApiHarness& h, const std::string& name) {
  Reply list = h.get("/v1/tokens");
  REQUIRE(list.status == 200);
  const Json items = list.json()["items"];
  for (const Json& item : items) {
    if (item["name"] == name) return item;
  }
  return nullptr;
}

Reply createToken(const ApiHarness& h, const Json& body, const std::string& as = kAdminToken) {
  return h.post("/v1/tokens", body.dump(), "application/json", as);
}

}  // namespace

TEST_CASE("tokens: an admin creates a token, it works under its name and its secret is shown only once") {
  ApiHarness h;
  Reply created = createToken(h, {{"name", "ci-bot"}, {"role", "operator"}, {"expires_in", "30d"}});
  REQUIRE_MESSAGE(created.status == 201, created.body);
  const std::string secret = created.json()["token"];
  CHECK(secret.size() == 64);
  CHECK(created.json()["role"] == "operator");
  CHECK(created.json()["state"] == "ACTIVE");
  CHECK(created.json()["expires_at"] == "2026-12-21T12:00:00.000Z");  // the harness clock + 30 days

  CHECK(h.post("/v1/capabilities", R"({"name":"ci","type":"GPU"})", "application/json", secret).status == 201);
  CHECK(h.del("/v1/capabilities/ci", secret).status == 403);  // an operator, not an admin
  CHECK(h.get("/v1/events?subject=capability/ci").json()["items"][0]["actor"] == "ci-bot");
  Reply issued = h.get("/v1/events?kind=token.created");
  REQUIRE(issued.json()["items"].size() == 1);
  CHECK(issued.json()["items"][0]["actor"] == kAdminName);
  CHECK(issued.body.find(secret) == std::string::npos);

  Reply list = h.get("/v1/tokens");
  REQUIRE(list.status == 200);
  CHECK(list.body.find(secret) == std::string::npos);
  CHECK(list.json()["items"].size() == 7);  // the six config tokens and ci-bot
  CHECK(listed(h, "ci-bot")["source"] == "ledger");
  CHECK(listed(h, kApproverName)["source"] == "config");
  CHECK(listed(h, kApproverName)["role"] == "approver");
}

TEST_CASE("tokens: only an admin manages tokens") {
  ApiHarness h;
  for (const std::string& token : {kViewerToken, kOperatorToken, kApproverToken}) {
    CHECK(createToken(h, {{"name", "x"}, {"role", "viewer"}}, token).status == 403);
    CHECK(h.get("/v1/tokens", token).status == 403);
    CHECK(h.del("/v1/tokens/x", token).status == 403);
  }
  CHECK(h.ledger->tokens().countTokens() == 0);
}

TEST_CASE("tokens: bad requests name the field and write nothing") {
  ApiHarness h;
  REQUIRE(createToken(h, {{"name", "taken"}, {"role", "viewer"}}).status == 201);
  const Json before = h.everything();
  struct Case {
    Json body;
    int status;
    std::string field;
  };
  for (const Case& c : std::vector<Case>{
           {{{"role", "viewer"}}, 400, "name"},
           {{{"name", "x"}}, 400, "role"},
           {{{"name", "x"}, {"role", "root"}}, 400, "role"},
           {{{"name", "Bad Name"}, {"role", "viewer"}}, 400, "name"},
           {{{"name", "x"}, {"role", "viewer"}, {"expires_in", "30x"}}, 400, "expires_in"},
           {{{"name", "x"}, {"role", "viewer"}, {"expires_in", "0d"}}, 400, "expires_in"},
           {{{"name", "x"}, {"role", "viewer"}, {"expires_in", "-3h"}}, 400, "expires_in"},
           {{{"name", "x"}, {"role", "viewer"}, {"expires_in", "99999d"}}, 400, "expires_in"},
           {{{"name", "x"}, {"role", "viewer"}, {"expires_in", 30}}, 400, "expires_in"},
           {{{"name", "x"}, {"role", "viewer"}, {"secret", "mine"}}, 400, "secret"},
           {{{"name", "taken"}, {"role", "viewer"}}, 409, ""},
           {{{"name", kApproverName}, {"role", "viewer"}}, 409, ""},  // a config token's name
       }) {
    CAPTURE(c.body.dump());
    Reply reply = createToken(h, c.body);
    CHECK(reply.status == c.status);
    if (!c.field.empty()) CHECK(reply.detailNames(c.field));
  }
  CHECK(h.everything() == before);
  CHECK(h.get("/v1/tokens?bogus=1").status == 400);
}

TEST_CASE("tokens: a revoked token fails at once, its name can be reused, and revoking it twice is 404") {
  ApiHarness h;
  const std::string secret = createToken(h, {{"name", "ci-bot"}, {"role", "viewer"}}).json()["token"];
  REQUIRE(h.get("/v1/nodes", secret).status == 200);

  Reply revoked = h.del("/v1/tokens/ci-bot");
  REQUIRE_MESSAGE(revoked.status == 200, revoked.body);
  CHECK(revoked.json()["state"] == "REVOKED");
  CHECK(revoked.json()["revoked_by"] == kAdminName);
  Reply refused = h.get("/v1/nodes", secret);
  CHECK(refused.status == 401);
  CHECK(refused.body.find("revoked") != std::string::npos);
  CHECK(listed(h, "ci-bot")["state"] == "REVOKED");
  CHECK(h.get("/v1/events?kind=token.revoked").json()["items"].size() == 1);

  CHECK(h.del("/v1/tokens/ci-bot").status == 404);
  CHECK(h.del("/v1/tokens/" + kApproverName).status == 400);  // config tokens live in auth.tokens

  Reply again = createToken(h, {{"name", "ci-bot"}, {"role", "viewer"}});
  REQUIRE(again.status == 201);
  CHECK(h.get("/v1/nodes", again.json()["token"]).status == 200);
  CHECK(h.get("/v1/nodes", secret).status == 401);  // the old secret stays dead
}

TEST_CASE("tokens: a token revoked in the ledger by another caller than the API is refused at its next request") {
  ApiHarness h;
  const std::string secret = createToken(h, {{"name", "ci-bot"}, {"role", "viewer"}}).json()["token"];
  for (int i = 0; i < 3; ++i) REQUIRE(h.get("/v1/nodes", secret).status == 200);  // known to the API by now

  REQUIRE(h.ledger->tokens().revokeToken("ci-bot", "someone", /*keep_an_admin=*/true).isOk());
  Reply refused = h.get("/v1/nodes", secret);
  CHECK(refused.status == 401);
  CHECK(refused.body.find("revoked") != std::string::npos);
  CHECK(h.get("/v1/nodes", kViewerToken).status == 200);
}

TEST_CASE("tokens: a token stops working when it expires") {
  ApiHarness h;
  const std::string secret = createToken(h, {{"name", "temp"}, {"role", "viewer"}, {"expires_in", "90m"}}).json()["token"];
  REQUIRE(h.get("/v1/nodes", secret).status == 200);
  h.clock.advance(std::chrono::minutes(89));
  CHECK(h.get("/v1/nodes", secret).status == 200);
  h.clock.advance(std::chrono::minutes(1));
  Reply expired = h.get("/v1/nodes", secret);
  CHECK(expired.status == 401);
  CHECK(expired.body.find("expired") != std::string::npos);
  CHECK(listed(h, "temp")["state"] == "EXPIRED");
}

TEST_CASE("tokens: the last admin token cannot be revoked") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tide-tokens-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  api::ServerOptions options;
  options.port = 0;
  options.data_dir = dir.string();
  ApiHarness h(options);  // no config tokens: the bootstrap admin token is the only one
  std::string bootstrap;
  std::ifstream(dir / "admin.token") >> bootstrap;
  REQUIRE(!bootstrap.empty());

  Reply last = h.del("/v1/tokens/bootstrap-admin", bootstrap);
  CHECK(last.status == 409);
  CHECK(last.body.find("last admin token") != std::string::npos);
  CHECK(h.get("/v1/nodes", bootstrap).status == 200);

  Reply second = h.post("/v1/tokens", R"({"name":"ops-admin","role":"admin"})", "application/json", bootstrap);
  REQUIRE(second.status == 201);
  CHECK(h.del("/v1/tokens/bootstrap-admin", second.json()["token"]).status == 200);
  CHECK(h.get("/v1/nodes", bootstrap).status == 401);
  CHECK(h.del("/v1/tokens/ops-admin", second.json()["token"]).status == 409);
  std::filesystem::remove_all(dir);
}

TEST_CASE("tokens: the list pages through the ledger's tokens, the config file's come first, on the first page") {
  ApiHarness h;
  for (const char* name : {"bot-1", "bot-2", "bot-3"}) {
    REQUIRE(createToken(h, {{"name", name}, {"role", "viewer"}}).status == 201);
  }
  Reply first = h.get("/v1/tokens?limit=2");
  REQUIRE(first.status == 200);
  const Json page = first.json();
  std::vector<std::string> names;
  for (const Json& item : page["items"]) names.push_back(item["name"]);
  REQUIRE(names.size() == 8);  // the six config tokens, then two of the ledger's
  CHECK(page["items"][5]["source"] == "config");
  CHECK(names[6] == "bot-1");
  CHECK(names[7] == "bot-2");
  REQUIRE(page.contains("next_after"));

  Reply second = h.get("/v1/tokens?limit=2&after=" + std::to_string(page["next_after"].get<int64_t>()));
  REQUIRE(second.status == 200);
  REQUIRE(second.json()["items"].size() == 1);
  CHECK(second.json()["items"][0]["name"] == "bot-3");
  CHECK_FALSE(second.json().contains("next_after"));
}
