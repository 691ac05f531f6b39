// Plans with several applications (docs/architecture.md#applications), through the whole
// control loop on the process driver: each instance runs every application, each judged by its
// own health check, rolled out together, restarted whole when one of them dies.
#include <doctest/doctest.h>
#include <signal.h>

#include <string>

#include "drivers/application_group.h"
#include "tests/drivers/container_test_support.h"
#include "tests/engine/engine_test_support.h"
#include "tests/engine/sim_test_support.h"

namespace tide {
namespace {

using tide::testing::EngineFixture;
using tide::testing::eventually;
using tide::testing::httpGet;
using tide::testing::kEngineNodes;

// A dev plan (auto-approved) of two applications: `web` (tide workload as nginx, port 80) and
// `shipper` (tide workload on port 9100), which starts after web.
const char* kTwoApplicationPlan = R"(
plans:
  - name: web
    namespace: web-dev
    service_name: web
    matching_capabilities: [{type: CPU, comparator: EQ, names: [intel-xeon]}]
    applications:
      - payload_name: shipper
        resources: {cores: 1, memory_gib: 1}
        ports: [{protocol: TCP, port: 9100}]
        health_check: {type: http, port: 9100, path: /healthz, interval_seconds: 0.2, timeout_seconds: 1}
        depends_on: [web]
      - payload_name: web
        resources: {cores: 2, memory_gib: 4}
        ports: [{protocol: TCP, port: 80}]
        health_check: {type: http, port: 80, path: /healthz, interval_seconds: 0.2, timeout_seconds: 1}
)";

std::string twoApplicationDeployment(const std::string& id, const std::string& tag) {
  return "deployments:\n  - plan: web\n    deployment_id: " + id +
         "\n    instance_count: 2\n    payload_coordinates:\n"
         "      - {payload_name: web, coordinates: {image: \"nginx:" +
         tag +
         "\"}}\n"
         "      - {payload_name: shipper, coordinates: {command: [\"{{tide}}\", workload, --listen, "
         "\"127.0.0.1:{{port.tcp.9100}}\", --version, \"shipper-" +
         tag + "\"]}}\n";
}

int portOf(const model::RuntimeInstance& r, const std::string& key) { return r.ports.value(key, 0); }

// The process fleet, the two-application plan and its deployment d1 (tag 1.0), settled.
void startTwoApplications(EngineFixture& f) {
  f.apply(kEngineNodes);
  f.apply(kTwoApplicationPlan);
  f.apply(twoApplicationDeployment("d1", "1.0"));
  f.engine->settle();
}

TEST_CASE("engine: every application of a plan runs in each instance, each judged by its own health check") {
  EngineFixture f({"auto_approve_dev.lua"});
  startTwoApplications(f);

  auto running = f.activeRunning();
  REQUIRE(running.size() == 2);
  CHECK(f.deployment("d1").state == model::DeploymentState::kCompleted);
  for (const auto& r : running) {
    CHECK(r.healthy);
    CHECK(r.driver_handle.rfind("apps: web=", 0) == 0);  // web starts first: shipper depends on it
    CHECK(httpGet(portOf(r, "tcp/80"), "/version").find("1.0") != std::string::npos);
    CHECK(httpGet(portOf(r, "tcp/9100"), "/version").find("shipper-1.0") != std::string::npos);
    // Each application's log, by name; the instance's alone names them.
    auto log = engine::readMetaInstanceLog(*f.ledger, *f.drivers, r.meta_instance, "shipper", std::nullopt, 4096);
    CHECK_MESSAGE(log.isOk(), log.status().toString());
    auto whole = engine::readMetaInstanceLog(*f.ledger, *f.drivers, r.meta_instance, "", std::nullopt, 4096);
    CHECK(whole.status().code() == Code::kInvalidArgument);
    auto unknown = engine::readMetaInstanceLog(*f.ledger, *f.drivers, r.meta_instance, "db", std::nullopt, 4096);
    CHECK(unknown.status().code() == Code::kInvalidArgument);
  }
  // The reservation is both applications'.
  CHECK(running[0].reservation.cores == doctest::Approx(3));

  // A new deployment changes both applications' coordinates: each instance runs both anew.
  f.apply(twoApplicationDeployment("d2", "2.0"));
  f.engine->settle();
  CHECK(f.deployment("d2").state == model::DeploymentState::kCompleted);
  running = f.activeRunning();
  REQUIRE(running.size() == 2);
  for (const auto& r : running) {
    CHECK(r.healthy);
    CHECK(httpGet(portOf(r, "tcp/80"), "/version").find("2.0") != std::string::npos);
    CHECK(httpGet(portOf(r, "tcp/9100"), "/version").find("shipper-2.0") != std::string::npos);
  }
  auto invariants = f.ledger->checkInvariants();
  REQUIRE(invariants.isOk());
  CHECK(invariants->empty());
}

TEST_CASE("engine: an instance one of whose applications dies is restarted whole") {
  EngineFixture f({"auto_approve_dev.lua"});
  startTwoApplications(f);
  auto before = f.activeRunning();
  REQUIRE(before.size() == 2);
  const model::RuntimeInstance victim = before[0];
  const std::string handle = victim.driver_handle;
  const size_t at = handle.find("shipper=");
  REQUIRE(at != std::string::npos);
  const auto identity = testing::parseHandle(handle.substr(at + std::string("shipper=").size()));
  REQUIRE(identity.pid > 0);
  REQUIRE(::kill(-identity.pid, SIGKILL) == 0);
  REQUIRE(eventually([&] { return !testing::processAlive(identity.pid); }));

  f.engine->settle();
  auto failed = f.ledger->instances().getRuntimeInstance(victim.meta.id);
  CHECK(failed->state == model::RuntimeState::kFailed);
  CHECK(failed->message.find("application 'shipper'") != std::string::npos);
  auto after = f.activeRunning();
  REQUIRE(after.size() == 2);
  for (const auto& r : after) {
    CHECK(r.healthy);
    CHECK_FALSE(httpGet(portOf(r, "tcp/9100"), "/version").empty());
  }
}

TEST_CASE("engine: a sim fleet runs 60 instances of a plan of two applications, health as the driver reports it") {
  EngineFixture f({"auto_approve_dev.lua"});
  f.apply(std::string(testing::kSimCapabilities) + testing::simCluster("sim", 60, {{"seed", 3}}));
  f.apply(
      testing::simPlanWith("        ports: [{protocol: TCP, port: 80}]\n"
                           "      - payload_name: agent\n"
                           "        resources: {cores: 0.5, memory_gib: 0.5}\n"
                           "        depends_on: [web]\n"));
  f.apply(
      "deployments:\n  - plan: web\n    deployment_id: v1\n    instance_count: 60\n"
      "    payload_coordinates: [{payload_name: web, coordinates: {image: \"nginx:1\"}},"
      " {payload_name: agent, coordinates: {image: \"agent:1\"}}]\n");
  f.engine->settle(1000);
  CHECK(f.deployment("v1").state == model::DeploymentState::kCompleted);
  auto running = f.running();
  REQUIRE(running.size() == 60);
  for (const auto& r : running) {
    CHECK(r.healthy);
    CHECK(r.driver_handle.rfind("apps: web=sim:", 0) == 0);
    CHECK(r.reservation.cores == doctest::Approx(1.5));
  }
  // The host sees 60 instances; the driver runs 120 runtimes, one per application.
  auto driver = f.drivers->forCluster("sim");
  REQUIRE(driver.isOk());
  CHECK(driver.value()->list()->size() == 60);
  CHECK(f.drivers->built().at("sim")->list()->size() == 120);
  auto invariants = f.ledger->checkInvariants();
  REQUIRE(invariants.isOk());
  CHECK(invariants->empty());
}

TEST_CASE(
    "engine: containers of a plan restart by policy when killed, and a bad image fails its operation naming why") {
  if (TIDE_PODMAN_MISSING()) return;
  testing::TestImage image;
  EngineFixture f({"auto_approve_dev.lua"});
  const std::string home = (f.dir.path() / "container").lexically_normal().string();
  testing::ContainerSweep sweep(home);
  f.apply(testing::containerPlan(1, 0.2));
  f.apply(testing::containerDeployment("d1", image.ref(), 1));
  f.engine->settle();
  REQUIRE(f.deployment("d1").state == model::DeploymentState::kCompleted);
  auto before = f.activeRunning();
  REQUIRE(before.size() == 1);
  CHECK(httpGet(portOf(before[0], "tcp/8080"), "/index.html") == "hello from tide-test\n");

  // The container's process is killed: the instance is FAILED and started again by policy.
  const std::vector<std::string> names = testing::containersLabelled(home);
  REQUIRE(names.size() == 1);
  REQUIRE(testing::podmanRun({"kill", names.front()}).succeeded());
  REQUIRE(eventually([&] {
    f.engine->settle(1);
    auto after = f.activeRunning();
    return after.size() == 1 && after[0].meta.id != before[0].meta.id && after[0].healthy;
  }));
  auto failed = f.ledger->instances().getRuntimeInstance(before[0].meta.id);
  CHECK(failed->state == model::RuntimeState::kFailed);

  // An image podman cannot have: the UPDATE fails with podman's word, no container is left of it.
  f.apply(testing::containerDeployment("d2", "localhost/tide-no-such-image:1", 1));
  f.engine->settle();
  bool failed_naming_image = false;
  for (const auto& op : f.operations("FAILED")) {
    failed_naming_image |= op.message.find("tide-no-such-image") != std::string::npos;
  }
  CHECK(failed_naming_image);
  CHECK(testing::containersLabelled(home).size() <= 1);  // at most the one d1 still runs
}

}  // namespace
}  // namespace tide
