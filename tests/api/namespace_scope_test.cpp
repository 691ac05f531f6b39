// Namespace-scoped tokens over real HTTP (docs/architecture.md#namespace-scoped-tokens): a token
// minted with `namespaces: [prod]` reads everything, but changes and approves only what belongs
// to plans of prod; the fleet's own routes refuse it, and a refusal writes nothing.

#include <doctest/doctest.h>

#include <string>

#include "tests/api/api_test_support.h"

using namespace tide;
using namespace tide::testing;

namespace {

// The inventory, plan "web-prod" in namespace prod and "web-staging" in staging, each with a
// deployment, a meta instance and an operation waiting for a person.
struct ScopedFleet {
  ApiHarness h;
  std::string prod_instance, staging_instance;
  int64_t prod_operation = 0, staging_operation = 0;

  ScopedFleet() {
    REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
    for (const auto& [plan, ns] : {std::pair{"web-prod", "prod"}, std::pair{"web-staging", "staging"}}) {
      REQUIRE(h.post("/v1/plans", mrdsPlanIn(plan, ns), "application/yaml").status == 201);
      REQUIRE(h.post(std::string("/v1/plans/") + plan + "/deployments", mrdsDeploymentOf(plan), "application/yaml")
                  .status == 201);
    }
    prod_instance = newInstance("web-prod");
    staging_instance = newInstance("web-staging");
    prod_operation = waitingOperation(*h.ledger, prod_instance).meta.id;
    staging_operation = waitingOperation(*h.ledger, staging_instance).meta.id;
  }

  std::string newInstance(const std::string& plan) {
    auto created = h.ledger->instances().createMetaInstance(plan, "deployment-1", "test");
    REQUIRE(created.isOk());
    return created->name;
  }

  model::OperationState stateOf(int64_t operation) {
    auto got = h.ledger->operations().getOperation(operation);
    REQUIRE(got.isOk());
    return got->state;
  }
};

void refusedScoped(const Reply& reply, const std::string& says) {
  CHECK_MESSAGE(reply.status == 403, reply.body);
  CHECK(reply.errorCode() == "permission_denied");
  CHECK_MESSAGE(reply.body.find(says) != std::string::npos, reply.body);
}

}  // namespace

TEST_CASE("api: a namespace-scoped approver approves operations of its namespace and no other") {
  ScopedFleet f;
  const std::string approve = "/v1/operations/" + std::to_string(f.staging_operation) + "/approve";
  const Json before = f.h.everything();
  refusedScoped(f.h.post(approve, "{}", "application/json", kProdApproverToken),
                "token 'pat' acts only in namespace prod; plan 'web-staging' is in namespace 'staging'");
  refusedScoped(f.h.post("/v1/operations/" + std::to_string(f.staging_operation) + "/reject", "{}", "application/json",
                         kProdApproverToken),
                "namespace 'staging'");
  CHECK(f.h.everything() == before);
  CHECK(f.stateOf(f.staging_operation) == model::OperationState::kPendingApproval);

  Reply approved = f.h.post("/v1/operations/" + std::to_string(f.prod_operation) + "/approve", "{}", "application/json",
                            kProdApproverToken);
  CHECK_MESSAGE(approved.status == 200, approved.body);
  CHECK(f.stateOf(f.prod_operation) == model::OperationState::kApproved);

  // A whole rollout at once goes through the plan's namespace too.
  refusedScoped(
      f.h.post("/v1/plans/web-staging/deployments/deployment-1/approve", "{}", "application/json", kProdApproverToken),
      "plan 'web-staging' is in namespace 'staging'");
  // An unscoped approver approves anywhere, as before.
  CHECK(f.h.post(approve, "{}", "application/json", kApproverToken).status == 200);
}

TEST_CASE("api: a namespace-scoped operator changes only plans of its namespace, and a refusal writes nothing") {
  ScopedFleet f;
  const Json before = f.h.everything();
  SUBCASE("a plan created or moved into another namespace") {
    refusedScoped(f.h.post("/v1/plans", mrdsPlanIn("api-prod", "prod"), "application/yaml", kStagingOperatorToken),
                  "token 'sam' acts only in namespace staging; plan 'api-prod' is in namespace 'prod'");
    httplib::Client client = f.h.client(kStagingOperatorToken);
    refusedScoped(toReply(client.Put("/v1/plans/web-staging", mrdsPlanIn("web-staging", "prod"), "application/yaml")),
                  "plan 'web-staging' is in namespace 'prod'");
    refusedScoped(toReply(client.Put("/v1/plans/web-prod", mrdsPlanIn("web-prod", "staging"), "application/yaml")),
                  "plan 'web-prod' is in namespace 'prod'");
  }
  SUBCASE("the verbs of a plan, its deployments, its instances and its operations") {
    refusedScoped(
        f.h.post("/v1/plans/web-prod/scale", R"({"instances": 3})", "application/json", kStagingOperatorToken),
        "plan 'web-prod' is in namespace 'prod'");
    refusedScoped(
        f.h.post("/v1/plans/web-prod/deployments/deployment-1/pause", "{}", "application/json", kStagingOperatorToken),
        "namespace 'prod'");
    refusedScoped(f.h.post("/v1/instances/" + f.prod_instance + "/operations", R"({"type": "RESTART"})",
                           "application/json", kStagingOperatorToken),
                  "plan 'web-prod' is in namespace 'prod'");
    refusedScoped(f.h.post("/v1/operations/" + std::to_string(f.prod_operation) + "/cancel", "{}", "application/json",
                           kStagingOperatorToken),
                  "namespace 'prod'");
    refusedScoped(f.h.del("/v1/plans/web-prod", kStagingOperatorToken), "this needs the admin role");
  }
  CHECK(f.h.everything() == before);

  // In its own namespace it does what any operator does.
  Reply created =
      f.h.post("/v1/plans", mrdsPlanIn("api-staging", "staging"), "application/yaml", kStagingOperatorToken);
  CHECK_MESSAGE(created.status == 201, created.body);
  Reply cancelled = f.h.post("/v1/operations/" + std::to_string(f.staging_operation) + "/cancel", "{}",
                             "application/json", kStagingOperatorToken);
  CHECK_MESSAGE(cancelled.status == 200, cancelled.body);
}

