// The four-eyes rule on rollouts (docs/architecture.md#human-approval): the operations the
// controller asks for to roll a deployment out count as requested by whoever added the
// deployment, so with auth.approver_must_differ that person cannot approve them and someone
// else must. Real parts: the engine over a SQLite ledger and the HTTP API on the same ledger.

#include "tests/api/api_test_support.h"
#include "tests/engine/engine_test_support.h"

namespace tide {
namespace {

using testing::engineDeployment;
using testing::EngineFixture;
using testing::enginePlan;
using testing::kEngineNodes;
using testing::Reply;

using testing::kAdminName;
using testing::kApproverName;

// The HTTP API over the engine fixture's ledger, with the test tokens.
struct Api {
  std::unique_ptr<api::ApiServer> server;

  explicit Api(EngineFixture& f, api::ServerOptions options = testing::testServerOptions()) {
    server = std::make_unique<api::ApiServer>(std::move(options), *f.ledger, f.clock);
    REQUIRE(server->start().isOk());
  }
  ~Api() { server->stop(); }

  // Waits as long as ApiHarness's client (a liveness bound, not httplib's 5 s default, which
  // a manifest's checks can take under ThreadSanitizer on a loaded machine).
  httplib::Client client(const std::string& token) const {
    httplib::Client client("127.0.0.1", server->port());
    client.set_bearer_token_auth(token);
    client.set_read_timeout(70, 0);
    return client;
  }
  Reply post(const std::string& path, const std::string& body, const std::string& content_type,
             const std::string& token) const {
    return testing::toReply(client(token).Post(path, body, content_type));
  }
  Reply get(const std::string& path) const { return testing::toReply(client(testing::kAdminToken).Get(path)); }
};

std::string approvePath(const model::Operation& op) { return "/v1/operations/" + std::to_string(op.meta.id) + "/approve"; }

}  // namespace

TEST_CASE("four eyes: whoever added a deployment cannot approve its rollout, someone else can") {
  EngineFixture f;  // no policies: every operation waits for a person
  f.apply(kEngineNodes);
  f.apply(enginePlan());
  Api api(f);

  // The approver adds the deployment over HTTP (an approver may do what an operator may).
  Reply added = api.post("/v1/manifests", engineDeployment("d1", 2, "1.0"), "application/yaml", testing::kApproverToken);
  REQUIRE_MESSAGE(added.status == 201, added.body);
  Reply shown = api.get("/v1/plans/web/deployments/d1");
  REQUIRE(shown.status == 200);
  CHECK(shown.json()["added_by"] == kApproverName);

  f.engine->settle();
  auto waiting = f.operations("PENDING_APPROVAL");
  REQUIRE(waiting.size() == 2);
  for (const auto& op : waiting) {
    CHECK(op.type == "CREATE");
    CHECK(op.intent == "d1");
    CHECK(op.requested_by == kApproverName);  // not "controller": the person who added it
  }

  Reply own = api.post(approvePath(waiting[0]), "", "", testing::kApproverToken);
  CHECK(own.status == 403);
  CHECK(own.json()["error"].value("message", "").find("approver_must_differ") != std::string::npos);
  auto unchanged = f.ledger->getOperation(waiting[0].meta.id);
  REQUIRE(unchanged.isOk());
  CHECK(unchanged->state == "PENDING_APPROVAL");

  Reply other = api.post(approvePath(waiting[0]), "", "", testing::kAdminToken);
  REQUIRE_MESSAGE(other.status == 200, other.body);
  CHECK(other.json()["approved_by"] == kAdminName);
}

TEST_CASE("four eyes: with approver_must_differ off the author approves the rollout") {
  EngineFixture f;
  f.apply(kEngineNodes);
  f.apply(enginePlan());
  api::ServerOptions options = testing::testServerOptions();
  options.approver_must_differ = false;
  Api api(f, options);
  REQUIRE(api.post("/v1/manifests", engineDeployment("d1", 1, "1.0"), "application/yaml", testing::kApproverToken)
              .status == 201);
  f.engine->settle();
  auto waiting = f.operations("PENDING_APPROVAL");
  REQUIRE(waiting.size() == 1);
  CHECK(waiting[0].requested_by == kApproverName);
  CHECK(api.post(approvePath(waiting[0]), "", "", testing::kApproverToken).status == 200);
}

}  // namespace tide
