// tide doctor's checks (docs/architecture.md#tide-doctor): each kind of violation is planted on
// purpose, by writing the ledger or the driver directly, and the doctor must name it.

#include "host/engine/doctor.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "drivers/agent/agent_driver.h"
#include "drivers/sim/sim_driver.h"
#include "tests/ledger/ledger_test_util.h"
#include "tests/support/files.h"
#include "tests/support/raw_sql.h"
#include "tests/support/vocabulary.h"

namespace tide {
namespace {

// A ledger with one meta instance of plan "web" and a sim driver for cluster "local", which
// the test plants runtimes in directly.
struct DoctorFixture {
  testing::LedgerFixture f;
  std::string meta;
  engine::DriverSet drivers{*f.ledger, drivers::DriverContext{}};
  drivers::Driver* driver = nullptr;

  explicit DoctorFixture(const std::string& url = "sqlite://:memory:") : f(url) {
    meta = f.addInstance();
    drivers.install("local", std::make_unique<drivers::SimDriver>(drivers::SimOptions{}, f.clock));
    driver = *drivers.forCluster("local");
  }

  // A runtime instance of `meta` on node-a, moved through the ledger's states to `state`.
  model::RuntimeInstance runtime(const std::string& state_name, bool active = true) {
    const model::RuntimeState state = testing::parsed<model::RuntimeState>(state_name);
    model::RuntimeInstance ri;
    ri.meta_instance = meta;
    ri.node = "node-a";
    ri.is_active = active;
    ri.reservation = {4, 64};
    auto created = f.ledger->instances().createRuntimeInstance(ri, "test");
    REQUIRE_MESSAGE(created.isOk(), created.status().toString());
    using enum model::RuntimeState;
    for (model::RuntimeState next : {kStarting, kRunning, kFailed}) {
      if (created->state == state) break;
      created = f.ledger->instances().setRuntimeInstanceState(created->meta.id, next, std::nullopt, "test");
      REQUIRE_MESSAGE(created.isOk(), created.status().toString());
    }
    REQUIRE(created->state == state);
    return *created;
  }

  // Starts runtime `id` in the driver, whatever the ledger says of it.
  void run(const std::string& id) {
    drivers::RuntimeSpec spec;
    spec.id = id;
    spec.node = "node-a";
    spec.meta_instance = meta;
    auto ran = driver->ensure(spec);
    REQUIRE_MESSAGE(ran.isOk(), ran.status().toString());
    REQUIRE(ran->state == model::WorkloadState::kRunning);
  }
  void run(const model::RuntimeInstance& r) { run(std::to_string(r.meta.id)); }

