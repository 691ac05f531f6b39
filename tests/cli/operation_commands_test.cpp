// `tide deployment approve-operation | reject-operation | operate` and `tide logs` against
// a live API server. There is no control loop here: the tests put operations in
// PENDING_APPROVAL through the ledger, as the approval stage would.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "host/model/approvals.h"
#include "tests/cli/cli_test_support.h"
#include "tests/support/vocabulary.h"

using namespace tide;
using namespace tide::testing;

namespace {

using Json = nlohmann::json;

// The examples' nodes, the nginx plan and its first deployment.
struct OperationFixture {
  LiveServer live;

  explicit OperationFixture(const std::function<void(api::ServerOptions&)>& configure = {}) : live(configure) {
    REQUIRE(live.run({"node", "create", "-m", example("nodes.yaml")}).code == 0);
    REQUIRE(live.run({"deployment", "create", "-m", example("nginx-plan.yaml")}).code == 0);
    REQUIRE(live.run({"deployment", "add-deployment", "-m", example("deployment-1.yaml")}).code == 0);
  }

  std::string newInstance() {
    auto created = live.ledger->instances().createMetaInstance(kExamplePlan, "deployment-1", "test");
    REQUIRE(created.isOk());
    return created->name;
  }

  // A controller CREATE on `instance`, left waiting for a person; its id.
  int64_t waiting(const std::string& instance) {
    model::Operation operation;
    operation.meta_instance = instance;
    operation.type = model::OperationType::kCreate;
    operation.intent = "deployment-1";
    operation.requested_by = "controller";
    auto created = live.ledger->operations().createOperation(operation, "controller");
    REQUIRE(created.isOk());
    moveTo(created->meta.id, "PENDING_APPROVAL");
    return created->meta.id;
  }

  void moveTo(int64_t id, const std::string& state) {
    REQUIRE(live.ledger
                ->operations().setOperationState(id, testing::parsed<model::OperationState>(state), std::nullopt, "engine",
                                    "a policy asked for a person")
                .isOk());
  }

  model::Operation operation(int64_t id) {
    auto got = live.ledger->operations().getOperation(id);
    REQUIRE(got.isOk());
    return *got;
  }

  std::vector<model::Operation> operationsOf(const std::string& instance) {
    ledger::ListOptions options;
    options.filters["meta_instance"] = instance;
    auto page = live.ledger->operations().listOperations(options);
    REQUIRE(page.isOk());
    return page->items;
  }
};

// "7 (CREATE nginx-service-ab12cd)"
std::string described(int64_t id, const std::string& type, const std::string& instance) {
  return std::to_string(id) + " (" + type + " " + instance + ")";
}

}  // namespace

