// The ledger as the Lua host's script recorder.

#include <doctest/doctest.h>

#include "host/engine/script_recorder.h"
#include "tests/ledger/ledger_test_util.h"

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

  auto versions = f.ledger->listScriptVersions("policies/a.lua");
  REQUIRE(versions.isOk());
  REQUIRE(versions->size() == 1);
  CHECK((*versions)[0].status == "active");
  auto events = f.ledger->listEvents({100, 0, {{"kind", "script.loaded"}}});
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
  CHECK(f.ledger->listScriptVersions("policies/a.lua")->size() == 1);

  version.sha256 = std::string(64, 'b');
  after_restart.recordScriptVersion(version);
  CHECK(f.ledger->listScriptVersions("policies/a.lua")->size() == 2);
}