  engine::DoctorReport examine() {
    auto report = engine::examine(*f.ledger, drivers);
    REQUIRE_MESSAGE(report.isOk(), report.status().toString());
    return *report;
  }
};

// The findings of `kind`.
std::vector<engine::Finding> findingsOf(const engine::DoctorReport& report, const std::string& kind) {
  std::vector<engine::Finding> out;
  std::copy_if(report.findings.begin(), report.findings.end(), std::back_inserter(out),
               [&](const engine::Finding& f) { return f.kind == kind; });
  return out;
}

bool mentions(const engine::Finding& finding, const std::string& text) {
  return finding.message.find(text) != std::string::npos;
}

TEST_CASE("doctor: a fleet whose driver runs exactly the ledger's live instances is sound") {
  DoctorFixture d;
  d.run(d.runtime("RUNNING"));
  engine::DoctorReport report = d.examine();
  CHECK_MESSAGE(report.findings.empty(), report.findings.front().message);
  CHECK(report.sound());
  CHECK(report.clusters == 1);
  CHECK(report.driver_runtimes == 1);
  CHECK(report.live_runtime_instances == 1);
  model::Json json = engine::doctorReportJson(report);
  CHECK(json["sound"] == true);
  CHECK(json["findings"].empty());
}

TEST_CASE("doctor: a node whose agent has not reported since the start is unchecked, not missing") {
  DoctorFixture d;
  auto hub = drivers::AgentHub::open(testing::freshDir("doctor", "agents").string(), d.f.clock);
  REQUIRE(hub.isOk());
  d.drivers.install("local", std::make_unique<drivers::AgentDriver>(**hub, drivers::AgentDriverOptions{}));
  d.runtime("RUNNING");
  engine::DoctorReport report = d.examine();
  CHECK(findingsOf(report, "missing").empty());
  const std::vector<engine::Finding> unchecked = findingsOf(report, "unchecked");
  REQUIRE(unchecked.size() == 1);
  CHECK(unchecked[0].subject == "node/node-a");
  CHECK(mentions(unchecked[0], "has not reported"));
  CHECK(report.sound());
}

TEST_CASE("doctor: a runtime the driver runs and the ledger has no record of is a leak") {
  DoctorFixture d;
  d.run("4242");
  engine::DoctorReport report = d.examine();
  auto leaks = findingsOf(report, "leak");
  REQUIRE(leaks.size() == 1);
  CHECK(leaks[0].violation);
  CHECK(leaks[0].subject == "runtime/4242");
  CHECK(mentions(leaks[0], "no record"));
  CHECK_FALSE(report.sound());
  CHECK(engine::doctorReportJson(report)["findings"][0]["severity"] == "violation");
}

TEST_CASE("doctor: a runtime the driver runs and the ledger has as FAILED is a leak") {
  DoctorFixture d;
  const model::RuntimeInstance failed = d.runtime("FAILED");
  d.run(failed);
  auto leaks = findingsOf(d.examine(), "leak");
  REQUIRE(leaks.size() == 1);
  CHECK(leaks[0].subject == "runtime/" + std::to_string(failed.meta.id));
  CHECK(mentions(leaks[0], "as FAILED"));
}

TEST_CASE("doctor: two live runtimes of one meta instance with no operation under way are a duplicate") {
  DoctorFixture d;
  d.run(d.runtime("RUNNING", true));
  d.run(d.runtime("RUNNING", false));
  auto duplicates = findingsOf(d.examine(), "duplicate");
  REQUIRE(duplicates.size() == 1);
  CHECK(duplicates[0].violation);
  CHECK(duplicates[0].subject == "meta_instance/" + d.meta);

  // During a RELOCATE the passive one is expected.
  d.f.addOperation(d.meta, "RELOCATE");
  CHECK(findingsOf(d.examine(), "duplicate").empty());
}

TEST_CASE("doctor: a RUNNING instance its driver does not run is a warning, not a violation") {
  DoctorFixture d;
  const model::RuntimeInstance lost = d.runtime("RUNNING");
  engine::DoctorReport report = d.examine();
  auto missing = findingsOf(report, "missing");
  REQUIRE(missing.size() == 1);
  CHECK_FALSE(missing[0].violation);
  CHECK(missing[0].subject == "runtime/" + std::to_string(lost.meta.id));
  CHECK(report.sound());
}

TEST_CASE("doctor: a reservation no operation will use or release is a violation") {
  DoctorFixture d;
  const model::RuntimeInstance pending = d.runtime("PENDING");
  auto reservations = findingsOf(d.examine(), "reservation");
  REQUIRE(reservations.size() == 1);
  CHECK(reservations[0].subject == "ledger");
  CHECK(mentions(reservations[0], "runtime instance " + std::to_string(pending.meta.id)));
  CHECK(mentions(reservations[0], "no operation will use or release"));

  // The CREATE that reserved it is still under way: nothing wrong.
  d.f.addOperation(d.meta, "CREATE");
  CHECK(findingsOf(d.examine(), "reservation").empty());
}

TEST_CASE("doctor: a live runtime of a stopped meta instance holds a reservation it should not") {
  DoctorFixture d;
  d.run(d.runtime("RUNNING"));
  REQUIRE(d.f.ledger->instances().setMetaInstanceState(d.meta, model::MetaState::kStopped, std::nullopt, "test").isOk());
  auto reservations = findingsOf(d.examine(), "reservation");
  REQUIRE(reservations.size() == 1);
  CHECK(mentions(reservations[0], "meta instance that is STOPPED"));
}

TEST_CASE("doctor: an edited event breaks the chain and the doctor names it") {
  const std::filesystem::path dir = testing::freshDir("doctor", "chain");
  const std::string db = (dir / "tide.db").string();
  const std::string url = "sqlite://" + db;
  { DoctorFixture planted(url); }
  testing::execRawSql(db, "UPDATE events SET actor = 'mallory' WHERE seq = 2");
  testing::LedgerFixture reopened(url);
  engine::DriverSet drivers(*reopened.ledger, drivers::DriverContext{});
  drivers.install("local", std::make_unique<drivers::SimDriver>(drivers::SimOptions{}, reopened.clock));
  auto report = engine::examine(*reopened.ledger, drivers);
  REQUIRE(report.isOk());
  auto chain = findingsOf(*report, "event_chain");
  REQUIRE(chain.size() == 1);
  CHECK(mentions(chain[0], "event seq 2: hash mismatch"));
  CHECK_FALSE(report->sound());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tide
