// Human approval end to end (docs/architecture.md#human-approval). The four-eyes rule on
// rollouts: the operations the controller asks for to roll a deployment out count as
// requested by whoever added the deployment, so with auth.approver_must_differ that person
// cannot approve them and someone else must. N-of-M: a policy's manual{approvals, role,
// distinct_from} or a plan's approval.min_approvals asks for several people; a soft deny
// waits for an override with a reason, a hard deny for nobody; a new policy version
// re-evaluates what waits and keeps the approvals given. Real parts: the engine over a
// SQLite ledger and the HTTP API on the same ledger.

#include <fstream>
#include <set>

#include "tests/api/api_test_support.h"
#include "tests/engine/engine_test_support.h"
#include "tests/lua/lua_test_util.h"
#include "tests/support/raw_sql.h"

namespace tide {
namespace {

using testing::engineDeployment;
using testing::EngineFixture;
using testing::enginePlan;
using testing::kEngineNodes;
using testing::Reply;
using Json = nlohmann::json;

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
std::string rejectPath(const model::Operation& op) { return "/v1/operations/" + std::to_string(op.meta.id) + "/reject"; }

// Two more approvers: bob, and "test", who adds the deployments of EngineFixture::apply()
// and so requests their operations. The config's four-eyes rule is off, so that what keeps
// the requester out is the policy's distinct_from.
const std::string kBobToken = "bob-secret";
const std::string kRequesterToken = "requester-secret";

api::ServerOptions approverOptions() {
  api::ServerOptions options = testing::testServerOptions();
  options.config_tokens.push_back({"bob", kBobToken, "approver", {}});
  options.config_tokens.push_back({"test", kRequesterToken, "approver", {}});
  options.approver_must_differ = false;
  return options;
}

// Writes policies/<file> (a new version when it exists) and publishes the script set.
void writePolicy(EngineFixture& f, const std::string& file, const std::string& text) {
  std::ofstream(f.dir.path() / "policies" / file, std::ios::trunc) << text;
  auto summary = f.scripts->reloadAll();
  REQUIRE_MESSAGE(summary.failed == 0, (summary.errors.empty() ? "" : summary.errors.front()));
}

// A policy named `name` whose decide returns `verdict` (Lua) for every operation.
std::string policy(const std::string& name, const std::string& level, const std::string& verdict) {
  return lua::testing::simplePolicy(name, verdict, level);
}

// The engine's nodes and plan, and one policy.
void withPolicy(EngineFixture& f, const std::string& file, const std::string& text) {
  f.apply(kEngineNodes);
  f.apply(enginePlan());
  writePolicy(f, file, text);
}

const char* kTwoApprovers =
    R"(manual{ approvals = 2, role = "approver", distinct_from = {"requester"}, reason = "two people approve" })";

// The one operation of a one-instance deployment d1, waiting for people.
model::Operation waitingOperation(EngineFixture& f) {
  f.apply(engineDeployment("d1", 1, "1.0"));
  f.engine->settle();
  auto waiting = f.operations("PENDING_APPROVAL");
  REQUIRE(waiting.size() == 1);
  return waiting[0];
}

model::Operation reread(EngineFixture& f, const model::Operation& op) {
  auto now = f.ledger->operations().getOperation(op.meta.id);
  REQUIRE(now.isOk());
  return now.value();
}

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
    CHECK(op.type == model::OperationType::kCreate);
    CHECK(op.intent == "d1");
    CHECK(op.requested_by == kApproverName);  // not "controller": the person who added it
  }