TEST_CASE("cli: approve-operation approves the plan's only waiting operation, or says why it cannot") {
  OperationFixture f;
  CliRun none = f.live.run({"deployment", "approve-operation", kExamplePlan});
  CHECK(none.code == 1);
  CHECK(none.err == "error: no operation of plan " + kExamplePlan + " is waiting for approval\n");
  CliRun unknown_plan = f.live.run({"deployment", "approve-operation", "no-such-plan"});
  CHECK(unknown_plan.code == 1);
  CHECK(contains(unknown_plan.err, "no-such-plan"));
  CHECK_FALSE(contains(unknown_plan.err, "waiting for approval"));

  std::string first = f.newInstance();
  int64_t only = f.waiting(first);
  CliRun approved = f.live.run({"deployment", "approve-operation", kExamplePlan});
  REQUIRE_MESSAGE(approved.code == 0, approved.err);
  CHECK(approved.out == "approved operation " + described(only, "CREATE", first) + "\n");
  CHECK(f.operation(only).state == model::OperationState::kApproved);
  CHECK(f.operation(only).approved_by == kBootstrapAdmin);
  CHECK(f.operation(only).message == "approved by " + kBootstrapAdmin);

  std::string second = f.newInstance(), third = f.newInstance();
  int64_t two = f.waiting(second), three = f.waiting(third);
  CliRun several = f.live.run({"deployment", "approve-operation", kExamplePlan});
  CHECK(several.code == 1);
  CHECK(several.out.empty());
  CHECK(several.err == "error: 2 operations of plan " + kExamplePlan +
                           " are waiting for approval; pass --operation-id ID or --all\n"
                           "  operation " +
                           described(two, "CREATE", second) +
                           "\n"
                           "  operation " +
                           described(three, "CREATE", third) + "\n");
  CHECK(f.operation(two).state == model::OperationState::kPendingApproval);

  CliRun chosen = f.live.run({"deployment", "approve-operation", kExamplePlan, "--operation-id", std::to_string(three),
                              "--reason", "canary is fine"});
  REQUIRE_MESSAGE(chosen.code == 0, chosen.err);
  CHECK(chosen.out == "approved operation " + described(three, "CREATE", third) + "\n");
  CHECK(f.operation(three).message == "canary is fine");
  CHECK(f.operation(two).state == model::OperationState::kPendingApproval);

  CliRun twice = f.live.run({"deployment", "approve-operation", kExamplePlan, "--operation-id", std::to_string(three)});
  CHECK(twice.code == 1);
  CHECK(contains(twice.err, "is APPROVED"));
  CliRun missing = f.live.run({"deployment", "approve-operation", kExamplePlan, "--operation-id", "999"});
  CHECK(missing.code == 1);
  CHECK(contains(missing.err, "999"));
  CliRun both = f.live.run({"deployment", "approve-operation", kExamplePlan, "--operation-id", "2", "--all"});
  CHECK(both.code == 2);

  std::string fourth = f.newInstance();
  int64_t four = f.waiting(fourth);
  CliRun all = f.live.run({"deployment", "approve-operation", kExamplePlan, "--all", "-o", "json"});
  REQUIRE_MESSAGE(all.code == 0, all.err);
  Json items = Json::parse(all.out)["items"];
  REQUIRE(items.size() == 2);
  CHECK(items[0]["metadata"]["id"] == two);
  CHECK(items[1]["metadata"]["id"] == four);
  CHECK(items[1]["state"] == "APPROVED");
  CHECK(items[1]["approved_by"] == kBootstrapAdmin);
  CHECK(f.operation(four).state == model::OperationState::kApproved);
}

TEST_CASE("cli: reject-operation --all rejects every waiting operation with the reason") {
  OperationFixture f;
  std::string first = f.newInstance(), second = f.newInstance();
  int64_t one = f.waiting(first), two = f.waiting(second);
  CliRun rejected = f.live.run({"deployment", "reject-operation", kExamplePlan, "--all", "--reason", "not during the freeze"});
  REQUIRE_MESSAGE(rejected.code == 0, rejected.err);
  CHECK(rejected.out == "rejected operation " + described(one, "CREATE", first) + "\n" + "rejected operation " +
                            described(two, "CREATE", second) + "\n");
  for (int64_t id : {one, two}) {
    CHECK(f.operation(id).state == model::OperationState::kRejected);
    CHECK(f.operation(id).message == "not during the freeze");
    CHECK(f.operation(id).approved_by == kBootstrapAdmin);
  }
  CHECK(f.live.run({"deployment", "reject-operation", kExamplePlan}).code == 1);
  // Shown as the rejection it is, never as an approval.
  CliRun shown = f.live.run({"operations", "show", std::to_string(one)});
  REQUIRE_MESSAGE(shown.code == 0, shown.err);
  CHECK(contains(shown.out, "Rejected By"));
  CHECK_FALSE(contains(shown.out, "Approved By"));
  CliRun listed = f.live.run({"operations", "list", "--state", "REJECTED"});
  REQUIRE_MESSAGE(listed.code == 0, listed.err);
  CHECK(contains(listed.out, "rejected by " + kBootstrapAdmin));
}

