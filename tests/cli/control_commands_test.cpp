// `tide resume` and how the CLI shows the control loop's halt (`tide deployment show`) and a
// draining node's progress (`tide node show`), against a live API server.

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_test_support.h"

namespace tide {
namespace {

using Json = nlohmann::json;
using testing::CliRun;
using testing::contains;
using testing::example;
using testing::LiveServer;

TEST_CASE("cli: deployment show warns of a halted control loop and tide resume ends the halt") {
  LiveServer live;
  REQUIRE(live.run({"node", "create", "-m", example("nodes.yaml")}).code == 0);
  REQUIRE(live.run({"deployment", "create", "-m", example("nginx-plan.yaml")}).code == 0);
  CHECK_FALSE(contains(live.run({"deployment", "show", "nginx-deployment-plan"}).out, "HALTED"));
  CliRun not_halted = live.run({"resume"});
  CHECK(not_halted.code == 1);
  CHECK(contains(not_halted.err, "the control loop is not halted"));

  REQUIRE(live.ledger
              ->audit().haltControlLoop("alarm.discrepancy", "6 running instances disagree with their drivers", Json::object(),
                                "observer")
              .isOk());
  CliRun show = live.run({"deployment", "show", "nginx-deployment-plan"});
  REQUIRE_MESSAGE(show.code == 0, show.err);
  CHECK(show.out.starts_with("Control Loop HALTED\n"));
  CHECK(contains(show.out, "6 running instances disagree with their drivers\n"));
  CHECK(contains(show.out, "Nothing is changed until an admin runs: tide resume\n"));
  Json view = Json::parse(live.run({"deployment", "show", "nginx-deployment-plan", "-o", "json"}).out);
  CHECK(view["control_loop"]["halted"] == true);

  CliRun resumed = live.run({"resume"});
  REQUIRE_MESSAGE(resumed.code == 0, resumed.err);
  CHECK(resumed.out.starts_with("Control loop resumed (halted since "));
  CHECK_FALSE(live.ledger->audit().controlHalt()->has_value());
  CHECK_FALSE(contains(live.run({"deployment", "show", "nginx-deployment-plan"}).out, "HALTED"));
}

TEST_CASE("cli: node show of a draining node shows who drained it and what is left on it") {
  LiveServer live;
  REQUIRE(live.run({"node", "create", "-m", example("nodes.yaml")}).code == 0);
  REQUIRE(live.run({"deployment", "create", "-m", example("nginx-plan.yaml")}).code == 0);
  REQUIRE(live.run({"deployment", "add-deployment", "-m", example("deployment-1.yaml")}).code == 0);
  auto meta = live.ledger->instances().createMetaInstance("nginx-deployment-plan", "deployment-1", "test");
  REQUIRE(meta.isOk());
  model::RuntimeInstance runtime;
  runtime.meta_instance = meta->name;
  runtime.node = "kind-worker";
  runtime.reservation = {4, 64};
  auto created = live.ledger->instances().createRuntimeInstance(runtime, "test");
  REQUIRE(created.isOk());

  CliRun drained = live.run({"node", "drain", "kind-worker"});
  CHECK(drained.out == "Node kind-worker: DRAINING\n");
  CliRun show = live.run({"node", "show", "kind-worker"});
  REQUIRE_MESSAGE(show.code == 0, show.err);
  CHECK(contains(show.out, "Drain\n"));
  CHECK(contains(show.out, "Drained By:"));
  CHECK(contains(show.out, "bootstrap-admin"));
  CHECK(contains(show.out, "Instances Left:"));
  CHECK(contains(show.out, meta->name));
  Json json = Json::parse(live.run({"node", "show", "kind-worker", "-o", "json"}).out);
  CHECK(json["drain"]["instances_left"] == 1);

  REQUIRE(live.ledger->instances().setRuntimeInstanceState(created->meta.id, model::RuntimeState::kFailed, std::nullopt, "test")
              .isOk());
  CHECK(contains(live.run({"node", "show", "kind-worker"}).out, "The node is empty: it can be deleted\n"));
  CHECK(live.run({"node", "delete", "kind-worker"}).out == "Node kind-worker deleted\n");
}

}  // namespace
}  // namespace tide
