// Human approval (POST /v1/operations/{id}/approve|reject), cancelling
// (POST /v1/operations/{id}/cancel), user operations (POST /v1/instances/{name}/operations)
// and instance logs over HTTP. The approval stage
// is simulated by moving operations to PENDING_APPROVAL through the ledger.

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/model/approvals.h"
#include "tests/api/api_test_support.h"
#include "tests/support/vocabulary.h"

using namespace tide;
using namespace tide::testing;

namespace {

// Inventory, the MRDS plan and its first deployment, and one meta instance of it.
struct Fixture {
  ApiHarness h;
  std::string instance;

  explicit Fixture(api::ServerOptions options = testServerOptions()) : h(std::move(options)) {
    REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
    REQUIRE(h.post("/v1/plans", kMrdsPlan, "application/yaml").status == 201);
    REQUIRE(h.post("/v1/plans/" + kMrdsPlanName + "/deployments", kMrdsDeployment, "application/yaml").status == 201);
    instance = newInstance();
  }

  std::string newInstance() {
    auto created = h.ledger->instances().createMetaInstance(kMrdsPlanName, "deployment-1", "test");
    REQUIRE(created.isOk());
    return created->name;
  }

  // An operation as the controller makes it (priority 0), left PENDING.
  model::Operation pending(const std::string& meta_instance, const std::string& type = "CREATE",
                           const std::string& requested_by = "controller") {
    model::Operation operation;
    operation.meta_instance = meta_instance;
    operation.type = testing::parsed<model::OperationType>(type);
    operation.intent = "deployment-1";
    operation.requested_by = requested_by;
    auto created = h.ledger->operations().createOperation(operation, "controller");
    REQUIRE_MESSAGE(created.isOk(), created.status().toString());
    return *created;
  }

  // The same, moved on to PENDING_APPROVAL as the approval stage leaves it for a person.
  model::Operation waiting(const std::string& meta_instance, const std::string& requested_by = "controller") {
    return waitingOperation(*h.ledger, meta_instance, requested_by);
  }

  model::Operation operation(int64_t id) {
    auto got = h.ledger->operations().getOperation(id);
    REQUIRE(got.isOk());
    return *got;
  }

  // Runs `meta_instance` as the control loop would: its CREATE placed, started, SUCCEEDED.
  void makeRunning(const std::string& meta_instance) {
    model::Operation create = pending(meta_instance);
    model::RuntimeInstance runtime;
    runtime.meta_instance = meta_instance;
    runtime.node = "kind-worker";
    runtime.reservation = {1, 1};
    auto reserved = h.ledger->instances().reserveForOperation(create.meta.id, runtime, "approval");
    REQUIRE_MESSAGE(reserved.isOk(), reserved.status().toString());
    for (model::RuntimeState state : {model::RuntimeState::kStarting, model::RuntimeState::kRunning}) {
      REQUIRE(h.ledger->instances().setRuntimeInstanceState(reserved->meta.id, state, std::nullopt, "executor").isOk());
    }
    for (model::OperationState state :
         {model::OperationState::kApproved, model::OperationState::kRunning, model::OperationState::kSucceeded}) {
      REQUIRE(h.ledger->operations().setOperationState(create.meta.id, state, std::nullopt, "executor").isOk());
    }
  }
};

std::string operationPath(const model::Operation& operation, const std::string& action = "") {
  return "/v1/operations/" + std::to_string(operation.meta.id) + (action.empty() ? "" : "/" + action);
}

std::string errorMessage(const Reply& reply) { return reply.json()["error"].value("message", ""); }

// `token` may neither approve nor reject `op`: 403, the approval's refusal naming each of
// `reasons`, and nothing written.
void refusedToDecide(Fixture& f, const model::Operation& op, const std::string& token,
                     const std::vector<std::string>& reasons) {
  Json before = f.h.everything();
  Reply own = f.h.post(operationPath(op, "approve"), "", "", token);
  CHECK(own.status == 403);
  for (const std::string& reason : reasons) CHECK_MESSAGE(contains(errorMessage(own), reason), errorMessage(own));
  CHECK(f.h.post(operationPath(op, "reject"), "", "", token).status == 403);
  CHECK(f.h.everything() == before);
}

// A log reader that remembers what it was asked and returns the whole log whatever the
// tail: the server keeps only the tail.
// One log file, "fake.1", of 100 lines; a cursor into it reads on from there.
struct FakeLogs {
  std::mutex mu;
  std::vector<std::pair<std::string, size_t>> calls;
  std::vector<std::string> applications;  // each call's

  Result<drivers::LogSlice> read(const std::string& meta_instance, const std::string& application,
                                 const std::optional<drivers::LogCursor>& from, size_t max_bytes) {
    std::lock_guard<std::mutex> lock(mu);
    calls.emplace_back(meta_instance, max_bytes);
    applications.push_back(application);
    std::string log;
    for (int line = 1; line <= 100; ++line) log += meta_instance + " log line " + std::to_string(line) + "\n";
    const auto size = static_cast<int64_t>(log.size());
    if (!from) return drivers::LogSlice{.text = log, .end = drivers::LogCursor{"fake.1", size}};
    if (from->file != "fake.1" || from->offset > size) {
      return drivers::LogSlice{.text = log, .end = drivers::LogCursor{"fake.1", size}, .continues = false};
    }
    return drivers::LogSlice{.text = log.substr(static_cast<size_t>(from->offset)),
                             .end = drivers::LogCursor{"fake.1", size}};
  }
};

// The test server's options, its logs read from `logs`.
api::ServerOptions readingLogsFrom(const std::shared_ptr<FakeLogs>& logs) {
  api::ServerOptions options = testServerOptions();
  options.read_logs = [logs](const std::string& meta_instance, const std::string& application,
                             const std::optional<drivers::LogCursor>& from,
                             size_t max_bytes) { return logs->read(meta_instance, application, from, max_bytes); };
  return options;
}

}  // namespace

