// PlanRecords::scalePlanToZero: a plan torn down in one write, or not at all.

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "host/ledger/ledger.h"
#include "tests/ledger/ledger_test_util.h"

using namespace tide;
using namespace tide::ledger;
using tide::testing::LedgerFixture;

namespace {

// A DELETE as a person asks for it through the API.
model::Operation teardownDelete() {
  model::Operation operation;
  operation.type = model::OperationType::kDelete;
  operation.intent = "user";
  operation.requested_by = "alice";
  operation.priority = 10;
  return operation;
}

std::vector<model::Event> teardownEvents(LedgerFixture& f) {
  ListOptions options;
  options.filters["kind"] = "plan.scale_to_zero";
  auto page = f.ledger->audit().listEvents(options);
  REQUIRE(page.isOk());
  return page->items;
}

}  // namespace

TEST_CASE("ledger: scaling a plan to zero with a busy instance is refused whole, naming the instance") {
  LedgerFixture f;
  const std::string busy = f.addInstance();
  auto idle = f.ledger->instances().createMetaInstance("web", "d1", "test");
  REQUIRE(idle.isOk());
  REQUIRE(f.ledger
              ->plans().setDeploymentState("web", "d1", model::DeploymentState::kInProgress, std::nullopt, "controller",
                                   "rolling out")
              .isOk());
  const model::Operation create = f.addOperation(idle->name, "CREATE");
  // A person's RESTART under way: it is nobody's rollout, so cancelling d1 leaves it running.
  model::Operation restart;
  restart.meta_instance = busy;
  restart.type = model::OperationType::kRestart;
  restart.intent = "user";
  restart.priority = 10;
  auto running = f.ledger->operations().createOperation(restart, "bob");
  REQUIRE(running.isOk());
  REQUIRE(
      f.ledger->operations().setOperationState(running->meta.id, model::OperationState::kApproved, std::nullopt, "approval").isOk());
  REQUIRE(
      f.ledger->operations().setOperationState(running->meta.id, model::OperationState::kRunning, std::nullopt, "executor").isOk());
  const int64_t events_before = f.eventCount();

  auto refused = f.ledger->plans().scalePlanToZero("web", teardownDelete(), "retire", "alice");
  REQUIRE_FALSE(refused.isOk());
  CHECK(refused.status().code() == Code::kConflict);
  CHECK(refused.status().message() ==
        "plan 'web' cannot be scaled to zero now: 1 of its 2 instance(s) cannot take a DELETE yet; nothing was asked");
  REQUIRE(refused.status().details().size() == 1);
  CHECK(refused.status().details()[0].field == busy);
  CHECK(refused.status().details()[0].message ==
        "instance '" + busy + "' already has operation " + std::to_string(running->meta.id) + " (RESTART, RUNNING)");
  // Nothing was written: the rollout goes on, its CREATE waits, no DELETE, no event.
  CHECK(f.ledger->plans().getDeployment("web", "d1")->state == model::DeploymentState::kInProgress);
  CHECK(f.ledger->operations().getOperation(create.meta.id)->state == model::OperationState::kPending);
  CHECK(f.eventCount() == events_before);

  REQUIRE(f.ledger->operations().setOperationState(running->meta.id, model::OperationState::kSucceeded, std::nullopt, "executor")
              .isOk());
  auto teardown = f.ledger->plans().scalePlanToZero("web", teardownDelete(), "retire", "alice");
  REQUIRE_MESSAGE(teardown.isOk(), teardown.status().toString());
  CHECK(teardown->cancelled_deployments == std::vector<std::string>{"d1"});
  REQUIRE(teardown->operations.size() == 2);
  CHECK(teardown->operations[0].meta_instance == busy);
  CHECK(teardown->operations[1].meta_instance == idle->name);
  for (const model::Operation& operation : teardown->operations) {
    CHECK(operation.type == model::OperationType::kDelete);
    CHECK(operation.state == model::OperationState::kPending);
    CHECK(operation.intent == "user");
    CHECK(operation.priority == 10);
    CHECK(operation.requested_by == "alice");
  }
  auto cancelled = f.ledger->plans().getDeployment("web", "d1");
  CHECK(cancelled->state == model::DeploymentState::kCancelled);
  CHECK(cancelled->message == "cancelled: plan web scaled to zero by alice");
  CHECK(f.ledger->operations().getOperation(create.meta.id)->state == model::OperationState::kCancelled);
  const std::vector<model::Event> events = teardownEvents(f);
  REQUIRE(events.size() == 1);
  CHECK(events[0].subject == "plan/web");
  CHECK(events[0].data == nlohmann::json{{"operations", {teardown->operations[0].meta.id, teardown->operations[1].meta.id}},
                                         {"cancelled_deployments", {"d1"}},
                                         {"reason", "retire"}});

  // Asking again asks for nothing twice: the DELETEs under way are the answer.
  auto again = f.ledger->plans().scalePlanToZero("web", teardownDelete(), "again", "alice");
  REQUIRE(again.isOk());
  CHECK(again->cancelled_deployments.empty());
  REQUIRE(again->operations.size() == 2);
  CHECK(again->operations[0].meta.id == teardown->operations[0].meta.id);
  CHECK(again->operations[1].meta.id == teardown->operations[1].meta.id);

  // The plan itself goes only once no instance is left.
  Status early = f.ledger->plans().deletePlan("web", std::nullopt, "alice");
  CHECK(early.code() == Code::kConflict);
}

