// OperationRecords::unfinishedOperations: the operation waiting or under way on each of a page of meta
// instances, what the instance list shows.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "host/ledger/ledger.h"
#include "tests/ledger/ledger_test_util.h"
#include "tests/support/vocabulary.h"

using namespace tide;
using tide::testing::LedgerFixture;

TEST_CASE("ledger: unfinishedOperations names the operation each asked instance waits on or runs") {
  LedgerFixture f;
  const std::string first = f.addInstance();
  std::vector<std::string> names = {first};
  for (int i = 0; i < 3; ++i) names.push_back(f.ledger->instances().createMetaInstance("web", "d1", "test")->name);
  auto operationOn = [&](const std::string& instance, const std::string& type) {
    model::Operation operation;
    operation.meta_instance = instance;
    operation.type = tide::testing::parsed<model::OperationType>(type);
    operation.intent = "d1";
    auto created = f.ledger->operations().createOperation(operation, "test");
    REQUIRE(created.isOk());
    return created->meta.id;
  };
  auto moveTo = [&](int64_t id, std::initializer_list<const char*> states) {
    for (const char* state : states) {
      REQUIRE(f.ledger->operations()
                  .setOperationState(id, tide::testing::parsed<model::OperationState>(state), std::nullopt, "test")
                  .isOk());
    }
  };
  // names[0]: one CREATE that SUCCEEDED, then a STOP under way.
  moveTo(operationOn(names[0], "CREATE"), {"APPROVED", "RUNNING", "SUCCEEDED"});
  const int64_t stopping = operationOn(names[0], "STOP");
  moveTo(stopping, {"APPROVED", "RUNNING"});
  // names[1]: a CREATE waiting for a person. names[2]: a CREATE rejected. names[3]: nothing.
  const int64_t waiting = operationOn(names[1], "CREATE");
  moveTo(waiting, {"PENDING_APPROVAL"});
  moveTo(operationOn(names[2], "CREATE"), {"REJECTED"});

  std::vector<int64_t> ids;
  for (const std::string& name : names) ids.push_back(f.ledger->instances().getMetaInstance(name)->meta.id);
  auto unfinished = f.ledger->operations().unfinishedOperations(ids);
  REQUIRE(unfinished.isOk());
  REQUIRE(unfinished->size() == 2);
  CHECK((*unfinished)[0].meta.id == stopping);
  CHECK((*unfinished)[0].meta_instance == names[0]);
  CHECK((*unfinished)[0].state == model::OperationState::kRunning);
  CHECK((*unfinished)[1].meta.id == waiting);
  CHECK((*unfinished)[1].plan == "web");

  // Only the instances asked about.
  auto one = f.ledger->operations().unfinishedOperations({ids[1]});
  REQUIRE(one.isOk());
  REQUIRE(one->size() == 1);
  CHECK(one->front().meta.id == waiting);
  CHECK(f.ledger->operations().unfinishedOperations({})->empty());
}