TEST_CASE("api: an approver approves an operation waiting for approval") {
  Fixture f;
  model::Operation op = f.waiting(f.instance);
  REQUIRE(f.h.ledger
              ->operations().recordDecisions(
                  {{0, op.meta.id, "prod-guard", "abc123", "manual", Json::array({"deletes in prod"}), 40, "", ""}})
              .isOk());

  Reply got = f.h.get(operationPath(op), kViewerToken);
  REQUIRE(got.status == 200);
  REQUIRE(got.json()["decisions"].size() == 1);
  CHECK(got.json()["decisions"][0]["policy"] == "prod-guard");
  CHECK(got.json()["decisions"][0]["verdict"] == "manual");

  Reply approved = f.h.post(operationPath(op, "approve"), R"({"reason": "checked the change window"})",
                            "application/json", kApproverToken);
  REQUIRE_MESSAGE(approved.status == 200, approved.body);
  Json body = approved.json();
  CHECK(body["state"] == "APPROVED");
  CHECK(body["approved_by"] == kApproverName);
  CHECK(body["message"] == "checked the change window");
  CHECK(body["decisions"].size() == 1);
  CHECK(approved.header("ETag") == std::to_string(body["metadata"]["generation"].get<int64_t>()));

  Json events = f.h.get("/v1/events?subject=operation/" + std::to_string(op.meta.id)).json()["items"];
  REQUIRE(!events.empty());
  CHECK(events.back()["actor"] == kApproverName);
  CHECK(events.back()["data"]["approved_by"] == kApproverName);

  // Once decided, neither decision applies any more; the error names the state.
  Json before = f.h.everything();
  Reply again = f.h.post(operationPath(op, "approve"), "", "", kApproverToken);
  CHECK(again.status == 409);
  CHECK(contains(errorMessage(again), "is APPROVED"));
  CHECK(f.h.post(operationPath(op, "reject"), "", "", kApproverToken).status == 409);
  CHECK(f.h.everything() == before);
}

TEST_CASE("api: reject records the approver, and a default message without a reason") {
  Fixture f;
  model::Operation op = f.waiting(f.instance);
  Reply rejected = f.h.post(operationPath(op, "reject"), "", "", kApproverToken);
  REQUIRE_MESSAGE(rejected.status == 200, rejected.body);
  CHECK(rejected.json()["state"] == "REJECTED");
  CHECK(rejected.json()["approved_by"] == kApproverName);
  CHECK(rejected.json()["message"] == "rejected by " + kApproverName);
  CHECK(f.operation(op.meta.id).state == model::OperationState::kRejected);
}

TEST_CASE("api: approving and rejecting need the approver role") {
  Fixture f;
  model::Operation op = f.waiting(f.instance);
  Json before = f.h.everything();
  for (const std::string& token : {kViewerToken, kOperatorToken}) {
    CHECK(f.h.post(operationPath(op, "approve"), "", "", token).status == 403);
    CHECK(f.h.post(operationPath(op, "reject"), "", "", token).status == 403);
  }
  CHECK(f.h.post(operationPath(op, "approve"), "", "", "").status == 401);
  CHECK(f.h.everything() == before);
  CHECK(f.h.post(operationPath(op, "approve"), "", "", kAdminToken).status == 200);
}

TEST_CASE("api: the requester of an operation cannot approve it unless approver_must_differ is off") {
  SUBCASE("by default someone else must decide") {
    Fixture f;
    model::Operation op = f.waiting(f.instance, kApproverName);
    refusedToDecide(f, op, kApproverToken, {"requested by " + kApproverName, "approver_must_differ"});

    Reply other = f.h.post(operationPath(op, "approve"), "", "", kAdminToken);
    REQUIRE(other.status == 200);
    CHECK(other.json()["approved_by"] == kAdminName);
  }
  SUBCASE("auth.approver_must_differ: false lets the requester decide") {
    api::ServerOptions options = testServerOptions();
    options.approver_must_differ = false;
    Fixture f(options);
    model::Operation op = f.waiting(f.instance, kApproverName);
    Reply own = f.h.post(operationPath(op, "approve"), "", "", kApproverToken);
    REQUIRE(own.status == 200);
    CHECK(own.json()["approved_by"] == kApproverName);
  }
}

