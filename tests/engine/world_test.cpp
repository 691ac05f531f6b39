// World::refresh (host/engine/world.h) against World::load: after every kind of change the
// control loop makes, the picture kept up to date from the change feed equals the picture
// read afresh from the ledger.

#include <doctest/doctest.h>

#include <sstream>

#include "host/engine/world.h"
#include "tests/ledger/ledger_test_util.h"

namespace tide {
namespace {

using engine::InstanceView;
using engine::World;
using engine::WorldFeed;
using testing::LedgerFixture;

std::string idOf(const model::RuntimeInstance* r) {
  return r ? std::to_string(r->meta.id) + ":" + model::toString(r->state) + (r->healthy ? "+" : "") : "-";
}

std::string idOf(const model::Operation* o) {
  return o ? std::to_string(o->meta.id) + ":" + model::toString(o->state) : "-";
}

std::string idOf(const std::optional<engine::OperationSummary>& o) {
  return o ? std::to_string(o->id) + ":" + model::toString(o->state) : "-";
}

// Everything the loop's decisions read from a World, as text, so a difference shows.
std::string describe(const World& w) {
  std::ostringstream out;
  for (const auto& p : w.plans) {
    out << "plan " << p.name << " " << p.state << " g" << p.meta.generation << " running " << w.runningInstances(p.name)
        << " instances";
    int64_t running = 0;
    for (const InstanceView* view : w.instancesOf(p.name)) {
      out << " " << view->meta.name;
      if (view->active && view->active->state == model::RuntimeState::kRunning) ++running;
    }
    out << "\n";
    CHECK(w.runningInstances(p.name) == running);  // counted as instances come and go, not walked
  }
  for (const auto& [plan, list] : w.deployments) {
    for (const auto& d : list) out << "deployment " << plan << "/" << d.deployment_id << " " << d.state << "\n";
  }
  for (const auto& n : w.nodes) {
    out << "node " << n.name << " " << n.state << " " << n.remaining.cores << "/" << n.remaining.memory_gib << "\n";
    CHECK(w.node_by_name.at(n.name) == &n);
  }
  for (const auto& [name, view] : w.instances) {
    out << "instance " << name << " " << view.meta.state << " " << view.meta.deployment_id << " active "
        << idOf(view.active ? &*view.active : nullptr) << " newest " << idOf(view.newest()) << " unfinished "
        << idOf(view.unfinished.get()) << " last "
        << idOf(view.last) << " passive";
    for (const auto& p : view.passive) out << " " << p.meta.id << ":" << p.state;
    out << "\n";
  }
  for (const auto* index : {&w.operating, &w.unplaced, &w.stopped_on_exit, &w.reserving}) {
    out << "index";
    for (const auto& name : *index) out << " " << name;
    out << "\n";
  }
  return out.str();
}

struct WorldFixture : LedgerFixture {
  WorldFeed feed{*ledger};
  std::optional<World> world;

  // The kept picture, refreshed, equals a fresh load.
  void checkInStep(const char* step) {
    CAPTURE(step);
    REQUIRE(feed.update(world).isOk());
    auto fresh = World::load(*ledger);
    REQUIRE(fresh.isOk());
    CHECK(describe(*world) == describe(*fresh));
    // The newest runtime is the active one most of the time, and is then not copied.
    for (const World* w : {&*world, &*fresh}) {
      for (const auto& [name, view] : w->instances) {
        if (view.active && view.active->meta.id == view.newest_id) CHECK(view.newest_other == nullptr);
      }
    }
  }

