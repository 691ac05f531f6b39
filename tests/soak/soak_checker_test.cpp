// The soak's referee (tests/soak/soak_checker.h): disagreements between a driver and the
// ledger, and operations that stop moving, count only once they outlast their allowance,
// and then exactly once.

#include "tests/soak/soak_checker.h"

#include <doctest/doctest.h>

#include "drivers/sim/sim_driver.h"
#include "tests/ledger/ledger_test_util.h"

namespace tide {
namespace {

using soak::CheckerLimits;
using soak::SoakChecker;
using std::chrono::milliseconds;
using testing::LedgerFixture;

constexpr milliseconds kAllowance{5000};

CheckerLimits limits() {
  CheckerLimits l;
  l.disagreement_allowance = kAllowance;
  l.stuck_after = kAllowance;
  return l;
}

struct RefereeFixture : LedgerFixture {
  drivers::SimDriver sim{drivers::SimOptions{}, clock};
  SoakChecker checker{*ledger, [this] { return soak::readInventory("local", sim); }, limits()};
  const soak::SteadyTime t0 = std::chrono::steady_clock::now();

  void startInDriver(const std::string& runtime_id, const std::string& node = "node-a") {
    drivers::RuntimeSpec spec;
    spec.id = runtime_id;
    spec.node = node;
    spec.meta_instance = "web-svc-x";
    spec.coordinates = {{"image", "nginx:1"}};
    REQUIRE(sim.ensure(spec).isOk());
  }

  // A runtime instance of meta instance `meta` RUNNING on node-a in the ledger, its CREATE
  // over; returns its id.
  int64_t runningInstance(const std::string& meta) {
    const model::Operation create = addOperation(meta);
    model::RuntimeInstance instance;
    instance.meta_instance = meta;
    instance.node = "node-a";
    instance.reservation = {4, 64};
    auto reserved = ledger->instances().reserveForOperation(create.meta.id, instance, "approval");
    REQUIRE_MESSAGE(reserved.isOk(), reserved.status().toString());
    const int64_t id = reserved->meta.id;
    REQUIRE(ledger->instances().setRuntimeInstanceState(id, model::RuntimeState::kStarting, std::nullopt, "executor").isOk());
    REQUIRE(ledger->instances().setRuntimeInstanceState(id, model::RuntimeState::kRunning, std::nullopt, "executor").isOk());
    REQUIRE(ledger->operations().setOperationState(create.meta.id, model::OperationState::kCancelled, std::nullopt, "test").isOk());
    return id;
  }

