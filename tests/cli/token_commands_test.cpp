// `tide token create|list|revoke` against a live server: the secret is printed once and
// works under the token's name; list shows no secret; a revoked token stops working.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "host/config/manifest.h"
#include "tests/cli/cli_test_support.h"

using namespace tide;
using namespace tide::testing;

namespace {

// The secret `tide token create` printed: the line after the heading.
std::string secretOf(const std::string& out) {
  std::istringstream lines(out);
  std::string line;
  std::getline(lines, line);
  std::getline(lines, line);
  return line;
}

}  // namespace

TEST_CASE("cli: token create prints the secret once, the new token acts under its name") {
  LiveServer live;
  CliRun created = live.run({"token", "create", "--name", "alice", "--role", "approver", "--expires", "30d"});
  REQUIRE_MESSAGE(created.code == 0, created.err);
  CHECK(contains(created.out, "Token alice (approver, expires 20"));
  CHECK(contains(created.out, "cannot show it again"));
  const std::string secret = secretOf(created.out);
  REQUIRE(secret.size() == 64);

  CliRun as_alice = runCli({"node", "list", "--server", live.url, "--token", secret});
  CHECK_MESSAGE(as_alice.code == 0, as_alice.err);
  CliRun not_admin = runCli({"token", "list", "--server", live.url, "--token", secret});
  CHECK(not_admin.code == 1);
  CHECK(contains(not_admin.err, "admin role"));

  CliRun list = live.run({"token", "list"});
  REQUIRE_MESSAGE(list.code == 0, list.err);
  CHECK(contains(list.out, "alice"));
  CHECK(contains(list.out, "bootstrap-admin"));
  CHECK(contains(list.out, "Total: 2"));
  CHECK(list.out.find("Total:") == list.out.rfind("Total:"));  // once, not twice
  CHECK_FALSE(contains(list.out, secret));

  CliRun json = live.run({"token", "list", "-o", "json"});
  REQUIRE(json.code == 0);
  const nlohmann::json items = nlohmann::json::parse(json.out)["items"];
  REQUIRE(items.size() == 2);
  CHECK(items[1]["name"] == "alice");
  CHECK(items[1]["state"] == "ACTIVE");
  CHECK_FALSE(contains(json.out, secret));
}

TEST_CASE("cli: token revoke ends a token, bad flags are named") {
  LiveServer live;
  const std::string secret = secretOf(live.run({"token", "create", "--name", "ci", "--role", "viewer"}).out);
  REQUIRE(runCli({"node", "list", "--server", live.url, "--token", secret}).code == 0);

  CliRun revoked = live.run({"token", "revoke", "ci"});
  REQUIRE_MESSAGE(revoked.code == 0, revoked.err);
  CHECK(contains(revoked.out, "Token ci revoked"));
  CliRun refused = runCli({"node", "list", "--server", live.url, "--token", secret});
  CHECK(refused.code == 1);
  CHECK(contains(refused.err, "revoked"));

  CliRun twice = live.run({"token", "revoke", "ci"});
  CHECK(twice.code == 1);
  CHECK(contains(twice.err, "no live token is named 'ci'"));
  CliRun last_admin = live.run({"token", "revoke", "bootstrap-admin"});
  CHECK(last_admin.code == 1);
  CHECK(contains(last_admin.err, "last admin token"));
  CliRun bad_expiry = live.run({"token", "create", "--name", "x", "--role", "viewer", "--expires", "soon"});
  CHECK(bad_expiry.code == 1);
  CHECK(contains(bad_expiry.err, "expires_in"));
  CHECK(live.run({"token", "create", "--role", "viewer"}).code != 0);  // a name is required
}

TEST_CASE("cli: token create --role agent --node binds the token to its node, list shows the node") {
  LiveServer live;
  REQUIRE(live.ledger->applyManifest(*config::parseManifest(R"(clusters:
  - {name: edge, driver: agent}
nodes:
  - {name: n1, cluster: edge, update_domain: ud-1}
)", "m.yaml"), "test").isOk());
  CliRun created = live.run({"token", "create", "n1-agent", "--role", "agent", "--node", "n1"});
  REQUIRE_MESSAGE(created.code == 0, created.err);
  CHECK(contains(created.out, "Token n1-agent (agent"));
  CliRun table = live.run({"token", "list"});
  REQUIRE(table.code == 0);
  CHECK(contains(table.out, "Node"));
  CliRun listed = live.run({"token", "list", "-o", "json"});
  REQUIRE(listed.code == 0);
  bool bound = false;
  const nlohmann::json tokens = nlohmann::json::parse(listed.out);
  for (const auto& token : tokens["items"]) bound |= token["node"] == "n1";
  CHECK(bound);

  CliRun no_node = live.run({"token", "create", "a2", "--role", "agent"});
  CHECK(no_node.code != 0);
  CHECK(contains(no_node.err, "node"));
  CliRun unknown = live.run({"token", "create", "a3", "--role", "agent", "--node", "n9"});
  CHECK(unknown.code != 0);
  CHECK(contains(unknown.err, "n9"));
  CliRun viewer = live.run({"token", "create", "v1", "--role", "viewer", "--node", "n1"});
  CHECK(viewer.code != 0);
  CliRun twice = live.run({"token", "create", "x", "--name", "y", "--role", "viewer"});
  CHECK(twice.code != 0);
}

TEST_CASE("cli: token create --namespace scopes the token, list shows its namespaces") {
  LiveServer live;
  CliRun created = live.run(
      {"token", "create", "prod-approver", "--role", "approver", "--namespace", "prod", "--namespace", "prod-eu"});
  REQUIRE_MESSAGE(created.code == 0, created.err);
  CHECK(contains(created.out, "Token prod-approver (approver in namespaces prod, prod-eu, expires never)"));
  const std::string secret = secretOf(created.out);

  CliRun table = live.run({"token", "list"});
  REQUIRE(table.code == 0);
  CHECK(contains(table.out, "Namespaces"));
  CHECK(contains(table.out, "prod, prod-eu"));
  CliRun json = live.run({"token", "list", "-o", "json"});
  REQUIRE(json.code == 0);
  CHECK(nlohmann::json::parse(json.out)["items"][1]["namespaces"] == nlohmann::json{"prod", "prod-eu"});

  // Fleet-wide changes need a token without namespaces; the refusal says why.
  CliRun cordon = runCli({"node", "cordon", "n1", "--server", live.url, "--token", secret});
  CHECK(cordon.code == 1);
  CHECK(contains(cordon.err, "acts only in namespaces prod, prod-eu"));

  CliRun viewer = live.run({"token", "create", "v", "--role", "viewer", "--namespace", "prod"});
  CHECK(viewer.code == 1);
  CHECK(contains(viewer.err, "a viewer token reads every namespace"));
}
