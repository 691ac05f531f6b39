// Draining a node (docs/architecture.md#draining-a-node) over a sim cluster
// (sim_test_support.h): each instance on a DRAINING node is relocated make-before-break,
// through approval as requested by whoever drained the node, and the empty node can be deleted.

#include "tests/engine/sim_test_support.h"

namespace tide {
namespace {

using testing::activeOn;
using testing::deploySimFleet;
using testing::EngineFixture;
using testing::relocations;

void drain(EngineFixture& f, const std::string& node, const std::string& by) {
  REQUIRE(f.ledger->inventory().setNodeState(node, model::NodeState::kDraining, std::nullopt, by).isOk());
}

TEST_CASE("drain: every instance on a DRAINING node moves elsewhere and the node can then be deleted") {
  EngineFixture f({"auto_approve_dev.lua"});
  deploySimFleet(f, 6, 3);
  f.engine->settle();
  REQUIRE(f.activeRunning().size() == 3);
  const model::RuntimeInstance before = f.activeRunning().front();
  const std::string node = before.node;
  CHECK(f.ledger->inventory().deleteNode(node, std::nullopt, "dora").code() == Code::kConflict);

  drain(f, node, "dora");
  CHECK(f.ledger->inventory().getNode(node)->drained_by == "dora");
  f.engine->settle();

  CHECK(activeOn(f, node).empty());
  REQUIRE(f.activeRunning().size() == 3);
  auto moved = relocations(f);
  REQUIRE(moved.size() == 1);
  CHECK(moved[0].meta_instance == before.meta_instance);
  CHECK(moved[0].state == model::OperationState::kSucceeded);
  CHECK(moved[0].requested_by == "dora");
  CHECK(moved[0].intent == "drain");
  auto old = f.ledger->instances().getRuntimeInstance(before.meta.id);
  REQUIRE(old.isOk());
  CHECK(old->state == model::RuntimeState::kTerminated);  // broken after the new one was made: make-before-break
  for (int pass = 0; pass < 3; ++pass) f.engine->runPass();
  CHECK(relocations(f).size() == 1);  // nothing more is asked of an empty DRAINING node
  CHECK(f.ledger->inventory().deleteNode(node, std::nullopt, "dora").isOk());
}

TEST_CASE("drain: the relocations wait for a person other than the one who drained, like any operation") {
  EngineFixture f;  // no policy: every operation waits for a person
  deploySimFleet(f, 4, 2);
  f.settleApproving();
  REQUIRE(f.activeRunning().size() == 2);
  const std::string node = f.activeRunning().front().node;

  drain(f, node, "dora");
  f.engine->settle();
  auto waiting = relocations(f);
  REQUIRE(waiting.size() == 1);
  CHECK(waiting[0].state == model::OperationState::kPendingApproval);
  CHECK(waiting[0].requested_by == "dora");
  CHECK(activeOn(f, node).size() == 1);  // nothing moves before the approval

  f.settleApproving();  // approved by alice
  CHECK(activeOn(f, node).empty());
  CHECK(f.activeRunning().size() == 2);
}

TEST_CASE("drain: when no other node fits, the relocation waits with its reason and moves once one does") {
  EngineFixture f({"auto_approve_dev.lua"});
  deploySimFleet(f, 2, 2);
  f.engine->settle();
  REQUIRE(f.activeRunning().size() == 2);

  drain(f, "sim-1", "dora");
  f.engine->settle();
  auto waiting = relocations(f);
  REQUIRE(waiting.size() == 1);
  CHECK(waiting[0].state == model::OperationState::kPending);
  CHECK(waiting[0].message.starts_with("waiting for placement: "));
  ledger::ListOptions o;
  o.filters["kind"] = "operation.unschedulable";
  CHECK(f.ledger->audit().listEvents(o)->items.size() >= 1);
  CHECK(activeOn(f, "sim-1").size() == 1);  // still serving where it was

  f.apply(
      "nodes:\n  - {name: sim-3, cluster: sim, update_domain: ud-1, total: {cores: 2, memory_gib: 4}, "
      "capabilities: [intel-xeon]}\n");
  f.engine->settle();
  CHECK(activeOn(f, "sim-1").empty());
  CHECK(activeOn(f, "sim-3").size() == 1);
  CHECK(relocations(f)[0].state == model::OperationState::kSucceeded);
}

}  // namespace
}  // namespace tide
