// The ledger as the Lua host's script recorder, and what it keeps across a restart: the last
// good version of every file.

#include <doctest/doctest.h>

#include "host/core/sha256.h"
#include "host/engine/script_recorder.h"
#include "host/lua/policy/policy_engine.h"
#include "tests/ledger/ledger_test_util.h"
#include "tests/lua/lua_test_util.h"

using namespace tide;
using tide::testing::LedgerFixture;
using Json = nlohmann::json;

TEST_CASE("wire: ledger script recorder writes script versions and events") {
  LedgerFixture f;
  engine::LedgerScriptRecorder recorder(*f.ledger);
  model::ScriptVersion version;
  version.path = "policies/a.lua";
  version.kind = "policy";
  version.sha256 = std::string(64, 'a');
  version.loaded_at = "2026-01-01T00:00:00Z";
  version.status = "active";
  recorder.recordScriptVersion(version);
  recorder.recordEvent("script.loaded", "script/policies/a.lua", Json{{"sha256", version.sha256}});

  auto versions = f.ledger->audit().listScriptVersions("policies/a.lua");
  REQUIRE(versions.isOk());
  REQUIRE(versions->size() == 1);
  CHECK((*versions)[0].status == "active");
  auto events = f.ledger->audit().listEvents({100, 0, {{"kind", "script.loaded"}}});
  REQUIRE(events.isOk());
  REQUIRE(events->items.size() == 1);
  CHECK(events->items[0].subject == "script/policies/a.lua");
  CHECK(events->items[0].actor == "host");
}

TEST_CASE("wire: ledger script recorder does not record an unchanged version again after a restart") {
  LedgerFixture f;
  engine::LedgerScriptRecorder recorder(*f.ledger);
  model::ScriptVersion version;
  version.path = "policies/a.lua";
  version.kind = "policy";
  version.sha256 = std::string(64, 'a');
  version.status = "active";
  const Json data = {{"path", version.path}, {"sha256", version.sha256}};
  recorder.recordScriptVersion(version);
  recorder.recordEvent("script.loaded", "script/policies/a.lua", data);
  const int64_t events = f.eventCount();

  engine::LedgerScriptRecorder after_restart(*f.ledger);
  after_restart.recordScriptVersion(version);
  after_restart.recordEvent("script.loaded", "script/policies/a.lua", data);
  CHECK(f.eventCount() == events);
  CHECK(f.ledger->audit().listScriptVersions("policies/a.lua")->size() == 1);

  version.sha256 = std::string(64, 'b');
  after_restart.recordScriptVersion(version);
  CHECK(f.ledger->audit().listScriptVersions("policies/a.lua")->size() == 2);
}

namespace {

// The scripts side of a host over <dir>: a ledger file, a registry over <dir>/policies
// recording into it, and a policy engine. Another RecordingHost over the same dir is a restart.
struct RecordingHost {
  RecordingHost(const std::filesystem::path& dir, const Clock& clock) {
    auto opened = ledger::Ledger::open("sqlite://" + (dir / "tide.db").string(), clock);
    REQUIRE_MESSAGE(opened.isOk(), opened.status().toString());
    ledger = std::move(opened).value();
    recorder = std::make_unique<engine::LedgerScriptRecorder>(*ledger);
    lua::ScriptRegistryOptions options;
    options.policies_dir = dir / "policies";
    options.scripts_dir = dir / "scripts";
    registry = std::make_unique<lua::ScriptRegistry>(options, *recorder, clock);
    started = registry->reloadAll();
    policies = std::make_unique<lua::PolicyEngine>(*registry, clock);
  }

  lua::Evaluation evaluate() {
    static const SystemClock kClock;
    lua::SnapshotDataSource data(Json::object(), kClock);
    return policies->evaluate(Json{{"type", "CREATE"}, {"plan", {{"name", "web"}}}}, data);
  }
  lua::ScriptStatus status(const std::string& file) const {
    for (const lua::ScriptStatus& s : registry->list()) {
      if (std::filesystem::path(s.path).filename() == file) return s;
    }
    FAIL("no status for " << file);
    return {};
  }
  size_t events(const std::string& kind) {
    auto all = ledger::listAll(ledger->audit(), &ledger::AuditRecords::listEvents, {{"kind", kind}});
    REQUIRE(all.isOk());
    return all->size();
  }