// The API has no approval rule of its own: each refusal is model::judgeApproval's, word for
// word, so a route that checked something else (or nothing) fails here.
TEST_CASE("api: approve and reject refuse exactly as model::judgeApproval rules") {
  auto ruling = [](const model::Operation& op, bool must_differ, const std::string& name, const std::string& role,
                   model::ApprovalAct act) {
    return model::judgeApproval({op.meta.id, op.requested_by, model::approvalStateOf(op.decision), 1, must_differ, {}},
                                model::Approver{name, role, act, false, "", {}});
  };
  SUBCASE("the requester, under auth.approver_must_differ") {
    Fixture f;
    model::Operation op = f.waiting(f.instance, kApproverName);
    Json before = f.h.everything();
    for (model::ApprovalAct act : {model::ApprovalAct::kApprove, model::ApprovalAct::kReject}) {
      const Status expected = ruling(op, true, kApproverName, "approver", act).allowed;
      REQUIRE(expected.code() == Code::kPermissionDenied);
      Reply own = f.h.post(operationPath(op, act == model::ApprovalAct::kApprove ? "approve" : "reject"), "", "",
                           kApproverToken);
      CHECK(own.status == 403);
      CHECK(errorMessage(own) == expected.message());
    }
    CHECK(f.h.everything() == before);
  }
  SUBCASE("the requester and a weaker role, under a policy's manual{role, distinct_from}") {
    api::ServerOptions options = testServerOptions();
    options.approver_must_differ = false;
    Fixture f(options);
    model::Operation op = f.waiting(f.instance, kApproverName);
    ledger::OperationUpdate update;
    update.decision = Json{{"outcome", "PENDING_APPROVAL"},
                           {"overridable", false},
                           {"approvals", model::approvalsJson({{1, "approver", {"requester"}}, false, {}})}};
    auto updated = f.h.ledger->operations().updateOperation(op.meta.id, update, "engine");
    REQUIRE(updated.isOk());
    op = *updated;
    Json before = f.h.everything();
    const Status expected = ruling(op, false, kApproverName, "approver", model::ApprovalAct::kApprove).allowed;
    REQUIRE(expected.code() == Code::kPermissionDenied);
    Reply own = f.h.post(operationPath(op, "approve"), "", "", kApproverToken);
    CHECK(own.status == 403);
    CHECK(errorMessage(own) == expected.message());
    CHECK(f.h.everything() == before);
    // The same rule lets someone else in, and completes the operation.
    CHECK(ruling(op, false, kAdminName, "admin", model::ApprovalAct::kApprove).complete);
    Reply other = f.h.post(operationPath(op, "approve"), "", "", kAdminToken);
    REQUIRE(other.status == 200);
    CHECK(other.json()["state"] == "APPROVED");
  }
}

TEST_CASE("api: approve checks its inputs and the generation the client read") {
  Fixture f;
  model::Operation op = f.waiting(f.instance);
  const std::string approve = operationPath(op, "approve");
  Json before = f.h.everything();

  CHECK(f.h.post("/v1/operations/999/approve", "", "", kApproverToken).status == 404);
  Reply bad_id = f.h.post("/v1/operations/seven/approve", "", "", kApproverToken);
  CHECK(bad_id.status == 400);
  CHECK(bad_id.detailNames("id"));
  Reply unknown_key = f.h.post(approve, R"({"because": "yes"})", "application/json", kApproverToken);
  CHECK(unknown_key.status == 400);
  CHECK(unknown_key.detailNames("because"));
  Reply bad_reason = f.h.post(approve, R"({"reason": 42})", "application/json", kApproverToken);
  CHECK(bad_reason.status == 400);
  CHECK(bad_reason.detailNames("reason"));
  Reply not_object = f.h.post(approve, R"(["approve"])", "application/json", kApproverToken);
  CHECK(not_object.status == 400);
  CHECK(not_object.detailNames("body"));
  Reply malformed = f.h.post(approve, R"({"reason": )", "application/json", kApproverToken);
  CHECK(malformed.status == 400);
  CHECK(malformed.detailNames("body"));
  Reply yaml = f.h.post(approve, "reason: yes", "application/yaml", kApproverToken);
  CHECK(yaml.status == 400);
  CHECK(yaml.detailNames("Content-Type"));
  Reply disagree = f.h.post(approve, R"({"generation": 2})", "application/json", kApproverToken, {{"If-Match", "3"}});
  CHECK(disagree.status == 400);
  CHECK(disagree.detailNames("generation"));

  const std::string current = std::to_string(op.meta.generation);
  CHECK(f.h.post(approve, R"({"generation": 99})", "application/json", kApproverToken).status == 409);
  CHECK(f.h.post(approve, "", "", kApproverToken, {{"If-Match", "99"}}).status == 409);
  CHECK(f.h.everything() == before);

  Reply approved = f.h.post(approve, R"({"generation": )" + current + "}", "application/json", kApproverToken,
                            {{"If-Match", current}});
  CHECK(approved.status == 200);
}

TEST_CASE("api: a user operation supersedes a pending controller operation and is refused behind an unfinished one") {
  Fixture f;
  model::Operation controller = f.pending(f.instance, "UPDATE");
  CHECK(controller.priority == 0);

  Reply created = f.h.post("/v1/instances/" + f.instance + "/operations", R"({"type": "RESTART", "reason": "stuck"})",
                           "application/json", kOperatorToken);
  REQUIRE_MESSAGE(created.status == 201, created.body);
  Json operation = created.json();
  CHECK(operation["type"] == "RESTART");
  CHECK(operation["intent"] == "user");
  CHECK(operation["priority"] == 10);
  CHECK(operation["requested_by"] == kOperatorName);
  CHECK(operation["state"] == "PENDING");
  CHECK(operation["meta_instance"] == f.instance);
  CHECK(f.operation(controller.meta.id).state == model::OperationState::kCancelled);

  // An equal-priority operation is unfinished now: the next one is refused.
  Json before = f.h.everything();
  Reply behind_user = f.h.post("/v1/instances/" + f.instance + "/operations", R"({"type": "STOP"})", "application/json",
                               kOperatorToken);
  CHECK(behind_user.status == 409);
  CHECK(f.h.everything() == before);

  // So is one behind an approved controller operation, whatever its priority.
  std::string other = f.newInstance();
  model::Operation approved = f.pending(other);
  REQUIRE(
      f.h.ledger->operations().setOperationState(approved.meta.id, model::OperationState::kApproved, std::nullopt, "engine").isOk());
  Reply behind_approved =
      f.h.post("/v1/instances/" + other + "/operations", R"({"type": "DELETE"})", "application/json", kOperatorToken);
  CHECK(behind_approved.status == 409);
  CHECK(f.operation(approved.meta.id).state == model::OperationState::kApproved);
}

