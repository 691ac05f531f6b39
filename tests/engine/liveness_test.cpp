// Losing a node (docs/architecture.md#losing-a-node) over a sim cluster whose driver names
// the nodes a test says it cannot reach (sim_test_support.h CountingDriver::unreachable):
// their instances are not judged, nothing is placed there, they are relocated after
// replace_after, and a partition holds all of it with an alarm.

#include <filesystem>
#include <fstream>

#include "host/api/views.h"
#include "tests/engine/sim_test_support.h"

namespace tide {
namespace {

using testing::activeOn;
using testing::CountingDriver;
using testing::deploySimFleet;
using testing::EngineFixture;
using testing::events;
using testing::relocations;

constexpr std::chrono::seconds kReplaceAfter{60};

// `driver` cannot reach `nodes` from now on (since the clock's now), and reaches the others.
void loseNodes(EngineFixture& f, CountingDriver& driver, const std::vector<std::string>& nodes) {
  driver.unreachable.clear();
  for (const auto& node : nodes) driver.unreachable.push_back({node, f.clock.now()});
}

// A fleet of `nodes` sim nodes running deployment v1 of `instances`, COMPLETED.
CountingDriver& runningFleet(EngineFixture& f, int nodes, int instances) {
  CountingDriver& driver = deploySimFleet(f, nodes, instances);
  f.engine->settle();
  REQUIRE(f.activeRunning().size() == static_cast<size_t>(instances));
  REQUIRE(f.deployment("v1").state == model::DeploymentState::kCompleted);
  return driver;
}

TEST_CASE("liveness: an unreachable node's instances are not failed, their health is unknown until it is back") {
  EngineFixture f({"auto_approve_dev.lua"});
  CountingDriver& driver = runningFleet(f, 3, 2);
  const model::RuntimeInstance lost = f.activeRunning().front();
  // What the driver says of it no longer counts: it says the instance is gone.
  REQUIRE(driver.remove({std::to_string(lost.meta.id), lost.node, lost.driver_handle}).isOk());
  loseNodes(f, driver, {lost.node});
  f.engine->settle();

  auto seen = f.ledger->instances().getRuntimeInstance(lost.meta.id);
  REQUIRE(seen.isOk());
  CHECK(seen->state == model::RuntimeState::kRunning);
  CHECK_FALSE(seen->healthy);
  CHECK(seen->message.rfind("node " + lost.node + " unreachable since ", 0) == 0);
  CHECK_FALSE(f.engine->halted());
  auto unreachable = events(f, "node.unreachable");
  REQUIRE(unreachable.size() == 1);
  CHECK(unreachable[0].subject == "node/" + lost.node);
  CHECK(relocations(f).empty());  // before replace_after, nothing is replaced
  CHECK(f.engine->metrics().render().find("tide_unreachable_nodes 1\n") != std::string::npos);

  // It comes back, running the instance after all.
  driver.unreachable.clear();
  drivers::RuntimeSpec spec;
  spec.id = std::to_string(lost.meta.id);
  spec.meta_instance = lost.meta_instance;
  spec.node = lost.node;
  spec.payload_name = "web";
  REQUIRE(driver.ensure(spec).isOk());
  f.engine->settle();
  CHECK(events(f, "node.reachable").size() == 1);
  CHECK(events(f, "node.unreachable").size() == 1);  // once per change
  seen = f.ledger->instances().getRuntimeInstance(lost.meta.id);
  REQUIRE(seen.isOk());
  CHECK(seen->state == model::RuntimeState::kRunning);
  CHECK(seen->healthy);  // the driver's word again
  CHECK(seen->message.empty());
  CHECK(f.engine->metrics().render().find("tide_unreachable_nodes 0\n") != std::string::npos);
}

TEST_CASE("liveness: nothing is placed on an unreachable node") {
  EngineFixture f({"auto_approve_dev.lua"});
  f.apply(std::string(testing::kSimCapabilities) + testing::simCluster("sim", 3));
  CountingDriver& driver = testing::installCountingSim(f, "sim");
  loseNodes(f, driver, {"sim-1"});
  f.apply(testing::kSimPlan);
  f.apply(testing::engineDeployment("v1", 3, "1"));
  f.engine->settle();

  CHECK(activeOn(f, "sim-1").empty());
  CHECK(f.activeRunning().size() == 2);  // a node fits one instance
  auto waiting = f.operations("PENDING");
  REQUIRE(waiting.size() == 1);
  CHECK(waiting[0].message.find("UNREACHABLE") != std::string::npos);

  driver.unreachable.clear();
  f.engine->settle();
  CHECK(activeOn(f, "sim-1").size() == 1);
  CHECK(f.activeRunning().size() == 3);
}

TEST_CASE(
    "liveness: after replace_after an unreachable node's instances are relocated and the deployment stays "
    "COMPLETED") {
  EngineFixture f({"auto_approve_dev.lua"});
  CountingDriver& driver = runningFleet(f, 3, 2);
  const model::RuntimeInstance lost = f.activeRunning().front();
  loseNodes(f, driver, {lost.node});
  f.engine->settle();
  f.clock.advance(kReplaceAfter - std::chrono::seconds(5));
  f.engine->settle();
  CHECK(relocations(f).empty());

  f.clock.advance(std::chrono::seconds(5));
  f.engine->settle();
  auto moved = relocations(f);
  REQUIRE(moved.size() == 1);
  CHECK(moved[0].meta_instance == lost.meta_instance);
  CHECK(moved[0].state == model::OperationState::kSucceeded);
  CHECK(moved[0].intent == "unreachable");
  CHECK(moved[0].requested_by == "controller");
  CHECK(activeOn(f, lost.node).empty());
  CHECK(f.activeRunning().size() == 2);
  CHECK(f.deployment("v1").state == model::DeploymentState::kCompleted);
  auto old = f.ledger->instances().getRuntimeInstance(lost.meta.id);
  REQUIRE(old.isOk());
  CHECK(old->state == model::RuntimeState::kTerminated);
  for (int pass = 0; pass < 3; ++pass) f.engine->runPass();
  CHECK(relocations(f).size() == 1);  // nothing more is asked of the lost node
}

TEST_CASE("liveness: most nodes lost at once are a partition: an alarm, and nothing is replaced until it ends") {
  EngineFixture f({"auto_approve_dev.lua"});
  CountingDriver& driver = runningFleet(f, 3, 2);
  loseNodes(f, driver, {"sim-1", "sim-2"});
  f.engine->settle();
  f.clock.advance(kReplaceAfter * 2);
  f.engine->settle();

  CHECK(relocations(f).empty());
  auto alarms = events(f, "alarm.partition");
  REQUIRE(alarms.size() == 1);
  CHECK(alarms[0].data["nodes"] == model::Json::array({"sim-1", "sim-2"}));
  const std::string metrics = f.engine->metrics().render();
  CHECK(metrics.find("tide_partition_alarm 1\n") != std::string::npos);
  CHECK(metrics.find("tide_unreachable_nodes 2\n") != std::string::npos);
  auto control = api::controlLoopView(*f.ledger);
  REQUIRE(control.isOk());
  CHECK((*control)["partition"]["nodes"] == model::Json::array({"sim-1", "sim-2"}));
  CHECK((*control)["halted"] == false);

  // One comes back: one lost node of three is no partition, and the other is replaced.
  driver.unreachable.erase(driver.unreachable.begin());  // sim-1
  REQUIRE(driver.unreachable.front().node == "sim-2");
  f.engine->settle();
  CHECK(events(f, "alarm.partition").size() == 1);  // raised once
  auto cleared = events(f, "alarm.cleared");
  REQUIRE(cleared.size() == 1);
  CHECK(cleared[0].subject == "partition");
  control = api::controlLoopView(*f.ledger);
  REQUIRE(control.isOk());
  CHECK((*control)["partition"].is_null());
  CHECK(f.engine->metrics().render().find("tide_partition_alarm 0\n") != std::string::npos);
  CHECK(activeOn(f, "sim-2").empty());
  CHECK(f.activeRunning().size() == 2);
}

TEST_CASE("liveness: nodes lost further apart than partition_window are no partition, and each is replaced") {
  EngineFixture f({"auto_approve_dev.lua"});
  CountingDriver& driver = runningFleet(f, 3, 2);
  // sim-2 serves one instance whatever the placement (the only node of ud-1).
  REQUIRE(activeOn(f, "sim-2").size() == 1);
  const std::string on_sim2 = activeOn(f, "sim-2").front().meta_instance;
  loseNodes(f, driver, {"sim-2"});
  f.engine->settle();
  f.clock.advance(kReplaceAfter * 2);
  driver.unreachable.push_back({"sim-1", f.clock.now()});
  f.engine->settle();

  CHECK(events(f, "alarm.partition").empty());
  auto moved = relocations(f);
  REQUIRE(moved.size() == 1);
  CHECK(moved[0].meta_instance == on_sim2);  // placed on sim-3 if free, else waiting: sim-1 is lost too
}

TEST_CASE("liveness: a lost node's RELOCATE that a policy rejected is not asked again") {
  EngineFixture f({"auto_approve_dev.lua"});
  std::ofstream(f.dir.path() / "policies" / "keep_lost.lua") << R"(
return {
  name = "keep-lost",
  description = "A person decides what happens to the instances of a lost node.",
  level = "hard",
  decide = function(op, ctx)
    if op.intent == "unreachable" then return deny("a person decides") end
    return abstain()
  end,
}
)";
  REQUIRE(f.scripts->reloadAll().failed == 0);
  CountingDriver& driver = runningFleet(f, 3, 2);
  const model::RuntimeInstance lost = f.activeRunning().front();
  loseNodes(f, driver, {lost.node});
  f.engine->settle();
  f.clock.advance(kReplaceAfter);
  f.engine->settle();
  auto refused = relocations(f);
  REQUIRE(refused.size() == 1);
  CHECK(refused[0].state == model::OperationState::kRejected);