  std::vector<std::string> keys(const std::vector<soak::Finding>& findings) {
    std::vector<std::string> out;
    for (const auto& f : findings) out.push_back(f.key);
    return out;
  }
};

TEST_CASE("soak referee: a driver object without a reservation is a leak once it outlasts its allowance") {
  RefereeFixture f;
  f.addInventory();
  f.startInDriver("999");

  CHECK(f.checker.check(f.t0).empty());
  CHECK(f.checker.check(f.t0 + kAllowance).empty());
  CHECK(f.keys(f.checker.check(f.t0 + kAllowance + milliseconds(1))) == std::vector<std::string>{"leak local/999"});
  CHECK(f.checker.check(f.t0 + 2 * kAllowance).empty());  // reported once
  CHECK(f.checker.violations().size() == 1);
  CHECK(f.checker.rounds() == 4);
}

TEST_CASE("soak referee: a disagreement that clears before its allowance is no violation") {
  RefereeFixture f;
  f.addInventory();
  f.startInDriver("999");
  CHECK(f.checker.check(f.t0).empty());
  REQUIRE(f.sim.remove({"999", "node-a", ""}).isOk());
  CHECK(f.checker.check(f.t0 + milliseconds(1)).empty());
  f.startInDriver("999");  // back: its clock starts again
  CHECK(f.checker.check(f.t0 + kAllowance + milliseconds(1)).empty());
  CHECK(f.checker.violations().empty());
}

TEST_CASE("soak referee: a runtime RUNNING in the ledger that its driver does not hold is lost") {
  RefereeFixture f;
  const int64_t id = f.runningInstance(f.addInstance());

  f.startInDriver(std::to_string(id));
  CHECK(f.checker.check(f.t0).empty());
  CHECK(f.checker.check(f.t0 + 2 * kAllowance).empty());  // RUNNING in both: all is well
  REQUIRE(f.sim.remove({std::to_string(id), "node-a", ""}).isOk());
  CHECK(f.checker.check(f.t0 + 3 * kAllowance).empty());
  CHECK(f.keys(f.checker.check(f.t0 + 4 * kAllowance + milliseconds(1))) ==
        std::vector<std::string>{"lost " + std::to_string(id)});
}

TEST_CASE("soak referee: an operation that stays in one state past stuck_after is stuck, waiting for placement is not") {
  RefereeFixture f;
  const std::string meta = f.addInstance();
  const model::Operation create = f.addOperation(meta);
  auto waiting = f.ledger->instances().createMetaInstance("web", "d1", "test");
  REQUIRE(waiting.isOk());
  const model::Operation placing = f.addOperation(waiting->name);
  ledger::OperationUpdate update;
  update.message = "waiting for placement: no node fits";
  REQUIRE(f.ledger->operations().updateOperation(placing.meta.id, update, "approval").isOk());

  CHECK(f.checker.check(f.t0).empty());
  CHECK(f.checker.waitingForPlacement() == 1);
  const auto stuck = f.checker.check(f.t0 + kAllowance + milliseconds(1));
  REQUIRE(stuck.size() == 1);
  CHECK(stuck[0].key == "stuck " + std::to_string(create.meta.id) + " PENDING 0");
  CHECK(stuck[0].what.find(meta) != std::string::npos);

  // Moving on (a new state) starts its clock again.
  REQUIRE(f.ledger->operations().setOperationState(create.meta.id, model::OperationState::kPendingApproval, std::nullopt, "approval")
              .isOk());
  CHECK(f.checker.check(f.t0 + kAllowance + milliseconds(2)).empty());
  CHECK(f.checker.currentFindings().size() == 1);  // at the end, unfinished is unfinished
}

TEST_CASE("soak referee: an operation failed by a transition another writer made impossible is a race, at once") {
  RefereeFixture f;
  const std::string meta = f.addInstance();
  const model::Operation raced = f.addOperation(meta);
  REQUIRE(f.ledger
              ->operations().setOperationState(raced.meta.id, model::OperationState::kFailed, std::nullopt, "executor",
                                  "attempt 1: runtime/45: runtime_instance cannot move from FAILED to RUNNING "
                                  "(allowed from FAILED: TERMINATED)")
              .isOk());
  auto other = f.ledger->instances().createMetaInstance("web", "d1", "test");
  REQUIRE(other.isOk());
  const model::Operation failed = f.addOperation(other->name);
  REQUIRE(f.ledger
              ->operations().setOperationState(failed.meta.id, model::OperationState::kFailed, std::nullopt, "executor",
                                  "attempt 5: unavailable")
              .isOk());

  CHECK(f.keys(f.checker.check(f.t0)) == std::vector<std::string>{"race " + std::to_string(raced.meta.id)});
  CHECK(f.checker.check(f.t0 + milliseconds(1)).empty());  // reported once
}

TEST_CASE("soak referee: a RUNNING instance found gone from its driver was removed underfoot, a violation at once") {
  RefereeFixture f;
  const int64_t removed = f.runningInstance(f.addInstance());
  auto other = f.ledger->instances().createMetaInstance("web", "d1", "test");
  REQUIRE(other.isOk());
  const int64_t crashed = f.runningInstance(other->name);
  REQUIRE(f.ledger
              ->instances().setRuntimeInstanceState(removed, model::RuntimeState::kFailed, std::nullopt, "observer",
                                        "the driver does not know it")
              .isOk());
  REQUIRE(f.ledger
              ->instances().setRuntimeInstanceState(crashed, model::RuntimeState::kFailed, std::nullopt, "observer",
                                        "exited with code 137")
              .isOk());

  CHECK(f.keys(f.checker.check(f.t0)) == std::vector<std::string>{"removed runtime/" + std::to_string(removed)});
  CHECK(f.checker.check(f.t0 + milliseconds(1)).empty());  // each event is read once
}

}  // namespace
}  // namespace tide