TEST_CASE("api: a user operation names a known type on a live instance") {
  Fixture f;
  const std::string path = "/v1/instances/" + f.instance + "/operations";
  Json before = f.h.everything();

  Reply missing = f.h.post(path, "", "", kOperatorToken);
  CHECK(missing.status == 400);
  CHECK(missing.detailNames("type"));
  Reply unknown = f.h.post(path, R"({"type": "EXPLODE"})", "application/json", kOperatorToken);
  CHECK(unknown.status == 400);
  CHECK(unknown.detailNames("type"));
  CHECK(contains(errorMessage(unknown), "RELOCATE"));
  Reply lower_case = f.h.post(path, R"({"type": "stop"})", "application/json", kOperatorToken);
  CHECK(lower_case.status == 400);
  CHECK(lower_case.detailNames("type"));
  Reply number = f.h.post(path, R"({"type": 3})", "application/json", kOperatorToken);
  CHECK(number.status == 400);
  CHECK(number.detailNames("type"));
  Reply extra = f.h.post(path, R"({"type": "STOP", "priority": 99})", "application/json", kOperatorToken);
  CHECK(extra.status == 400);
  CHECK(extra.detailNames("priority"));
  CHECK(f.h.post(path, R"({"type": "STOP"})", "application/json", kViewerToken).status == 403);
  CHECK(
      f.h.post("/v1/instances/nginx-service-nope/operations", R"({"type": "STOP"})", "application/json", kOperatorToken)
          .status == 404);
  CHECK(f.h.everything() == before);

  REQUIRE(
      f.h.ledger->instances().setMetaInstanceState(f.instance, model::MetaState::kMarkedForDeletion, std::nullopt, "test").isOk());
  Reply marked = f.h.post(path, R"({"type": "RESTART"})", "application/json", kOperatorToken);
  CHECK(marked.status == 409);
  CHECK(contains(errorMessage(marked), "MARKED_FOR_DELETION"));
  REQUIRE(f.h.ledger->instances().setMetaInstanceState(f.instance, model::MetaState::kDeleted, std::nullopt, "test").isOk());
  CHECK(f.h.post(path, R"({"type": "RESTART"})", "application/json", kOperatorToken).status == 409);
}

TEST_CASE("api: an operator cancels an operation that has not started, and the instance takes a new one") {
  Fixture f;
  model::Operation op = f.waiting(f.instance);
  CHECK(f.h.post(operationPath(op, "cancel"), "", "", kViewerToken).status == 403);

  Reply cancelled =
      f.h.post(operationPath(op, "cancel"), R"({"reason": "wrong instance"})", "application/json", kOperatorToken);
  REQUIRE_MESSAGE(cancelled.status == 200, cancelled.body);
  CHECK(cancelled.json()["state"] == "CANCELLED");
  CHECK(cancelled.json()["message"] == "wrong instance");
  CHECK(cancelled.header("ETag") == std::to_string(cancelled.json()["metadata"]["generation"].get<int64_t>()));
  Json events = f.h.get("/v1/events?kind=operation.state&subject=operation/" + std::to_string(op.meta.id)).json();
  REQUIRE_FALSE(events["items"].empty());
  CHECK(events["items"].back()["actor"] == kOperatorName);
  CHECK(events["items"].back()["data"]["to"] == "CANCELLED");

  Reply again = f.h.post(operationPath(op, "cancel"), "", "", kOperatorToken);
  CHECK(again.status == 409);
  CHECK(contains(errorMessage(again), "is CANCELLED"));
  Reply next = f.h.post("/v1/instances/" + f.instance + "/operations", R"({"type": "RESTART"})", "application/json",
                        kOperatorToken);
  CHECK_MESSAGE(next.status == 201, next.body);

  // Without a reason the message names who cancelled.
  model::Operation other = f.pending(f.newInstance());
  Reply plain = f.h.post(operationPath(other, "cancel"), "", "", kOperatorToken);
  REQUIRE_MESSAGE(plain.status == 200, plain.body);
  CHECK(plain.json()["message"] == "cancelled by " + kOperatorName);
}