  for (int pass = 0; pass < 3; ++pass) f.engine->runPass();
  CHECK(relocations(f).size() == 1);
  CHECK(activeOn(f, lost.node).size() == 1);  // it waits for a person
}

// Two nodes, one instance on each: an instance of a lost node has nowhere to go, so its
// RELOCATE waits for placement. Returns the instance on sim-1 and its RELOCATE.
std::pair<std::string, model::Operation> relocationWaitingForRoom(EngineFixture& f, CountingDriver& driver) {
  REQUIRE(activeOn(f, "sim-1").size() == 1);
  const std::string stranded = activeOn(f, "sim-1").front().meta_instance;
  loseNodes(f, driver, {"sim-1"});
  f.engine->settle();
  f.clock.advance(kReplaceAfter);
  f.engine->settle();
  auto moved = relocations(f);
  REQUIRE(moved.size() == 1);
  REQUIRE(moved[0].meta_instance == stranded);
  REQUIRE(moved[0].state == model::OperationState::kPending);
  REQUIRE(moved[0].message.rfind("waiting for placement: ", 0) == 0);
  return {stranded, moved[0]};
}

// The node is back: the RELOCATE that never started is withdrawn with its reason, the
// instance stays where it runs, and deployment v2 rolls out over every instance.
void checkWithdrawnAndRolledOut(EngineFixture& f, const std::string& stranded, int64_t relocate) {
  const model::Operation withdrawn = *f.ledger->operations().getOperation(relocate);
  CHECK(withdrawn.state == model::OperationState::kCancelled);
  INFO(withdrawn.message);
  CHECK(withdrawn.message.find("sim-1 is reachable again") != std::string::npos);
  bool said = false;
  for (const auto& e : events(f, "operation.state")) {
    said |= e.subject == "operation/" + std::to_string(relocate) && e.data.value("to", "") == "CANCELLED" &&
            e.data.value("message", "") == withdrawn.message && e.actor == "controller";
  }
  CHECK(said);
  CHECK(activeOn(f, "sim-1").size() == 1);
  CHECK(activeOn(f, "sim-1").front().meta_instance == stranded);

  f.apply(testing::engineDeployment("v2", 2, "2"));
  f.engine->settle();
  CHECK(f.deployment("v2").state == model::DeploymentState::kCompleted);
  for (const auto& r : f.activeRunning()) CHECK(r.coordinates.dump().find("nginx:2") != std::string::npos);
  CHECK(relocations(f).size() == 1);  // nothing more is asked of the node that came back
  CHECK(f.ledger->checkInvariants()->empty());
}

TEST_CASE("liveness: a lost node's RELOCATE that never started is withdrawn when the node is back, not left PENDING") {
  EngineFixture f({"auto_approve_dev.lua"});
  CountingDriver& driver = runningFleet(f, 2, 2);
  const auto [stranded, relocate] = relocationWaitingForRoom(f, driver);

  driver.unreachable.clear();
  f.engine->settle();
  checkWithdrawnAndRolledOut(f, stranded, relocate.meta.id);
}

TEST_CASE(
    "liveness: a lost node's RELOCATE whose instance died meanwhile is withdrawn, and the instance started again") {
  EngineFixture f({"auto_approve_dev.lua"});
  CountingDriver& driver = runningFleet(f, 2, 2);
  const auto [stranded, relocate] = relocationWaitingForRoom(f, driver);
  const model::RuntimeInstance died = activeOn(f, "sim-1").front();
  REQUIRE(driver.remove({std::to_string(died.meta.id), died.node, died.driver_handle}).isOk());

  driver.unreachable.clear();
  f.engine->settle();
  const model::Operation withdrawn = *f.ledger->operations().getOperation(relocate.meta.id);
  CHECK(withdrawn.state == model::OperationState::kCancelled);
  CHECK(withdrawn.message == stranded + " no longer runs: there is nothing to relocate");
  CHECK(f.ledger->instances().getRuntimeInstance(died.meta.id)->state == model::RuntimeState::kFailed);
  // Repaired like any instance whose process died: started again, on the node free for it.
  REQUIRE(activeOn(f, "sim-1").size() == 1);
  CHECK(activeOn(f, "sim-1").front().meta_instance == stranded);
  CHECK(f.activeRunning().size() == 2);
}

TEST_CASE("liveness: a host restarted while a node is lost keeps its RELOCATE waiting, and withdraws it once back") {
  EngineFixture f({"auto_approve_dev.lua"});
  CountingDriver& driver = runningFleet(f, 2, 2);
  const auto [stranded, relocate] = relocationWaitingForRoom(f, driver);

  // A new host, whose drivers have not heard from sim-1 yet: a node agent's driver counts an
  // agent silent since the start as reachable until its heartbeat TTL, but cannot say how
  // its instances are (the status of each is unavailable).
  f.engine.reset();
  driver.unreachable.clear();
  driver.before_call = [](const std::string& call, const std::string&) {
    return call == "status_all" ? Status::unavailable("not heard from since the start") : Status::ok();
  };
  engine::EngineOptions options = EngineFixture::fastOptions();
  options.hooks_output_dir = f.hooksOutputDir();
  f.engine = std::make_unique<engine::Engine>(*f.ledger, *f.scripts, *f.drivers, f.clock, options);
  f.engine->settle();
  CHECK(f.ledger->operations().getOperation(relocate.meta.id)->state ==
        model::OperationState::kPending);  // nobody has seen it run since

  // Still lost after the heartbeat TTL: it keeps waiting for room.
  loseNodes(f, driver, {"sim-1"});
  f.clock.advance(kReplaceAfter);
  f.engine->settle();
  CHECK(f.ledger->operations().getOperation(relocate.meta.id)->state == model::OperationState::kPending);
  CHECK(relocations(f).size() == 1);

  // Back, and its instance answers again.
  driver.unreachable.clear();
  driver.before_call = nullptr;
  f.engine->settle();
  checkWithdrawnAndRolledOut(f, stranded, relocate.meta.id);
}

}  // namespace
}  // namespace tide
