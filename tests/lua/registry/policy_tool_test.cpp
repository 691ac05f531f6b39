#include "host/lua/registry/policy_tool.h"
#include <doctest/doctest.h>

#include <sstream>

#include "host/lua/registry/script_registry.h"
#include "tests/lua/lua_test_util.h"

using namespace tide;
using namespace tide::lua;
using namespace tide::lua::testing;

namespace {


PolicyToolOptions shippedOptions() {
  PolicyToolOptions options;
  options.policies_dir = kSourceTree / "policies";
  options.scripts_dir = kSourceTree / "scripts";
  return options;
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("lua: every shipped policy's own tests pass through testScriptFiles") {
  std::ostringstream out;
  const int code = testScriptFiles({(kSourceTree / "policies").string()}, out, shippedOptions());
  INFO(out.str());
  CHECK(code == 0);
  CHECK(occurrences(out.str(), "FAIL") == 0);
  CHECK(occurrences(out.str(), "PASS") >= 20);
  CHECK(out.str().find(" passed, 0 failed") != std::string::npos);
  for (const char* file : {"auto_approve_dev.lua", "prod_delete_manual.lua", "update_domain_budget.lua",
                           "change_freeze.lua", "business_hours.lua"}) {
    CHECK(out.str().find(file) != std::string::npos);
  }
}

TEST_CASE("lua: the shipped policies and libs load in the registry") {
  MemoryRecorder recorder;
  FakeClock clock(*parseTimestamp("2026-03-03T10:00:00Z"));
  ScriptRegistryOptions options;
  options.policies_dir = kSourceTree / "policies";
  options.scripts_dir = kSourceTree / "scripts";
  ScriptRegistry registry(options, recorder, clock);
  const ReloadSummary summary = registry.reloadAll();
  for (const std::string& error : summary.errors) MESSAGE(error);
  CHECK(summary.failed == 0);
  CHECK(registry.current()->ofKind(ScriptKind::kPolicy).size() == 5);
  CHECK(registry.current()->find(ScriptKind::kLib, "namespaces") != nullptr);
}

TEST_CASE("lua: testScriptFiles reports failing cases and returns non-zero") {
  TempDir dir;
  writeFile(dir.path() / "wrong.lua", R"(return {
    name = "wrong",
    decide = function(op, ctx) return approve("always") end,
    tests = {
      { name = "right", expect = "approve" },
      { name = "wrong verdict", expect = "deny" },
      { name = "wrong reason", expect = "approve", reason = "never" },
    },
  })");
  writeFile(dir.path() / "crashing.lua", R"(return {
    name = "crashing",
    decide = function(op, ctx) return op.missing.field end,
    tests = { { name = "an error is never a pass, even when manual is expected", expect = "manual" } },
  })");
  std::ostringstream out;
  PolicyToolOptions options;
  options.scripts_dir = dir.path() / "no-scripts";
  const int code = testScriptFiles({dir.path().string()}, out, options);
  INFO(out.str());
  CHECK(code == 1);
  CHECK(out.str().find("PASS  right") != std::string::npos);
  CHECK(out.str().find("FAIL  wrong verdict: expected deny, got approve: always") != std::string::npos);
  CHECK(out.str().find("FAIL  wrong reason") != std::string::npos);
  CHECK(out.str().find("FAIL  an error is never a pass") != std::string::npos);
  CHECK(out.str().find("1 passed, 3 failed") != std::string::npos);

  std::ostringstream none;
  CHECK(testScriptFiles({(dir.path() / "empty").string()}, none, options) != 0);
}

TEST_CASE("lua: policy eval evaluates the example ops offline") {
  std::ostringstream dev;
  CHECK(evalOpFile((kSourceTree / "examples" / "op-dev-create.json").string(), dev, shippedOptions()) == 0);
  INFO(dev.str());
  CHECK(dev.str().find("verdict: APPROVED") != std::string::npos);
  CHECK(dev.str().find("auto-approve-dev") != std::string::npos);

  std::ostringstream prod;
  CHECK(evalOpFile((kSourceTree / "examples" / "op-prod-delete.json").string(), prod, shippedOptions()) == 0);
  INFO(prod.str());
  CHECK(prod.str().find("verdict: PENDING_APPROVAL") != std::string::npos);
  CHECK(prod.str().find("prod-delete-manual") != std::string::npos);

  PolicyToolOptions json = shippedOptions();
  json.json = true;
  std::ostringstream as_json;
  CHECK(evalOpFile((kSourceTree / "examples" / "op-prod-delete.json").string(), as_json, json) == 0);
  const Json parsed = Json::parse(as_json.str());
  CHECK(parsed["outcome"] == "PENDING_APPROVAL");

  std::ostringstream missing;
  CHECK(evalOpFile("/nonexistent/op.json", missing, shippedOptions()) == 2);
}