TEST_CASE("api: cancelling a running or finished operation is 409 naming its state, and writes nothing") {
  Fixture f;
  model::Operation op = f.pending(f.instance);
  REQUIRE(f.h.ledger->operations().setOperationState(op.meta.id, model::OperationState::kApproved, std::nullopt, "approval").isOk());
  REQUIRE(f.h.ledger->operations().setOperationState(op.meta.id, model::OperationState::kRunning, std::nullopt, "executor").isOk());
  Json before = f.h.everything();
  Reply running = f.h.post(operationPath(op, "cancel"), "", "", kOperatorToken);
  CHECK(running.status == 409);
  CHECK(contains(errorMessage(running), "operation " + std::to_string(op.meta.id) + " is RUNNING"));
  CHECK(f.h.everything() == before);

  REQUIRE(
      f.h.ledger->operations().setOperationState(op.meta.id, model::OperationState::kSucceeded, std::nullopt, "executor").isOk());
  Reply finished = f.h.post(operationPath(op, "cancel"), "", "", kOperatorToken);
  CHECK(finished.status == 409);
  CHECK(contains(errorMessage(finished), "is SUCCEEDED"));

  model::Operation waiting = f.waiting(f.newInstance());
  Reply stale = f.h.post(operationPath(waiting, "cancel"), R"({"generation": 1})", "application/json", kOperatorToken);
  CHECK(stale.status == 409);
  CHECK(f.operation(waiting.meta.id).state == model::OperationState::kPendingApproval);
  Reply odd = f.h.post(operationPath(waiting, "cancel"), R"({"why": "x"})", "application/json", kOperatorToken);
  CHECK(odd.status == 400);
  CHECK(odd.detailNames("why"));
  CHECK(f.h.post("/v1/operations/99999/cancel", "", "", kOperatorToken).status == 404);
}

TEST_CASE("api: a user operation that does not fit the instance's state is 409 naming both, and writes nothing") {
  Fixture f;
  f.makeRunning(f.instance);
  const std::string path = "/v1/instances/" + f.instance + "/operations";
  Json before = f.h.everything();
  Reply create = f.h.post(path, R"({"type": "CREATE"})", "application/json", kOperatorToken);
  CHECK(create.status == 409);
  CHECK(contains(errorMessage(create), "CREATE needs an ACTIVE instance that runs nowhere"));
  CHECK(contains(errorMessage(create), "ACTIVE and its runtime instance is RUNNING"));
  CHECK(f.h.everything() == before);

  const std::string idle = f.newInstance();
  Reply update =
      f.h.post("/v1/instances/" + idle + "/operations", R"({"type": "UPDATE"})", "application/json", kOperatorToken);
  CHECK(update.status == 409);
  CHECK(contains(errorMessage(update), "UPDATE needs an ACTIVE instance that runs;"));
  CHECK(contains(errorMessage(update), "the instance is ACTIVE and runs nowhere"));
  REQUIRE(f.h.ledger->instances().setMetaInstanceState(idle, model::MetaState::kStopped, std::nullopt, "test").isOk());
  before = f.h.everything();
  Reply stop =
      f.h.post("/v1/instances/" + idle + "/operations", R"({"type": "STOP"})", "application/json", kOperatorToken);
  CHECK(stop.status == 409);
  CHECK(contains(errorMessage(stop), "STOP needs an ACTIVE instance; the instance is STOPPED"));
  CHECK(f.h.everything() == before);
  CHECK(f.h.post("/v1/instances/" + idle + "/operations", R"({"type": "RESTART"})", "application/json", kOperatorToken)
            .status == 201);
}

TEST_CASE("api: instance logs come from the host's log reader") {
  auto logs = std::make_shared<FakeLogs>();
  Fixture f(readingLogsFrom(logs));
  const std::string path = "/v1/instances/" + f.instance + "/logs";

  Reply whole = f.h.get(path, kViewerToken);
  REQUIRE_MESSAGE(whole.status == 200, whole.body);
  CHECK(whole.header("Content-Type").starts_with("text/plain"));
  CHECK(whole.body.ends_with(f.instance + " log line 100\n"));
  Reply tail = f.h.get(path + "?tail_bytes=4", kViewerToken);
  REQUIRE(tail.status == 200);
  CHECK(tail.body == "100\n");
  {
    std::lock_guard<std::mutex> lock(logs->mu);
    REQUIRE(logs->calls.size() == 2);
    CHECK(logs->calls[0] == std::make_pair(f.instance, size_t{65536}));
    CHECK(logs->calls[1] == std::make_pair(f.instance, size_t{4}));
  }

  for (const char* bad : {"0", "-1", "lots", "8388609"}) {
    Reply refused = f.h.get(path + "?tail_bytes=" + bad, kViewerToken);
    CHECK_MESSAGE(refused.status == 400, bad);
    CHECK(refused.detailNames("tail_bytes"));
  }
  CHECK(f.h.get(path + "?tail_bytes=8388608", kViewerToken).status == 200);
  CHECK(f.h.get(path + "?lines=10", kViewerToken).status == 400);
  // One application's log, for a plan of several (docs/architecture.md#applications).
  REQUIRE(f.h.get(path + "?application=shipper", kViewerToken).status == 200);
  {
    std::lock_guard<std::mutex> lock(logs->mu);
    CHECK(logs->applications.front().empty());
    CHECK(logs->applications.back() == "shipper");
  }
  Reply bad_application = f.h.get(path + "?application=Ship%20Per", kViewerToken);
  CHECK(bad_application.status == 400);
  CHECK(bad_application.detailNames("application"));
  CHECK(f.h.get("/v1/instances/nginx-service-nope/logs", kViewerToken).status == 404);
  CHECK(f.h.get(path, "").status == 401);
}

