// The ledger as the source of policies' ctx.* answers.

#include <doctest/doctest.h>

#include "host/engine/policy_data_source.h"
#include "tests/ledger/ledger_test_util.h"
#include "tests/support/vocabulary.h"

using namespace tide;
using tide::testing::LedgerFixture;
using Json = nlohmann::json;

namespace {

// Three meta instances of plan "web": the first placed on node-a (ud-1), the second on
// node-c (ud-2), the third not placed. Each gets one operation, moved to `states`.
struct BridgeFixture : LedgerFixture {
  std::vector<int64_t> operations;

  explicit BridgeFixture(const std::vector<std::string>& states) {
    addInventory();
    model::Node c = node("node-c");
    c.update_domain = "ud-2";
    REQUIRE(ledger->inventory().createNode(c, "test").isOk());
    REQUIRE(ledger->plans().createPlan(plan(), "test").isOk());
    REQUIRE(ledger->plans().addDeployment(deployment("d1", 3), "test").isOk());
    const char* nodes[] = {"node-a", "node-c", nullptr};
    for (size_t i = 0; i < states.size(); ++i) {
      auto meta = ledger->instances().createMetaInstance("web", "d1", "test");
      REQUIRE(meta.isOk());
      if (i < 3 && nodes[i] != nullptr) {
        model::RuntimeInstance ri;
        ri.meta_instance = meta->name;
        ri.node = nodes[i];
        ri.reservation = {1, 1};
        REQUIRE(ledger->instances().createRuntimeInstance(ri, "test").isOk());
      }
      model::Operation op;
      op.meta_instance = meta->name;
      op.type = model::OperationType::kCreate;
      op.intent = "d1";
      auto created = ledger->operations().createOperation(op, "test");
      REQUIRE_MESSAGE(created.isOk(), created.status().toString());
      operations.push_back(created->meta.id);
      moveTo(created->meta.id, states[i]);
    }
  }

  void moveTo(int64_t id, const std::string& state) {
    std::vector<std::string> path;
    if (state == "APPROVED") path = {"APPROVED"};
    if (state == "RUNNING") path = {"APPROVED", "RUNNING"};
    if (state == "FAILED") path = {"APPROVED", "RUNNING", "FAILED"};
    if (state == "PENDING_APPROVAL") path = {"PENDING_APPROVAL"};
    for (const std::string& s : path) {
      REQUIRE(ledger->operations().setOperationState(id, testing::parsed<model::OperationState>(s), std::nullopt, "test").isOk());
    }
  }
};

}  // namespace

TEST_CASE("wire: ledger data source counts operations by state, plan, node and update domain") {
  BridgeFixture f({"RUNNING", "APPROVED", "PENDING_APPROVAL"});
  engine::LedgerPolicyDataSource data(*f.ledger, f.clock);

  CHECK(*data.inFlight(Json::object()) == 2);
  CHECK(*data.inFlight({{"plan", "web"}}) == 2);
  CHECK(*data.inFlight({{"plan", "other"}}) == 0);
  CHECK(*data.inFlight({{"namespace", "web-ns"}}) == 2);
  CHECK(*data.inFlight({{"namespace", "prod"}}) == 0);
  CHECK(*data.inFlight({{"update_domain", "ud-1"}}) == 1);
  CHECK(*data.inFlight({{"update_domain", "ud-2"}}) == 1);
  CHECK(*data.inFlight({{"node", "node-c"}}) == 1);
  CHECK(*data.inFlight({{"type", "DELETE"}}) == 0);

  CHECK(*data.count(Json::object()) == 3);
  CHECK(*data.count({{"state", "PENDING_APPROVAL"}}) == 1);
  CHECK(*data.count({{"state", {"RUNNING", "APPROVED"}}}) == 2);

  // The operation being decided is not counted.
  engine::LedgerPolicyDataSource deciding(*f.ledger, f.clock, f.operations[0]);
  CHECK(*deciding.inFlight(Json::object()) == 1);
  CHECK(*deciding.count(Json::object()) == 2);
}

TEST_CASE("wire: ledger data source counts failures within the window") {
  BridgeFixture f({"FAILED", "RUNNING"});
  engine::LedgerPolicyDataSource data(*f.ledger, f.clock);
  CHECK(*data.recentFailures(Json::object()) == 1);
  CHECK(*data.recentFailures({{"update_domain", "ud-1"}}) == 1);
  CHECK(*data.recentFailures({{"update_domain", "ud-2"}}) == 0);
  f.clock.advance(std::chrono::hours(2));
  CHECK(*data.recentFailures(Json::object()) == 0);
  CHECK(*data.recentFailures({{"seconds", 3 * 3600}}) == 1);
}

TEST_CASE("wire: ledger data source lists a plan's instances and looks up nodes") {
  BridgeFixture f({"RUNNING", "PENDING", "PENDING"});
  engine::LedgerPolicyDataSource data(*f.ledger, f.clock);
  Json instances = *data.instances("web");
  REQUIRE(instances.size() == 3);
  int placed = 0;
  for (const Json& i : instances) {
    CHECK(i["deployment_id"] == "d1");
    if (!i["node"].is_null()) ++placed;
  }
  CHECK(placed == 2);
  CHECK(instances[0]["name"].get<std::string>() < instances[1]["name"].get<std::string>());
  CHECK(data.instances("nope")->empty());

  Json node = *data.node("node-c");
  CHECK(node["update_domain"] == "ud-2");
  CHECK(node["cluster"] == "local");
  CHECK(data.node("missing")->is_null());
}