TEST_CASE("cli: operate acts on the plan's only live instance or lists the candidates") {
  OperationFixture f;
  CliRun nothing = f.live.run({"deployment", "operate", kExamplePlan, "--restart"});
  CHECK(nothing.code == 1);
  CHECK(nothing.err == "error: plan " + kExamplePlan + " has no live meta instance\n");

  std::string first = f.newInstance();
  CliRun restarted = f.live.run({"deployment", "operate", kExamplePlan, "--restart", "--reason", "wedged"});
  REQUIRE_MESSAGE(restarted.code == 0, restarted.err);
  std::vector<model::Operation> ops = f.operationsOf(first);
  REQUIRE(ops.size() == 1);
  CHECK(restarted.out == "created operation " + described(ops[0].meta.id, "RESTART", first) + ": PENDING\n");
  CHECK(ops[0].intent == "user");
  CHECK(ops[0].priority == 10);
  CHECK(ops[0].requested_by == kBootstrapAdmin);

  std::string second = f.newInstance();
  CliRun ambiguous = f.live.run({"deployment", "operate", kExamplePlan, "--stop"});
  CHECK(ambiguous.code == 1);
  CHECK(ambiguous.err == "error: plan " + kExamplePlan +
                             " has 2 live meta instances; pass --meta-instance-name NAME\n"
                             "  " +
                             first +
                             " (ACTIVE, deployment deployment-1)\n"
                             "  " +
                             second + " (ACTIVE, deployment deployment-1)\n");
  CHECK(f.operationsOf(second).empty());

  CliRun stopped = f.live.run({"deployment", "operate", kExamplePlan, "--stop", "-x", second, "-o", "json"});
  REQUIRE_MESSAGE(stopped.code == 0, stopped.err);
  Json stop = Json::parse(stopped.out);
  CHECK(stop["type"] == "STOP");
  CHECK(stop["meta_instance"] == second);
  CHECK(stop["state"] == "PENDING");

  // A user operation is unfinished on the first instance: the next one is refused.
  CliRun refused = f.live.run({"deployment", "operate", kExamplePlan, "--delete", "--meta-instance-name", first});
  CHECK(refused.code == 1);
  CHECK(contains(refused.err, "already has operation"));

  // A meta instance on its way out is not a candidate.
  REQUIRE(
      f.live.ledger->instances().setMetaInstanceState(first, model::MetaState::kMarkedForDeletion, std::nullopt, "test").isOk());
  CliRun only_live = f.live.run({"deployment", "operate", kExamplePlan, "--relocate"});
  CHECK(only_live.code == 1);
  CHECK(contains(only_live.err, "instance '" + second + "' already has operation"));

  CHECK(f.live.run({"deployment", "operate", kExamplePlan}).code == 2);
  CHECK(f.live.run({"deployment", "operate", kExamplePlan, "--stop", "--delete"}).code == 2);
  CliRun elsewhere = f.live.run({"deployment", "operate", "other-plan", "--stop", "-x", second});
  CHECK(elsewhere.code == 1);
  CHECK(contains(elsewhere.err, "belongs to plan " + kExamplePlan));
}

TEST_CASE("cli: approving one's own operation is refused unless approver_must_differ is off") {
  SUBCASE("refused by default") {
    OperationFixture f;
    std::string instance = f.newInstance();
    REQUIRE(f.live.run({"deployment", "operate", kExamplePlan, "--restart"}).code == 0);
    int64_t id = f.operationsOf(instance).at(0).meta.id;
    f.moveTo(id, "PENDING_APPROVAL");
    CliRun own = f.live.run({"deployment", "approve-operation", kExamplePlan});
    CHECK(own.code == 1);
    CHECK(contains(own.err, "was requested by " + kBootstrapAdmin));
    CHECK(f.operation(id).state == model::OperationState::kPendingApproval);
  }
  SUBCASE("allowed when the host says so") {
    OperationFixture f([](api::ServerOptions& options) { options.approver_must_differ = false; });
    std::string instance = f.newInstance();
    REQUIRE(f.live.run({"deployment", "operate", kExamplePlan, "--restart"}).code == 0);
    int64_t id = f.operationsOf(instance).at(0).meta.id;
    f.moveTo(id, "PENDING_APPROVAL");
    CliRun own = f.live.run({"deployment", "approve-operation", kExamplePlan});
    REQUIRE_MESSAGE(own.code == 0, own.err);
    CHECK(f.operation(id).state == model::OperationState::kApproved);
  }
}