  model::RuntimeInstance runtimeOn(const std::string& node, bool active = true) {
    model::RuntimeInstance ri;
    ri.node = node;
    ri.is_active = active;
    ri.reservation = {4, 64};
    return ri;
  }
};

TEST_CASE("world: a picture refreshed from the change feed equals one loaded afresh, step by step") {
  WorldFixture f;
  f.addInventory();
  REQUIRE(f.ledger->plans().createPlan(LedgerFixture::plan(), "t").isOk());
  f.checkInStep("loaded with an empty fleet");
  REQUIRE(f.ledger->plans().addDeployment(LedgerFixture::deployment("d1", 3), "t").isOk());
  f.checkInStep("a deployment added");

  model::Operation create;
  create.type = model::OperationType::kCreate;
  create.intent = "d1";
  create.requested_by = "controller";
  std::vector<model::Operation> ops;
  {
    ledger::Ledger::Batch batch(*f.ledger);
    for (int i = 0; i < 3; ++i) {
      auto op = f.ledger->operations().createInstanceWithOperation("web", "d1", create, "controller");
      REQUIRE(op.isOk());
      ops.push_back(*op);
    }
  }
  f.checkInStep("three instances with their CREATE");

  std::vector<model::RuntimeInstance> runtimes;
  for (size_t i = 0; i < ops.size(); ++i) {
    model::RuntimeInstance instance = f.runtimeOn(i % 2 ? "node-a" : "node-b");
    instance.meta_instance = ops[i].meta_instance;
    auto r = f.ledger->instances().reserveForOperation(ops[i].meta.id, instance, "approval");
    REQUIRE_MESSAGE(r.isOk(), r.status().toString());
    runtimes.push_back(*r);
    REQUIRE(f.ledger
                ->operations().setOperationState(ops[i].meta.id, model::OperationState::kApproved, std::nullopt, "approval", "",
                                    "policy")
                .isOk());
  }
  f.checkInStep("reserved and approved: nodes' remaining resources fall");

  for (size_t i = 0; i < ops.size(); ++i) {
    REQUIRE(
        f.ledger->operations().setOperationState(ops[i].meta.id, model::OperationState::kRunning, std::nullopt, "executor").isOk());
    REQUIRE(
        f.ledger->instances().setRuntimeInstanceState(runtimes[i].meta.id, model::RuntimeState::kStarting, std::nullopt, "executor")
            .isOk());
    REQUIRE(
        f.ledger->instances().setRuntimeInstanceState(runtimes[i].meta.id, model::RuntimeState::kRunning, std::nullopt, "executor")
            .isOk());
    ledger::RuntimeUpdate healthy;
    healthy.healthy = true;
    REQUIRE(f.ledger->instances().updateRuntimeInstance(runtimes[i].meta.id, healthy, std::nullopt, "executor").isOk());
    REQUIRE(f.ledger->operations().setOperationState(ops[i].meta.id, model::OperationState::kSucceeded, std::nullopt, "executor")
                .isOk());
  }
  f.checkInStep("running and healthy");
  CHECK(f.world->runningInstances("web") == 3);

  // A failure releases the reservation; a relocation holds a passive instance beside the active one.
  REQUIRE(f.ledger->instances().setRuntimeInstanceState(runtimes[0].meta.id, model::RuntimeState::kFailed, std::nullopt, "observer")
              .isOk());
  model::Operation relocate;
  relocate.type = model::OperationType::kRelocate;
  relocate.intent = "user";
  relocate.requested_by = "alice";
  relocate.meta_instance = ops[1].meta_instance;
  auto moving = f.ledger->operations().createOperation(relocate, "alice");
  REQUIRE(moving.isOk());
  model::RuntimeInstance passive = f.runtimeOn("node-b", false);
  passive.meta_instance = ops[1].meta_instance;
  auto reserved = f.ledger->instances().reserveForOperation(moving->meta.id, passive, "approval");
  REQUIRE_MESSAGE(reserved.isOk(), reserved.status().toString());
  f.checkInStep("one failed, one relocating");

  REQUIRE(f.ledger->instances().setMetaInstanceState(ops[2].meta_instance, model::MetaState::kMarkedForDeletion, std::nullopt, "t")
              .isOk());
  REQUIRE(
      f.ledger->instances().setRuntimeInstanceState(runtimes[2].meta.id, model::RuntimeState::kStopping, std::nullopt, "executor")
          .isOk());
  REQUIRE(
      f.ledger->instances().setRuntimeInstanceState(runtimes[2].meta.id, model::RuntimeState::kTerminated, std::nullopt, "executor")
          .isOk());
  REQUIRE(f.ledger->instances().setMetaInstanceState(ops[2].meta_instance, model::MetaState::kDeleted, std::nullopt, "t").isOk());
  f.checkInStep("one deleted: it leaves the picture and its node's resources come back");
  CHECK(f.world->runningInstances("web") == 1);  // one failed, one deleted

  REQUIRE(f.ledger->inventory().setNodeState("node-a", model::NodeState::kCordoned, std::nullopt, "t").isOk());
  REQUIRE(f.ledger->inventory().createNode(LedgerFixture::node("node-c"), "t").isOk());
  f.checkInStep("inventory changed: a node cordoned and one added");

  REQUIRE(f.ledger->plans().setDeploymentState("web", "d1", model::DeploymentState::kInProgress, std::nullopt, "controller")
              .isOk());
  REQUIRE(f.ledger->plans().setRolloutState("web", "d1", {{"step", 2}}, std::nullopt, "controller").isOk());
  f.checkInStep("the deployment moved on");
  CHECK(f.feed.lastDirty() > 0);
  f.checkInStep("nothing changed since");
  CHECK(f.feed.lastDirty() == 0);
}

TEST_CASE("world: an instance's view stays small, since the host holds one per live instance") {
  // At 100,000 instances every 100 bytes of InstanceView are 10 MB of resident memory
  // (docs/performance.md#fleet-scale-where-tide-stands). It held the newest runtime and two operations inline once: 1,832
  // bytes, most of them for what a quiet instance does not have.
  CHECK(sizeof(InstanceView) <= 1024);
}

}  // namespace
}  // namespace tide