TEST_CASE("ledger: scaling an unknown plan to zero is not found, an empty plan asks for nothing") {
  LedgerFixture f;
  CHECK(f.ledger->plans().scalePlanToZero("nope", teardownDelete(), "", "alice").status().code() == Code::kNotFound);
  f.addInventory();
  REQUIRE(f.ledger->plans().createPlan(LedgerFixture::plan(), "test").isOk());
  auto empty = f.ledger->plans().scalePlanToZero("web", teardownDelete(), "", "alice");
  REQUIRE(empty.isOk());
  CHECK(empty->operations.empty());
  CHECK(empty->cancelled_deployments.empty());
  CHECK(f.ledger->plans().deletePlan("web", std::nullopt, "alice").isOk());
}

TEST_CASE("ledger: a deleted plan's operations and its deleted instances' stay listed and readable") {
  LedgerFixture f;
  const std::string instance = f.addInstance();
  auto teardown = f.ledger->plans().scalePlanToZero("web", teardownDelete(), "retire", "alice");
  REQUIRE(teardown.isOk());
  REQUIRE(teardown->operations.size() == 1);
  const int64_t removal = teardown->operations[0].meta.id;
  for (model::OperationState state :
       {model::OperationState::kApproved, model::OperationState::kRunning, model::OperationState::kSucceeded}) {
    REQUIRE(f.ledger->operations().setOperationState(removal, state, std::nullopt, "executor").isOk());
  }
  REQUIRE(
      f.ledger->instances().setMetaInstanceState(instance, model::MetaState::kMarkedForDeletion, std::nullopt, "executor").isOk());
  REQUIRE(f.ledger->instances().setMetaInstanceState(instance, model::MetaState::kDeleted, std::nullopt, "executor").isOk());
  REQUIRE(f.ledger->plans().deletePlan("web", std::nullopt, "alice").isOk());

  auto ids = [&](std::map<std::string, std::string> filters) {
    ListOptions options;
    options.filters = std::move(filters);
    auto page = f.ledger->operations().listOperations(options);
    REQUIRE_MESSAGE(page.isOk(), page.status().toString());
    std::vector<int64_t> found;
    for (const model::Operation& operation : page->items) found.push_back(operation.meta.id);
    return found;
  };
  CHECK(ids({}) == std::vector<int64_t>{removal});
  CHECK(ids({{"plan", "web"}}) == std::vector<int64_t>{removal});
  CHECK(ids({{"meta_instance", instance}}) == std::vector<int64_t>{removal});
  CHECK(ids({{"plan", "web"}, {"type", "DELETE"}, {"state", "SUCCEEDED"}}) == std::vector<int64_t>{removal});
  auto shown = f.ledger->operations().getOperation(removal);
  REQUIRE(shown.isOk());
  CHECK(shown->plan == "web");
  CHECK(shown->meta_instance == instance);
  CHECK(shown->state == model::OperationState::kSucceeded);
}

TEST_CASE("ledger: an operations state filter may list several states, matching any of them") {
  LedgerFixture f;
  const std::string instance = f.addInstance();
  const model::Operation create = f.addOperation(instance, "CREATE");
  auto teardown = f.ledger->plans().scalePlanToZero("web", teardownDelete(), "retire", "alice");
  REQUIRE(teardown.isOk());
  const int64_t removal = teardown->operations.at(0).meta.id;  // PENDING; the CREATE is CANCELLED
  auto ids = [&](const std::string& states) {
    ListOptions options;
    options.filters["state"] = states;
    auto page = f.ledger->operations().listOperations(options);
    REQUIRE_MESSAGE(page.isOk(), page.status().toString());
    std::vector<int64_t> found;
    for (const model::Operation& operation : page->items) found.push_back(operation.meta.id);
    return found;
  };
  CHECK(ids("PENDING") == std::vector<int64_t>{removal});
  CHECK(ids("CANCELLED") == std::vector<int64_t>{create.meta.id});
  CHECK(ids("CANCELLED,PENDING") == std::vector<int64_t>{create.meta.id, removal});
  CHECK(ids("FAILED,REJECTED").empty());
  CHECK(ids("PENDING,PENDING") == std::vector<int64_t>{removal});
}