TEST_CASE("cli: deployment show lists runtime instance details and who asked for and approved each operation") {
  OperationFixture f;
  std::string instance = f.newInstance();
  model::RuntimeInstance runtime;
  runtime.meta_instance = instance;
  runtime.node = "kind-worker";
  runtime.reservation = {4, 64};
  runtime.coordinates = {{"image", "nginx:latest"}};
  runtime.ports = {{"tcp/80", 31080}};
  auto created = f.live.ledger->instances().createRuntimeInstance(runtime, "test");
  REQUIRE(created.isOk());
  int64_t id = f.waiting(instance);
  REQUIRE(f.live.run({"deployment", "approve-operation", kExamplePlan}).code == 0);

  CliRun show = f.live.run({"deployment", "show", kExamplePlan});
  REQUIRE_MESSAGE(show.code == 0, show.err);
  for (const std::string& line : std::vector<std::string>{
           "Node Name: kind-worker", "Is Active: true", "State: PENDING", "Host Ports: tcp/80 -> 31080",
           "Healthy: false", "Image: nginx:latest", "ID: " + std::to_string(id), "Type: CREATE", "State: APPROVED",
           "Requested By: controller", "Approved By: " + kBootstrapAdmin, "Attempts: 0",
           "Message: approved by " + kBootstrapAdmin}) {
    CHECK_MESSAGE(contains(show.out, line), line);
  }
  Json view = Json::parse(f.live.run({"deployment", "show", kExamplePlan, "-o", "json"}).out);
  CHECK(view["instances"][0]["runtime_instances"][0]["ports"]["tcp/80"] == 31080);
  CHECK(view["instances"][0]["operations"][0]["approved_by"] == kBootstrapAdmin);
}

TEST_CASE("cli: logs prints the end of an instance's log") {
  SUBCASE("from the host's log reader") {
    OperationFixture f([](api::ServerOptions& options) {
      options.read_logs = [](const std::string& meta_instance, const std::string& application,
                             const std::optional<drivers::LogCursor>&, size_t) -> Result<drivers::LogSlice> {
        if (!application.empty())
          return drivers::LogSlice{.text = application + " of " + meta_instance + "\n", .end = std::nullopt};
        return drivers::LogSlice{.text = "started " + meta_instance + "\nlistening on :31080\n", .end = std::nullopt};
      };
    });
    std::string instance = f.newInstance();
    CliRun all = f.live.run({"logs", instance});
    REQUIRE_MESSAGE(all.code == 0, all.err);
    CHECK(all.out == "started " + instance + "\nlistening on :31080\n");
    CliRun tail = f.live.run({"logs", instance, "--tail-bytes", "7"});
    CHECK(tail.out == ":31080\n");
    Json json = Json::parse(f.live.run({"logs", instance, "-o", "json"}).out);
    CHECK(json["meta_instance"] == instance);
    CHECK(json["log"] == all.out);
    CliRun bad = f.live.run({"logs", instance, "--tail-bytes", "0"});
    CHECK(bad.code == 2);
    CHECK(bad.err == "error: --tail-bytes: '0' is not a positive whole number\n");
    CliRun too_many = f.live.run({"logs", instance, "--tail-bytes", "9999999999"});
    CHECK(too_many.code == 1);
    CHECK(contains(too_many.err, "tail_bytes"));
    CHECK(f.live.run({"logs", "nginx-service-nope"}).code == 1);
    CliRun shipper = f.live.run({"logs", instance, "--application", "shipper"});
    REQUIRE_MESSAGE(shipper.code == 0, shipper.err);
    CHECK(shipper.out == "shipper of " + instance + "\n");
  }
  SUBCASE("not when the host has no reader") {
    OperationFixture f;
    CliRun unavailable = f.live.run({"logs", f.newInstance()});
    CHECK(unavailable.code == 1);
    CHECK(contains(unavailable.err, "logs are not available"));
  }
}