TEST_CASE("api: instance logs from an offset: what follows it, and where the reply ends") {
  auto logs = std::make_shared<FakeLogs>();
  Fixture f(readingLogsFrom(logs));
  const std::string path = "/v1/instances/" + f.instance + "/logs";

  Reply whole = f.h.get(path, kViewerToken);
  REQUIRE_MESSAGE(whole.status == 200, whole.body);
  const std::string end = std::to_string(whole.body.size());
  CHECK(whole.header("Tide-Log-File") == "fake.1");
  CHECK(whole.header("Tide-Log-Offset") == end);
  CHECK(whole.header("Tide-Log-Continues").empty());  // only a read from an offset says

  const std::string last_line = f.instance + " log line 100\n";
  const std::string near_end = std::to_string(whole.body.size() - last_line.size());
  Reply rest = f.h.get(path + "?offset=" + near_end + "&file=fake.1", kViewerToken);
  REQUIRE_MESSAGE(rest.status == 200, rest.body);
  CHECK(rest.body == last_line);
  CHECK(rest.header("Tide-Log-Offset") == end);
  CHECK(rest.header("Tide-Log-Continues") == "true");
  Reply nothing_new = f.h.get(path + "?offset=" + end + "&file=fake.1", kViewerToken);
  CHECK(nothing_new.body.empty());
  CHECK(nothing_new.header("Tide-Log-Offset") == end);
  Reply beyond = f.h.get(path + "?offset=" + end + "0&file=fake.1", kViewerToken);
  CHECK(beyond.header("Tide-Log-Continues") == "false");
  CHECK(beyond.body == whole.body);
  {
    std::lock_guard<std::mutex> lock(logs->mu);
    CHECK(logs->calls.back() == std::make_pair(f.instance, size_t{8} << 20));  // an offset reads on, up to 8 MiB
  }

  for (const char* bad : {"-1", "lots", "12abc", "9007199254740992", "99999999999999999999999"}) {
    Reply refused = f.h.get(path + "?offset=" + bad, kViewerToken);
    CHECK_MESSAGE(refused.status == 400, bad);
    CHECK_MESSAGE(refused.detailNames("offset"), bad);
  }
  Reply both = f.h.get(path + "?offset=0&tail_bytes=10", kViewerToken);
  CHECK(both.status == 400);
  CHECK(both.detailNames("tail_bytes"));
  Reply file_alone = f.h.get(path + "?file=fake.1", kViewerToken);
  CHECK(file_alone.status == 400);
  CHECK(file_alone.detailNames("file"));
}

TEST_CASE("api: instance logs are 503 when the host has no log reader") {
  Fixture f;
  Reply reply = f.h.get("/v1/instances/" + f.instance + "/logs", kViewerToken);
  CHECK(reply.status == 503);
  CHECK(reply.errorCode() == "unavailable");
  CHECK(contains(errorMessage(reply), "logs are not available"));
}

TEST_CASE("api: the operations list's state filter takes several states, comma-separated") {
  Fixture f;
  const model::Operation waiting = f.waiting(f.instance);
  Reply listed = f.h.get("/v1/operations?state=FAILED,PENDING_APPROVAL", kViewerToken);
  REQUIRE_MESSAGE(listed.status == 200, listed.body);
  REQUIRE(listed.json()["items"].size() == 1);
  CHECK(listed.json()["items"][0]["metadata"]["id"] == waiting.meta.id);
  Reply none = f.h.get("/v1/operations?state=FAILED,REJECTED", kViewerToken);
  REQUIRE(none.status == 200);
  CHECK(none.json()["items"].empty());

  for (const char* bad : {"PENDING,BOGUS", "PENDING,", ",PENDING"}) {
    Reply refused = f.h.get(std::string("/v1/operations?state=") + bad, kViewerToken);
    CHECK_MESSAGE(refused.status == 400, bad);
    CHECK_MESSAGE(refused.detailNames("state"), bad);
  }
  // Other lists take one state.
  CHECK(f.h.get("/v1/instances?state=ACTIVE,STOPPED", kViewerToken).status == 400);
}