  Reply own = api.post(approvePath(waiting[0]), "", "", testing::kApproverToken);
  CHECK(own.status == 403);
  CHECK(own.json()["error"].value("message", "").find("approver_must_differ") != std::string::npos);
  auto unchanged = f.ledger->operations().getOperation(waiting[0].meta.id);
  REQUIRE(unchanged.isOk());
  CHECK(unchanged->state == model::OperationState::kPendingApproval);

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

TEST_CASE("approvals: an operation that asks for two approvals needs two distinct approvers, not its requester") {
  EngineFixture f;
  withPolicy(f, "two.lua", policy("two-approvers", "hard", kTwoApprovers));
  Api api(f, approverOptions());
  const model::Operation op = waitingOperation(f);
  CHECK(op.requested_by == "test");
  const Json& asked = op.decision["approvals"];
  CHECK(asked["required"] == 2);
  CHECK(asked["role"] == "approver");
  CHECK(asked["distinct_from"] == Json::array({"requester"}));

  Reply own = api.post(approvePath(op), "", "", kRequesterToken);
  CHECK(own.status == 403);
  CHECK(own.body.find("distinct from the requester") != std::string::npos);
  CHECK(api.post(approvePath(op), "", "", testing::kViewerToken).status == 403);

  Reply first = api.post(approvePath(op), R"({"reason": "looks right"})", "application/json", testing::kApproverToken);
  REQUIRE_MESSAGE(first.status == 200, first.body);
  CHECK(first.json()["state"] == "PENDING_APPROVAL");
  CHECK(first.json()["approvals"]["still_needed"] == 1);
  CHECK(first.json()["approvals"]["summary"] == "1 of 2 approvals (alice)");

  Reply again = api.post(approvePath(op), "", "", testing::kApproverToken);
  CHECK(again.status == 409);
  CHECK(again.body.find("alice has already approved") != std::string::npos);

  Reply second = api.post(approvePath(op), "", "", kBobToken);
  REQUIRE_MESSAGE(second.status == 200, second.body);
  CHECK(second.json()["state"] == "APPROVED");
  CHECK(second.json()["approved_by"] == "alice,bob");
  CHECK(second.json()["approvals"]["still_needed"] == 0);

  auto recorded = f.ledger->operations().listApprovals(op.meta.id);
  REQUIRE(recorded.isOk());
  REQUIRE(recorded->size() == 2);
  CHECK((*recorded)[0].actor == "alice");
  CHECK((*recorded)[0].reason == "looks right");
  CHECK((*recorded)[1].actor == "bob");
  Reply events = api.get("/v1/events?kind=operation.approval");
  REQUIRE(events.status == 200);
  REQUIRE(events.json()["items"].size() == 2);
  CHECK(events.json()["items"][0]["actor"] == "alice");
  CHECK(events.json()["items"][0]["data"]["still_needed"] == 1);
  CHECK(events.json()["items"][1]["data"]["approvals"] == "2 of 2 approvals (alice, bob)");
}

TEST_CASE("approvals: one rejection rejects an operation that already has an approval") {
  EngineFixture f;
  withPolicy(f, "two.lua", policy("two-approvers", "hard", kTwoApprovers));
  Api api(f, approverOptions());
  const model::Operation op = waitingOperation(f);
  REQUIRE(api.post(approvePath(op), "", "", testing::kApproverToken).status == 200);
  Reply rejected = api.post(rejectPath(op), "", "", kBobToken);
  REQUIRE_MESSAGE(rejected.status == 200, rejected.body);
  CHECK(rejected.json()["state"] == "REJECTED");
  CHECK(rejected.json()["approved_by"] == "bob");
}

TEST_CASE("approvals: a role requirement counts only tokens that hold the role or a higher one") {
  EngineFixture f;
  withPolicy(f, "admins.lua", policy("admins-only", "hard", R"(manual{ role = "admin" })"));
  Api api(f, approverOptions());
  const model::Operation op = waitingOperation(f);
  CHECK(op.decision["approvals"]["required"] == 1);
  Reply approver = api.post(approvePath(op), "", "", testing::kApproverToken);
  CHECK(approver.status == 403);
  CHECK(approver.body.find("admin role") != std::string::npos);
  Reply admin = api.post(approvePath(op), "", "", testing::kAdminToken);
  REQUIRE_MESSAGE(admin.status == 200, admin.body);
  CHECK(admin.json()["state"] == "APPROVED");
}

TEST_CASE("approvals: a plan's approval.min_approvals makes the default manual approval wait for two people") {
  EngineFixture f;  // no policies: the default asks for people
  f.apply(kEngineNodes);
  f.apply(enginePlan() + "    approval: {min_approvals: 2}\n");
  Api api(f, approverOptions());
  const model::Operation op = waitingOperation(f);
  CHECK(op.decision["approvals"]["required"] == 2);
  Reply first = api.post(approvePath(op), "", "", testing::kApproverToken);
  REQUIRE_MESSAGE(first.status == 200, first.body);
  CHECK(first.json()["state"] == "PENDING_APPROVAL");
  Reply second = api.post(approvePath(op), "", "", testing::kAdminToken);
  REQUIRE_MESSAGE(second.status == 200, second.body);
  CHECK(second.json()["state"] == "APPROVED");
}

TEST_CASE("approvals: a soft deny waits for an approver who overrides it with a reason") {
  EngineFixture f;
  withPolicy(f, "freeze.lua", policy("soft-freeze", "soft", R"(deny("the soft freeze is on"))"));
  Api api(f, approverOptions());
  const model::Operation op = waitingOperation(f);
  CHECK(op.decision["overridable"] == true);
  CHECK(op.decision["summary"].get<std::string>().find("soft-freeze") != std::string::npos);

  Reply plain = api.post(approvePath(op), "", "", testing::kApproverToken);
  CHECK(plain.status == 409);
  CHECK(plain.body.find("override") != std::string::npos);
  Reply reasonless = api.post(approvePath(op), R"({"override": true})", "application/json", testing::kApproverToken);
  CHECK(reasonless.status == 400);
  CHECK(reread(f, op).state == model::OperationState::kPendingApproval);

  Reply overridden = api.post(approvePath(op), R"({"override": true, "reason": "hotfix for INC-42"})",
                              "application/json", testing::kApproverToken);
  REQUIRE_MESSAGE(overridden.status == 200, overridden.body);
  CHECK(overridden.json()["state"] == "APPROVED");
  CHECK(overridden.json()["message"] == "hotfix for INC-42");
  const Json given = overridden.json()["decision"]["approvals"]["given"];
  REQUIRE(given.size() == 1);
  CHECK(given[0]["override"] == true);
  CHECK(given[0]["reason"] == "hotfix for INC-42");
  Reply events = api.get("/v1/events?kind=operation.approval");
  REQUIRE(events.json()["items"].size() == 1);
  CHECK(events.json()["items"][0]["data"]["override"] == true);
  CHECK(events.json()["items"][0]["data"]["reason"] == "hotfix for INC-42");
}

TEST_CASE("approvals: nobody can override a hard deny, and the refusal names the policy") {
  EngineFixture f;
  withPolicy(f, "never.lua", policy("never-in-prod", "hard", R"(deny("not in prod"))"));
  Api api(f, approverOptions());
  f.apply(engineDeployment("d1", 1, "1.0"));
  f.engine->settle();
  auto rejected = f.operations("REJECTED");
  REQUIRE(rejected.size() == 1);
  CHECK(rejected[0].decision["overridable"] == false);

  Reply overridden = api.post(approvePath(rejected[0]), R"({"override": true, "reason": "please"})",
                              "application/json", testing::kAdminToken);
  CHECK(overridden.status == 403);
  CHECK(overridden.body.find("never-in-prod") != std::string::npos);
  CHECK(overridden.body.find("hard deny cannot be overridden") != std::string::npos);
  Reply plain = api.post(approvePath(rejected[0]), "", "", testing::kAdminToken);
  CHECK(plain.status == 409);
  CHECK(plain.body.find("never-in-prod") != std::string::npos);
  CHECK(reread(f, rejected[0]).state == model::OperationState::kRejected);
}

TEST_CASE("approvals: a new policy version re-evaluates what waits, and approvals already given still count") {
  EngineFixture f;
  withPolicy(f, "two.lua", policy("two-approvers", "hard", kTwoApprovers));
  Api api(f, approverOptions());
  const model::Operation op = waitingOperation(f);
  REQUIRE(api.post(approvePath(op), "", "", testing::kApproverToken).status == 200);
  REQUIRE(reread(f, op).state == model::OperationState::kPendingApproval);

  // The fix asks for one approval: alice's, given before it, is enough.
  writePolicy(f, "two.lua", policy("two-approvers", "hard", R"(manual("one person approves"))"));
  f.engine->settle();
  const model::Operation now = reread(f, op);
  CHECK(now.state != model::OperationState::kPendingApproval);
  CHECK(now.approved_by == "alice");
  CHECK(now.decision["approvals"]["required"] == 1);
  Reply events = api.get("/v1/events?kind=operation.reevaluated");
  REQUIRE(events.json()["items"].size() >= 1);
}

TEST_CASE("approvals: a fixed policy approves, or a new deny rejects, an operation that waits") {
  for (const std::string verdict : {"approve()", R"(deny("not today"))"}) {
    CAPTURE(verdict);
    EngineFixture f;
    withPolicy(f, "gate.lua", policy("gate", "hard", R"(manual("a person looks first"))"));
    const model::Operation op = waitingOperation(f);
    writePolicy(f, "gate.lua", policy("gate", "hard", verdict));
    f.engine->settle();
    const model::Operation now = reread(f, op);
    if (verdict == "approve()") {
      CHECK(now.state != model::OperationState::kPendingApproval);
      CHECK(now.state != model::OperationState::kRejected);
      CHECK(now.approved_by == "policy:gate");
    } else {
      CHECK(now.state == model::OperationState::kRejected);
      CHECK(now.decision["summary"] == "denied by gate: not today");
    }
  }
}

TEST_CASE("approvals: re-evaluation after a policy change goes a chunk a pass, every waiting operation once") {
  engine::EngineOptions options = EngineFixture::fastOptions();
  options.approval.max_per_pass = 1;
  EngineFixture f({}, options);
  withPolicy(f, "gate.lua", policy("gate", "hard", R"(manual("a person looks first"))"));
  f.apply(engineDeployment("d1", 4, "1.0"));
  f.engine->settle();
  REQUIRE(f.operations("PENDING_APPROVAL").size() == 4);
  auto reevaluated = [&] { return testing::events(f, "operation.reevaluated"); };
  REQUIRE(reevaluated().empty());

  // A new version that still asks for a person: one operation re-evaluated per pass, each once.
  writePolicy(f, "gate.lua", policy("gate", "hard", R"(manual("a person still looks"))"));
  std::set<std::string> seen;
  for (size_t pass = 1; pass <= 4; ++pass) {
    f.engine->runPass();
    const auto events = reevaluated();
    REQUIRE(events.size() == pass);
    seen.insert(events.back().subject);
  }
  CHECK(seen.size() == 4);
  for (int pass = 0; pass < 3; ++pass) f.engine->runPass();
  CHECK(reevaluated().size() == 4);  // none twice for one version
  uint64_t version = 0;
  for (const auto& op : f.operations("PENDING_APPROVAL")) {
    CHECK(op.decision["summary"].get<std::string>().find("a person still looks") != std::string::npos);
    if (version == 0) version = op.decision["script_set_version"].get<uint64_t>();
    CHECK(op.decision["script_set_version"] == version);
  }

  // settle() carries on through the chunks: the next version reaches all four.
  writePolicy(f, "gate.lua", policy("gate", "hard", R"(manual("a third look"))"));
  f.engine->settle();
  CHECK(reevaluated().size() == 8);
  for (const auto& op : f.operations("PENDING_APPROVAL")) {
    CHECK(op.decision["summary"].get<std::string>().find("a third look") != std::string::npos);
  }
}

// The decision records are the audit trail of why an operation may run: when they cannot be
// written, the stage fails closed (the operation stays undecided, an event says why) and
// decides it once they can.
TEST_CASE("approvals: an operation whose decision records cannot be written stays undecided, and says so") {
  EngineFixture f;
  withPolicy(f, "allow.lua", policy("allow", "hard", "approve(\"fine\")"));
  testing::execRawSql(f.dir.file("tide.db"),
                      "CREATE TRIGGER no_decisions BEFORE INSERT ON decisions BEGIN SELECT RAISE(ABORT, 'disk full'); END");
  f.apply(engineDeployment("d1", 1, "1.0"));
  f.engine->settle();

  auto pending = f.operations("PENDING");
  REQUIRE(pending.size() == 1);
  CHECK(f.operations("APPROVED").empty());
  CHECK(f.operations("SUCCEEDED").empty());
  auto decisions = f.ledger->operations().listDecisions(pending[0].meta.id);
  REQUIRE(decisions.isOk());
  CHECK(decisions->empty());
  auto unrecorded = f.ledger->audit().listEvents({100, 0, {{"kind", "operation.decision_unrecorded"}}});
  REQUIRE(unrecorded.isOk());
  REQUIRE_FALSE(unrecorded->items.empty());
  CHECK(unrecorded->items.front().subject == "operation/" + std::to_string(pending[0].meta.id));
  CHECK(unrecorded->items.front().data.value("error", "").find("disk full") != std::string::npos);

  testing::execRawSql(f.dir.file("tide.db"), "DROP TRIGGER no_decisions");
  f.engine->settle();
  auto recorded = f.ledger->operations().listDecisions(pending[0].meta.id);
  REQUIRE(recorded.isOk());
  CHECK(recorded->size() == 1);
  CHECK(reread(f, pending[0]).state != model::OperationState::kPending);
}

}  // namespace tide