TEST_CASE("cli: operations cancel withdraws an operation that has not started, and says why it cannot") {
  OperationFixture f;
  const std::string instance = f.newInstance();
  const int64_t id = f.waiting(instance);
  CliRun cancelled = f.live.run({"operations", "cancel", std::to_string(id), "--reason", "wrong instance"});
  REQUIRE_MESSAGE(cancelled.code == 0, cancelled.err);
  CHECK(cancelled.out == "cancelled operation " + described(id, "CREATE", instance) + "\n");
  CHECK(f.operation(id).state == model::OperationState::kCancelled);
  CHECK(f.operation(id).message == "wrong instance");

  CliRun again = f.live.run({"operations", "cancel", std::to_string(id)});
  CHECK(again.code == 1);
  CHECK(contains(again.err, "operation " + std::to_string(id) + " is CANCELLED"));

  const int64_t other = f.waiting(f.newInstance());
  CliRun json = f.live.run({"operations", "cancel", std::to_string(other), "-o", "json"});
  REQUIRE_MESSAGE(json.code == 0, json.err);
  Json reply = Json::parse(json.out);
  CHECK(reply["metadata"]["id"] == other);
  CHECK(reply["state"] == "CANCELLED");
  CHECK(reply["message"] == "cancelled by " + kBootstrapAdmin);

  CHECK(f.live.run({"operations", "cancel", "seven"}).code == 2);
  CHECK(f.live.run({"operations", "cancel"}).code == 2);
  CliRun missing = f.live.run({"operations", "cancel", "999"});
  CHECK(missing.code == 1);
  CHECK(contains(missing.err, "999"));
}

namespace {

// Makes waiting operation `id` ask for what the approval stage would record for `approvals`.
void askFor(OperationFixture& f, int64_t id, const model::ApprovalState& approvals) {
  ledger::OperationUpdate update;
  update.decision = Json{{"outcome", "PENDING_APPROVAL"},
                         {"summary", "a policy asked"},
                         {"overridable", approvals.overridable},
                         {"approvals", model::approvalsJson(approvals)}};
  REQUIRE(f.live.ledger->operations().updateOperation(id, update, "engine").isOk());
}

}  // namespace

TEST_CASE("cli: operations approve counts one of the approvals an operation needs, and list and show say how far") {
  OperationFixture f;
  // Two people with tokens the bootstrap admin minted; the bootstrap admin itself is one
  // party with each of them (docs/architecture.md#four-eyes).
  auto mint = [&](const std::string& name) {
    CliRun created = f.live.run({"token", "create", "--name", name, "--role", "approver", "-o", "json"});
    REQUIRE_MESSAGE(created.code == 0, created.err);
    const std::string secret = Json::parse(created.out).value("token", "");
    REQUIRE_FALSE(secret.empty());
    return secret;
  };
  const std::string alice_token = mint("alice");
  const std::string bob_token = mint("bob");
  auto approveAs = [&](int64_t id, const std::string& token) {
    return runCli({"operations", "approve", std::to_string(id), "--server", f.live.url, "--token", token});
  };
  const std::string instance = f.newInstance();
  const int64_t id = f.waiting(instance);
  askFor(f, id, {{2, "approver", {"requester"}}, false, {}});

  CliRun first = approveAs(id, alice_token);
  REQUIRE_MESSAGE(first.code == 0, first.err);
  const std::string progress = "1 of 2 approvals (alice)";
  CHECK(first.out == "approved operation " + described(id, "CREATE", instance) + ": " + progress + "; 1 more needed\n");
  CHECK(f.operation(id).state == model::OperationState::kPendingApproval);

  CliRun list = f.live.run({"operations", "list", "--state", "PENDING_APPROVAL"});
  REQUIRE_MESSAGE(list.code == 0, list.err);
  CHECK(contains(list.out, progress));
  CliRun show = f.live.run({"deployment", "show", kExamplePlan});
  CHECK(contains(show.out, "Approved By: " + progress));

  CliRun again = approveAs(id, alice_token);
  CHECK(again.code == 1);
  CHECK(contains(again.err, "alice has already approved this operation"));
  CliRun minter = f.live.run({"operations", "approve", std::to_string(id)});
  CHECK(minter.code == 1);
  CHECK(contains(minter.err, kBootstrapAdmin + " has already approved this operation as alice (" + kBootstrapAdmin +
                                 " minted alice's token)"));

  CliRun second = approveAs(id, bob_token);
  REQUIRE_MESSAGE(second.code == 0, second.err);
  CHECK(contains(second.out, "2 of 2 approvals (alice, bob)"));
  CHECK(f.operation(id).state == model::OperationState::kApproved);
  CHECK(f.operation(id).approved_by == "alice,bob");
}