TEST_CASE("api: a token minted by the requester cannot approve, nor can the minter of the requester's token") {
  Fixture f;
  // A token minted through the API, by the token in `by`; its secret.
  auto mint = [&](const std::string& name, const std::string& role, const std::string& by) {
    Reply created = f.h.post("/v1/tokens", Json{{"name", name}, {"role", role}}.dump(), "application/json", by);
    REQUIRE_MESSAGE(created.status == 201, created.body);
    return created.json()["token"].get<std::string>();
  };
  auto createdBy = [&](const std::string& name) {
    const Json listed = f.h.get("/v1/tokens").json();
    for (const Json& token : listed["items"]) {
      if (token["name"] == name) return token.value("created_by", "");
    }
    return std::string("(not listed)");
  };
  const std::string self_approver = mint("root-approver", "approver", kAdminToken);
  const std::string deputy = mint("root-deputy", "admin", kAdminToken);
  const std::string deputy_approver = mint("deputy-approver", "approver", deputy);
  CHECK(createdBy("root-approver") == kAdminName);
  CHECK(createdBy("deputy-approver") == "root-deputy");

  SUBCASE("root requested: neither of root's tokens, directly or through another, approves") {
    model::Operation op = f.waiting(f.instance, kAdminName);
    for (const std::string& token : {self_approver, deputy_approver}) {
      refusedToDecide(f, op, token, {"was minted by root"});
    }
    Reply other = f.h.post(operationPath(op, "approve"), "", "", kApproverToken);
    REQUIRE(other.status == 200);
    CHECK(other.json()["approved_by"] == kApproverName);
  }
  SUBCASE("root-deputy's token requested: root-deputy may not approve, the ledger records who minted an approver") {
    model::Operation op = f.waiting(f.instance, "deputy-approver");
    Reply minter = f.h.post(operationPath(op, "approve"), "", "", deputy);
    CHECK(minter.status == 403);
    CHECK(contains(errorMessage(minter), "root-deputy minted deputy-approver's token"));
    Reply other = f.h.post(operationPath(op, "approve"), "", "", kApproverToken);
    REQUIRE(other.status == 200);
  }
  SUBCASE("the ledger records each approval's minters from its own tokens table") {
    model::Operation op = f.waiting(f.instance, kApproverName);
    auto approved = f.h.ledger->operations().addApproval(op.meta.id, std::nullopt,
                                            model::GivenApproval{"deputy-approver", "approver", false, "", "", {}});
    REQUIRE_MESSAGE(approved.isOk(), approved.status().toString());
    const model::ApprovalState state = model::approvalStateOf(approved->decision);
    REQUIRE(state.given.size() == 1);
    CHECK(state.given.front().minted_by == std::vector<std::string>{"root-deputy", "root"});
  }
}

namespace {

const std::string kRolloutApprove = "/v1/plans/" + kMrdsPlanName + "/deployments/deployment-1/approve";

Json eventsOfKind(const ApiHarness& h, const std::string& kind) {
  return h.get("/v1/events?limit=1000&kind=" + kind).json()["items"];
}

}  // namespace

TEST_CASE("api: approving a rollout approves each of its operations waiting now, one approval and event each") {
  Fixture f;
  // Two operations of deployment-1's rollout (the controller asks for them on behalf of
  // whoever added it: root), and one requested by someone else, which it does not cover.
  model::Operation first = f.waiting(f.instance, kAdminName);
  model::Operation second = f.waiting(f.newInstance(), kAdminName);
  model::Operation other = f.waiting(f.newInstance(), "controller");

  Reply approved =
      f.h.post(kRolloutApprove, R"({"reason": "release 42 reviewed"})", "application/json", kApproverToken);
  REQUIRE_MESSAGE(approved.status == 200, approved.body);
  Json reply = approved.json();
  CHECK(reply["deployment_id"] == "deployment-1");
  REQUIRE(reply["operations"].size() == 2);
  for (const Json& outcome : reply["operations"]) CHECK(outcome["state"] == "APPROVED");
  for (const model::Operation& op : {first, second}) {
    const model::Operation now = f.operation(op.meta.id);
    CHECK(now.state == model::OperationState::kApproved);
    CHECK(now.approved_by == kApproverName);
  }
  CHECK(f.operation(other.meta.id).state == model::OperationState::kPendingApproval);

  // One approval record per operation, by the approver, saying where it came from.
  Json given = eventsOfKind(f.h, "operation.approval");
  REQUIRE(given.size() == 2);
  for (const Json& event : given) {
    CHECK(event["actor"] == kApproverName);
    CHECK(event["data"]["reason"] == "approved with the whole rollout: release 42 reviewed");
  }
  Json control = eventsOfKind(f.h, "deployment.control");
  REQUIRE(!control.empty());
  CHECK(control.back()["data"]["control"] == "approve");
  CHECK(control.back()["data"]["by"] == kApproverName);

  // It is kept with the deployment for the operations the rollout asks for next.
  auto deployment = f.h.ledger->plans().getDeployment(kMrdsPlanName, "deployment-1");
  REQUIRE(deployment.isOk());
  std::vector<model::GivenApproval> kept = model::rolloutApprovals(deployment->signals);
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].actor == kApproverName);
  CHECK(kept[0].role == "approver");

  // Approving again adds nothing.
  const int64_t seq = f.h.lastEventSeq();
  Reply again = f.h.post(kRolloutApprove, "", "", kApproverToken);
  CHECK(again.status == 200);
  CHECK(again.json()["operations"].empty());
  CHECK(f.h.lastEventSeq() == seq);
}

TEST_CASE("api: whoever added a rollout cannot approve it, nor can a viewer or an operator, and a finished one is 409") {
  Fixture f;
  model::Operation op = f.waiting(f.instance, kAdminName);
  Json before = f.h.everything();
  Reply own = f.h.post(kRolloutApprove, "", "", kAdminToken);
  CHECK(own.status == 403);
  CHECK_MESSAGE(contains(errorMessage(own), "approver_must_differ"), errorMessage(own));
  CHECK(f.h.post(kRolloutApprove, "", "", kOperatorToken).status == 403);
  CHECK(f.h.post(kRolloutApprove, "", "", kViewerToken).status == 403);
  CHECK(f.h.post(kRolloutApprove, R"({"reason": 7})", "application/json", kApproverToken).status == 400);
  CHECK(f.h.post("/v1/plans/" + kMrdsPlanName + "/deployments/deployment-9/approve", "", "", kApproverToken).status ==
        404);
  CHECK(f.h.everything() == before);
  CHECK(model::rolloutApprovals(f.h.ledger->plans().getDeployment(kMrdsPlanName, "deployment-1")->signals).empty());
  CHECK(f.operation(op.meta.id).state == model::OperationState::kPendingApproval);

  auto cancelled = f.h.ledger->plans().setDeploymentState(kMrdsPlanName, "deployment-1", model::DeploymentState::kCancelled,
                                                  std::nullopt, "test");
  REQUIRE_MESSAGE(cancelled.isOk(), cancelled.status().toString());
  Reply over = f.h.post(kRolloutApprove, "", "", kApproverToken);
  CHECK(over.status == 409);
  CHECK_MESSAGE(contains(errorMessage(over), "only a rollout in progress can be approved"), errorMessage(over));
}