TEST_CASE("api: a namespace-scoped token reads everything but is refused the fleet's routes and records") {
  ScopedFleet f;
  for (const char* path : {"/v1/plans", "/v1/nodes", "/v1/operations", "/v1/plans/web-prod"}) {
    CAPTURE(path);
    CHECK(f.h.get(path, kStagingOperatorToken).status == 200);
  }
  const Json before = f.h.everything();
  refusedScoped(f.h.post("/v1/nodes/kind-worker/cordon", "{}", "application/json", kStagingOperatorToken),
                "token 'sam' acts only in namespace staging; POST /v1/nodes/{name}/cordon acts on the whole fleet and "
                "needs a token without namespaces");
  refusedScoped(f.h.post("/v1/capabilities", R"({"name":"x","type":"GPU"})", "application/json", kStagingOperatorToken),
                "acts on the whole fleet");
  refusedScoped(
      f.h.post("/v1/manifests?source=fleet.yaml", kInventoryManifest, "application/yaml", kStagingOperatorToken),
      "fleet.yaml:2:5: token 'sam' acts only in namespace staging; capability 'nvidia-v100' belongs to the whole "
      "fleet");
  std::string two_plans = "plans:\n";
  for (const auto& [plan, ns] : {std::pair{"one", "staging"}, std::pair{"two", "prod"}}) {
    std::string text = mrdsPlanIn(plan, ns), indented = "  - ";
    for (char c : text) indented += c == '\n' ? std::string("\n    ") : std::string(1, c);
    two_plans += indented + "\n";
  }
  refusedScoped(f.h.post("/v1/manifests?source=plans.yaml", two_plans, "application/yaml", kStagingOperatorToken),
                "plans.yaml:");
  refusedScoped(f.h.post("/v1/manifests?source=plans.yaml", two_plans, "application/yaml", kStagingOperatorToken),
                "plan 'two' is in namespace 'prod'");
  CHECK(f.h.everything() == before);
}

TEST_CASE("api: tokens minted with namespaces act only there, and whoami and the token list say so") {
  ApiHarness h;
  Reply created = h.post("/v1/tokens", R"({"name": "ci", "role": "operator", "namespaces": ["dev", "staging"]})");
  REQUIRE_MESSAGE(created.status == 201, created.body);
  CHECK(created.json()["namespaces"] == Json{"dev", "staging"});
  const std::string secret = created.json()["token"];
  Reply whoami = h.get("/v1/whoami", secret);
  CHECK(whoami.json()["namespaces"] == Json{"dev", "staging"});
  CHECK(h.get("/v1/whoami").json()["namespaces"] == Json::array());
  REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
  CHECK(h.post("/v1/plans", mrdsPlanIn("web", "dev"), "application/yaml", secret).status == 201);
  refusedScoped(h.post("/v1/plans", mrdsPlanIn("web2", "prod"), "application/yaml", secret),
                "token 'ci' acts only in namespaces dev, staging; plan 'web2' is in namespace 'prod'");

  Reply list = h.get("/v1/tokens");
  const Json tokens = list.json();  // a range-for over a temporary's member would dangle
  for (const Json& item : tokens["items"]) {
    if (item["name"] == "ci") CHECK(item["namespaces"] == Json{"dev", "staging"});
    if (item["name"] == kProdApproverName) CHECK(item["namespaces"] == Json{"prod"});
    if (item["name"] == kAdminName) CHECK(item["namespaces"] == Json::array());
  }
  const Json event = h.get("/v1/events?kind=token.created").json()["items"][0];
  CHECK(event["data"]["namespaces"] == Json{"dev", "staging"});

  SUBCASE("bad namespaces are refused naming the field, and nothing is minted") {
    for (const char* body : {R"({"name": "v", "role": "viewer", "namespaces": ["prod"]})",
                             R"({"name": "v", "role": "operator", "namespaces": "prod"})",
                             R"({"name": "v", "role": "operator", "namespaces": ["Prod"]})",
                             R"({"name": "v", "role": "operator", "namespaces": [1]})",
                             R"({"name": "v", "role": "operator", "namespaces": ["a", "a"]})"}) {
      CAPTURE(body);
      Reply reply = h.post("/v1/tokens", body);
      CHECK(reply.status == 400);
      CHECK((reply.detailNames("namespaces") || reply.detailNames("namespaces[0]")));
    }
    CHECK(h.get("/v1/events?kind=token.created").json()["items"].size() == 1);
  }
}