namespace tide {

TEST_CASE("approvals: a rollout approved as a whole has each operation approved as it comes, one record each") {
  EngineFixture f;  // no policies: every operation waits for a person
  f.apply(kEngineNodes);
  f.apply(enginePlan());
  Api api(f);

  // Approved before its rollout asked for anything: each operation it asks for is approved
  // by alice as it comes to wait, and the rollout runs to its end without anyone else.
  f.apply(engineDeployment("d1", 3, "1.0"));  // added by "test", who requests its operations
  Reply approved = api.post("/v1/plans/web/deployments/d1/approve", R"({"reason": "ship it"})", "application/json",
                            testing::kApproverToken);
  REQUIRE_MESSAGE(approved.status == 200, approved.body);
  CHECK(approved.json()["operations"].empty());
  f.engine->settle();
  CHECK(f.deployment("d1").state == model::DeploymentState::kCompleted);
  CHECK(f.operations("PENDING_APPROVAL").empty());
  const std::vector<model::Operation> first = f.operations();
  REQUIRE(first.size() == 3);
  for (const model::Operation& op : first) CHECK(op.approved_by == kApproverName);
  CHECK(f.eventCount("operation.approval") == static_cast<int>(first.size()));

  // The next deployment is a rollout of its own: its operations wait for people again.
  f.apply(engineDeployment("d2", 3, "2.0"));
  f.engine->settle();
  const size_t waiting = f.operations("PENDING_APPROVAL").size();
  CHECK(waiting > 0);
  CHECK(f.deployment("d2").state == model::DeploymentState::kInProgress);

  // Approved as a whole now: those waiting are approved at once, the later waves as they come.
  approved = api.post("/v1/plans/web/deployments/d2/approve", "", "", testing::kApproverToken);
  REQUIRE_MESSAGE(approved.status == 200, approved.body);
  CHECK(approved.json()["operations"].size() == waiting);
  f.engine->settle();
  CHECK(f.deployment("d2").state == model::DeploymentState::kCompleted);
  CHECK(f.operations("PENDING_APPROVAL").empty());
  size_t second = 0;
  for (const model::Operation& op : f.operations()) {
    if (op.intent != "d2") continue;
    ++second;
    CHECK(op.approved_by == kApproverName);
  }
  CHECK(second > waiting);  // some were asked for after the approval
  CHECK(f.eventCount("operation.approval") == static_cast<int>(first.size() + second));
}

TEST_CASE("approvals: a rollout's approval counts as one person's, so a policy asking for two still waits") {
  EngineFixture f;
  withPolicy(f, "two.lua", policy("two-approvers", "hard", kTwoApprovers));
  Api api(f, approverOptions());
  f.apply(engineDeployment("d1", 1, "1.0"));
  REQUIRE(api.post("/v1/plans/web/deployments/d1/approve", "", "", testing::kApproverToken).status == 200);
  f.engine->settle();
  auto waiting = f.operations("PENDING_APPROVAL");
  REQUIRE(waiting.size() == 1);
  CHECK(model::describeApprovals(waiting[0].decision, waiting[0].requested_by) == "1 of 2 approvals (alice)");
  // A second person's approval of the rollout completes it.
  REQUIRE(api.post("/v1/plans/web/deployments/d1/approve", "", "", kBobToken).status == 200);
  CHECK(reread(f, waiting[0]).state == model::OperationState::kApproved);
}

}  // namespace tide