TEST_CASE("api: a rollout's approval leaves an operation waiting when its policies ask for more than the approver") {
  Fixture f;
  model::Operation op = f.waiting(f.instance, kAdminName);
  // Its policies ask for two approvals from admins.
  ledger::OperationUpdate update;
  update.decision = Json{{"outcome", "PENDING_APPROVAL"},
                         {"approvals", {{"required", 2}, {"role", "admin"}, {"distinct_from", Json::array()}}}};
  REQUIRE(f.h.ledger->operations().updateOperation(op.meta.id, update, "approval").isOk());
  Reply approved = f.h.post(kRolloutApprove, "", "", kApproverToken);
  REQUIRE_MESSAGE(approved.status == 200, approved.body);
  REQUIRE(approved.json()["operations"].size() == 1);
  const Json outcome = approved.json()["operations"][0];
  CHECK(outcome["state"] == "PENDING_APPROVAL");
  CHECK_MESSAGE(contains(outcome.value("refused", ""), "admin"), outcome.dump());
  CHECK(f.operation(op.meta.id).state == model::OperationState::kPendingApproval);
}

TEST_CASE("api: the operations list filters by actor and creation time, alone, combined and paged") {
  Fixture f;  // the clock stands at 12:00
  const model::Operation noon = f.pending(f.instance, "CREATE", "controller");
  f.h.clock.advance(std::chrono::hours(1));
  const model::Operation one = f.pending(f.newInstance(), "CREATE", kOperatorName);
  f.h.clock.advance(std::chrono::hours(1));
  const model::Operation two = f.waiting(f.newInstance(), kApproverName);  // at 14:00
  auto ids = [&](const std::string& query) {
    Reply reply = f.h.get("/v1/operations?" + query, kViewerToken);
    REQUIRE_MESSAGE(reply.status == 200, reply.body);
    const Json list = reply.json();
    std::vector<int64_t> out;
    for (const Json& op : list["items"]) out.push_back(op["metadata"]["id"]);
    return out;
  };
  using Ids = std::vector<int64_t>;

  CHECK(ids("actor=" + kOperatorName) == Ids{one.meta.id});
  CHECK(ids("actor=nobody").empty());
  CHECK(ids("since=2026-11-21T13:00:00Z") == Ids{one.meta.id, two.meta.id});  // inclusive
  CHECK(ids("until=2026-11-21T13:00:00Z") == Ids{noon.meta.id});              // exclusive
  CHECK(ids("since=90m") == Ids{one.meta.id, two.meta.id});                   // back from 14:00
  CHECK(ids("since=2h&until=1h") == Ids{noon.meta.id});
  CHECK(ids("since=1d") == Ids{noon.meta.id, one.meta.id, two.meta.id});

  CHECK(ids("state=PENDING_APPROVAL&actor=" + kApproverName + "&since=1h") == Ids{two.meta.id});
  CHECK(ids("state=PENDING&actor=" + kApproverName).empty());
  CHECK(ids("plan=" + kMrdsPlanName + "&state=PENDING,PENDING_APPROVAL&since=2026-11-21T12:00:00.001Z") ==
        Ids{one.meta.id, two.meta.id});
  CHECK(ids("plan=other&since=1d").empty());

  // Pages of one, each full, the cursor moving past what the filter leaves out.
  CHECK(ids("since=3h&actor=controller,x").empty());  // actor is one name, compared whole
  Reply page = f.h.get("/v1/operations?since=1h&limit=1", kViewerToken);
  REQUIRE(page.status == 200);
  REQUIRE(page.json()["items"].size() == 1);
  CHECK(page.json()["items"][0]["metadata"]["id"] == one.meta.id);
  CHECK(page.json()["next_after"] == one.meta.id);
  page = f.h.get("/v1/operations?since=1h&limit=1&after=" + std::to_string(one.meta.id), kViewerToken);
  REQUIRE(page.json()["items"].size() == 1);
  CHECK(page.json()["items"][0]["metadata"]["id"] == two.meta.id);
  CHECK_FALSE(page.json().contains("next_after"));
}

TEST_CASE("api: bad operation list filters are 400 naming the parameter") {
  Fixture f;
  checkRefusedNaming(f.h, "/v1/operations",
                     {{"since=last-week", "since"},
                      {"until=12h30m", "until"},
                      {"since=7w", "since"},
                      {"since=99999999999999999999d", "since"},
                      {"since=2026-11-21T13:00:00Z&until=2026-11-21T12:00:00Z", "until"},
                      {"state=DONE", "state"},
                      {"type=REBOOT", "type"},
                      {"limit=-1", "limit"},
                      {"requested_by=otto", "requested_by"}},
                     kViewerToken);

  CHECK(f.h.get("/v1/operations?since=&until=&actor=", kViewerToken).status == 200);  // empty: no filter
}