  std::unique_ptr<ledger::Ledger> ledger;
  std::unique_ptr<engine::LedgerScriptRecorder> recorder;
  std::unique_ptr<lua::ScriptRegistry> registry;
  std::unique_ptr<lua::PolicyEngine> policies;
  lua::ReloadSummary started;  // the reload at start
};

const std::string kBroken = "return { name = 'gate',\n decide = function(op, ctx) return approve('x') end\n";

}  // namespace

TEST_CASE("wire: a restart after a broken edit keeps deciding with the last good version from the ledger") {
  lua::testing::TempDir dir;
  FakeClock clock(*parseTimestamp("2026-03-03T10:00:00Z"));
  const std::string good = lua::testing::simplePolicy("gate", "deny('the good version says no')");
  const auto file = dir.path() / "policies" / "gate.lua";
  lua::testing::writeFile(file, good);
  size_t failed_events = 0;
  {
    RecordingHost host(dir.path(), clock);
    lua::testing::writeFile(file, kBroken);
    host.registry->reloadAll();
    CHECK(host.status("gate.lua").status == "stale");
    failed_events = host.events("script.failed");
    CHECK(failed_events > 0);
  }

  RecordingHost restarted(dir.path(), clock);
  CHECK(restarted.started.failed == 1);
  CHECK(restarted.started.restored == 1);
  REQUIRE(restarted.started.errors.size() == 1);
  CHECK(restarted.started.errors[0].find("its last good version " + sha256Hex(good).substr(0, 12) +
                                         ", kept in the ledger, runs instead") != std::string::npos);
  const lua::ScriptStatus status = restarted.status("gate.lua");
  CHECK(status.status == "stale");
  CHECK(status.active_sha256 == sha256Hex(good));
  CHECK(status.failed_sha256 == sha256Hex(kBroken));
  CHECK(status.last_error.find("gate.lua:3:") != std::string::npos);
  const lua::Evaluation e = restarted.evaluate();
  CHECK(e.outcome == lua::Outcome::kRejected);
  REQUIRE(e.decisions.size() == 1);
  CHECK(e.decisions[0].record.policy == "gate");
  CHECK(e.decisions[0].record.script_sha256 == sha256Hex(good));
  CHECK(restarted.registry->current()->failed.empty());
  CHECK(restarted.events("script.failed") == failed_events);  // not reported again
  CHECK(restarted.events("alarm.script") == 0);               // a good version runs

  // A fixed file replaces it as usual.
  const std::string fixed = lua::testing::simplePolicy("gate", "approve('fixed')");
  lua::testing::writeFile(file, fixed);
  restarted.registry->reloadAll();
  CHECK(restarted.status("gate.lua").status == "active");
  CHECK(restarted.evaluate().outcome == lua::Outcome::kApproved);
}

TEST_CASE("wire: a policy broken from the start fails closed across a restart, with one alarm in all") {
  lua::testing::TempDir dir;
  FakeClock clock(*parseTimestamp("2026-03-03T10:00:00Z"));
  lua::testing::writeFile(dir.path() / "policies" / "approver.lua", lua::testing::simplePolicy("approver"));
  lua::testing::writeFile(dir.path() / "policies" / "gate.lua", kBroken);
  for (int start = 0; start < 2; ++start) {
    CAPTURE(start);
    RecordingHost host(dir.path(), clock);
    CHECK(host.status("gate.lua").status == "failed");
    const lua::Evaluation e = host.evaluate();
    CHECK(e.outcome == lua::Outcome::kPendingApproval);
    CHECK(e.decisions.size() == 2);
    CHECK(host.events("alarm.script") == 1);
    host.registry->reloadAll();
    CHECK(host.events("alarm.script") == 1);
  }
}

TEST_CASE("wire: a file deleted since its last good version is not brought back by a restart") {
  lua::testing::TempDir dir;
  FakeClock clock(*parseTimestamp("2026-03-03T10:00:00Z"));
  const auto file = dir.path() / "policies" / "gate.lua";
  lua::testing::writeFile(file, lua::testing::simplePolicy("gate"));
  {
    RecordingHost host(dir.path(), clock);
    std::filesystem::remove(file);
    host.registry->reloadAll();
    lua::testing::writeFile(file, kBroken);
    host.registry->reloadAll();
    CHECK(host.status("gate.lua").status == "failed");
  }
  RecordingHost restarted(dir.path(), clock);
  CHECK(restarted.status("gate.lua").status == "failed");
  CHECK(restarted.registry->current()->failed.size() == 1);
  CHECK(restarted.evaluate().outcome == lua::Outcome::kPendingApproval);
}