TEST_CASE("cli: operations approve --override --reason overrides a soft deny, a plain approve is refused") {
  OperationFixture f;
  const std::string instance = f.newInstance();
  const int64_t id = f.waiting(instance);
  askFor(f, id, {{}, true, {}});
  CliRun show = f.live.run({"operations", "list"});
  CHECK(contains(show.out, "soft-denied: needs an override"));

  CliRun plain = f.live.run({"operations", "approve", std::to_string(id)});
  CHECK(plain.code == 1);
  CHECK(contains(plain.err, "override"));
  CliRun reasonless = f.live.run({"operations", "approve", std::to_string(id), "--override"});
  CHECK(reasonless.code == 1);
  CHECK(contains(reasonless.err, "reason"));

  CliRun overridden =
      f.live.run({"operations", "approve", std::to_string(id), "--override", "--reason", "hotfix for INC-42"});
  REQUIRE_MESSAGE(overridden.code == 0, overridden.err);
  CHECK(overridden.out == "approved operation " + described(id, "CREATE", instance) + "\n");
  CHECK(f.operation(id).state == model::OperationState::kApproved);
  CHECK(f.operation(id).message == "hotfix for INC-42");

  const int64_t other = f.waiting(f.newInstance());
  CliRun rejected = f.live.run({"operations", "reject", std::to_string(other), "--reason", "not now"});
  REQUIRE_MESSAGE(rejected.code == 0, rejected.err);
  CHECK(f.operation(other).state == model::OperationState::kRejected);
}

TEST_CASE("cli: deployment approve-operation --override --reason overrides a soft deny of the plan's operation") {
  OperationFixture f;
  const std::string instance = f.newInstance();
  const int64_t id = f.waiting(instance);
  askFor(f, id, {{}, true, {}});

  CliRun plain = f.live.run({"deployment", "approve-operation", kExamplePlan});
  CHECK(plain.code == 1);
  CHECK(contains(plain.err, "override"));
  CliRun reasonless = f.live.run({"deployment", "approve-operation", kExamplePlan, "--override"});
  CHECK(reasonless.code == 1);
  CHECK(contains(reasonless.err, "reason"));
  CHECK(f.operation(id).state == model::OperationState::kPendingApproval);

  CliRun overridden = f.live.run(
      {"deployment", "approve-operation", kExamplePlan, "--override", "--reason", "hotfix for INC-42", "-o", "json"});
  REQUIRE_MESSAGE(overridden.code == 0, overridden.err);
  CHECK(Json::parse(overridden.out)["items"][0]["state"] == "APPROVED");
  CHECK(f.operation(id).state == model::OperationState::kApproved);
  CHECK(f.operation(id).message == "hotfix for INC-42");
  const auto given = f.live.ledger->operations().listApprovals(id);
  REQUIRE(given.isOk());
  REQUIRE(given->size() == 1);
  CHECK(given->front().override);
  CHECK(given->front().reason == "hotfix for INC-42");

  CliRun reject_has_no_override = f.live.run({"deployment", "reject-operation", kExamplePlan, "--override"});
  CHECK(reject_has_no_override.code == 2);
}
