#include "host/lua/policy/policy_engine.h"
#include <doctest/doctest.h>

#include <thread>

#include "host/core/sha256.h"
#include "tests/lua/lua_test_util.h"

using namespace tide;
using namespace tide::lua;
using namespace tide::lua::testing;
using namespace std::chrono_literals;

namespace {

// Answers ctx.* with fixed values and remembers what it was asked.
class FakeData final : public PolicyDataSource {
 public:
  Result<int64_t> inFlight(const Json& filter) override { return remember("in_flight", filter, in_flight); }
  Result<int64_t> count(const Json& filter) override { return remember("count", filter, count_value); }
  Result<int64_t> recentFailures(const Json& filter) override { return remember("recent_failures", filter, failures); }
  Result<Json> instances(const std::string& plan) override {
    asked.push_back({{"instances", plan}});
    return Json::array({{{"name", plan + "-a"}, {"healthy", true}}, {{"name", plan + "-b"}, {"healthy", false}}});
  }
  Result<Json> node(const std::string& name) override {
    asked.push_back({{"node", name}});
    if (name == "broken") return Status::unavailable("ledger is down");
    return Json{{"name", name}, {"update_domain", "ud-9"}};
  }

  int64_t in_flight = 0;
  int64_t count_value = 0;
  int64_t failures = 0;
  std::vector<Json> asked;

 private:
  Result<int64_t> remember(const char* what, const Json& filter, int64_t value) {
    asked.push_back({{what, filter}});
    return value;
  }
};

Json prodOp() {
  return {{"type", "UPDATE"},
          {"meta_instance", "web-1"},
          {"plan", {{"name", "web"}, {"namespace", "prod-web"}}},
          {"node", {{"name", "n1"}, {"update_domain", "ud-1"}}}};
}

const PolicyDecision* decisionOf(const Evaluation& e, const std::string& policy) {
  for (const PolicyDecision& d : e.decisions) {
    if (d.record.policy == policy) return &d;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("lua: a failing policy yields manual, never approve") {
  LuaLimits limits;
  limits.deadline = 20ms;
  limits.memory_bytes = 8u << 20;
  const std::vector<std::pair<std::string, std::string>> failures = {
      {"runtime", "error('broken')"},
      {"timeout", "(function() while true do end end)()"},
      {"memory", "#string.rep('x', 64 * 1024 * 1024) > 0 and approve('big')"},
      {"runtime", "nil"},  // no verdict
      {"runtime", "{ verdict = 'maybe' }"},
      {"runtime", "leaked_global"},
  };
  for (const auto& failure : failures) {
    const std::string& error_class = failure.first;
    const std::string& body = failure.second;  // a reference, not a binding: clang 14 captures it
    CAPTURE(body);
    // Only the loop meets the deadline: the memory bomb has all the time it needs, so the
    // cap, not the speed of the machine, stops it.
    LuaLimits case_limits = limits;
    if (error_class == "memory") case_limits.deadline = 10s;
    RegistryFixture fx(case_limits);
    writeFile(fx.policy("approver.lua"), simplePolicy("approver"));
    writeFile(fx.policy("failing.lua"), simplePolicy("failing", body));
    REQUIRE(fx.registry->reloadAll().failed == 0);
    PolicyEngine engine(*fx.registry, fx.clock, {case_limits, Outcome::kPendingApproval});
    FakeData data;
    const Evaluation e = engine.evaluate(prodOp(), data);
    CHECK(e.outcome == Outcome::kPendingApproval);
    const PolicyDecision* failing = decisionOf(e, "failing");
    REQUIRE(failing);
    CHECK(failing->record.verdict == "manual");
    CHECK(failing->record.error_class == error_class);
    REQUIRE(failing->record.reasons.size() == 1);
    CHECK(failing->record.reasons[0].get<std::string>().find("failing.lua") != std::string::npos);
    // The engine's state keeps working for the next evaluation.
    const Evaluation again = engine.evaluate(prodOp(), data);
    CHECK(decisionOf(again, "approver")->record.verdict == "approve");
  }
}

TEST_CASE("lua: a failing policy denies where the host denies by default") {
  RegistryFixture fx;
  writeFile(fx.policy("approver.lua"), simplePolicy("approver"));
  writeFile(fx.policy("failing.lua"), simplePolicy("failing", "error('broken')"));
  REQUIRE(fx.registry->reloadAll().failed == 0);
  PolicyEngine engine(*fx.registry, fx.clock, {LuaLimits{}, Outcome::kRejected});
  FakeData data;
  const Evaluation e = engine.evaluate(prodOp(), data);
  CHECK(e.outcome == Outcome::kRejected);
  CHECK(decisionOf(e, "failing")->record.verdict == "deny");
  CHECK(decisionOf(e, "failing")->record.error_class == "runtime");
}

// A ledger slower than the deadline: each query takes `delay`.
class SlowData final : public PolicyDataSource {
 public:
  explicit SlowData(std::chrono::milliseconds delay) : delay_(delay) {}
  Result<int64_t> inFlight(const Json&) override { return wait(); }
  Result<int64_t> count(const Json&) override { return wait(); }
  Result<int64_t> recentFailures(const Json&) override { return wait(); }
  Result<Json> instances(const std::string&) override { return Json::array(); }
  Result<Json> node(const std::string&) override { return Json(); }

 private:
  Result<int64_t> wait() {
    std::this_thread::sleep_for(delay_);  // the slow query itself, not a wait for the test
    return 0;
  }
  std::chrono::milliseconds delay_;
};

TEST_CASE("lua: time spent in ctx queries counts against the deadline") {
  LuaLimits limits;
  limits.deadline = 100ms;
  RegistryFixture fx(limits);
  writeFile(fx.policy("asker.lua"),
            simplePolicy("asker", "(function() for i = 1, 1000 do ctx.count({}) end return approve('ok') end)()"));
  REQUIRE(fx.registry->reloadAll().failed == 0);
  PolicyEngine engine(*fx.registry, fx.clock, {limits, Outcome::kPendingApproval});
  SlowData data(10ms);  // 1000 queries: 10 s if the time did not count
  const Evaluation e = engine.evaluate(prodOp(), data);
  const PolicyDecision* asker = decisionOf(e, "asker");
  REQUIRE(asker);
  CHECK(asker->record.error_class == "timeout");
  CHECK(asker->record.duration_us < 2 * 100'000);
}

TEST_CASE("lua: a policy that hoards memory fails alone") {
  LuaLimits limits;
  limits.memory_bytes = 8u << 20;
  limits.deadline = 10s;  // the cap, not the clock, must stop it
  RegistryFixture fx(limits);
  // Holds 6 of its 8 MiB from the moment it loads (decide keeps the hoard alive), then asks
  // for more at every decision.
  writeFile(fx.policy("hoarder.lua"), R"(local hoard = {}
for i = 1, 6 * 1024 do hoard[i] = string.rep("x", 1000) .. i end
return { name = "hoarder", decide = function()
  local more = {}
  for i = 1, 4 * 1024 do more[i] = string.rep("y", 1000) .. i end
  return approve("rich: " .. #hoard + #more)
end })");
  writeFile(fx.policy("modest.lua"), R"(return { name = "modest", decide = function()
  local some = {}
  for i = 1, 5 * 1024 do some[i] = string.rep("z", 1000) .. i end
  return approve("enough")
end })");
  REQUIRE(fx.registry->reloadAll().failed == 0);
  PolicyEngine engine(*fx.registry, fx.clock, {limits, Outcome::kPendingApproval});
  FakeData data;
  const Evaluation e = engine.evaluate(prodOp(), data);
  CHECK(decisionOf(e, "hoarder")->record.error_class == "memory");
  CHECK(decisionOf(e, "modest")->record.verdict == "approve");
  CHECK(decisionOf(e, "modest")->record.error_class == "");
}

TEST_CASE("lua: a failing advisory policy is recorded but cannot block") {
  RegistryFixture fx;
  writeFile(fx.policy("approver.lua"), simplePolicy("approver"));
  writeFile(fx.policy("advice.lua"), simplePolicy("advice", "error('oops')", "advisory"));
  writeFile(fx.policy("opinion.lua"), simplePolicy("opinion", "deny('no')", "advisory"));
  fx.registry->reloadAll();
  PolicyEngine engine(*fx.registry, fx.clock);
  FakeData data;
  const Evaluation e = engine.evaluate(prodOp(), data);
  CHECK(e.outcome == Outcome::kApproved);
  REQUIRE(e.decisions.size() == 3);
  CHECK(decisionOf(e, "advice")->level == "advisory");
  CHECK(decisionOf(e, "advice")->record.error_class == "runtime");
  CHECK(decisionOf(e, "opinion")->record.verdict == "deny");
}

TEST_CASE("lua: decision records name the sha256 of the version that decided") {
  RegistryFixture fx;
  const std::string v1 = simplePolicy("gate", "approve('v1')");
  const std::string v2 = simplePolicy("gate", "manual('v2')");
  writeFile(fx.policy("gate.lua"), v1);
  fx.registry->reloadAll();
  PolicyEngine engine(*fx.registry, fx.clock);
  FakeData data;
  Evaluation e = engine.evaluate(prodOp(), data);
  REQUIRE(e.decisions.size() == 1);
  CHECK(e.decisions[0].record.script_sha256 == sha256Hex(v1));
  CHECK(e.decisions[0].record.reasons[0] == "v1");
  CHECK(e.decisions[0].record.at == "2026-03-03T10:00:00.000Z");

  writeFile(fx.policy("gate.lua"), v2);
  fx.registry->reloadAll();
  e = engine.evaluate(prodOp(), data);
  CHECK(e.decisions[0].record.script_sha256 == sha256Hex(v2));
  CHECK(e.decisions[0].record.verdict == "manual");
  CHECK(e.outcome == Outcome::kPendingApproval);
}

TEST_CASE("lua: op and ctx are read-only inside decide") {
  RegistryFixture fx;
  writeFile(fx.policy("tamper.lua"), R"(
    local function refused(write, expected)
      local ok, err = pcall(write)
      return not ok and string.find(err, expected, 1, true) ~= nil
    end
    return {
      name = "tamper",
      decide = function(op, ctx)
        local all = refused(function() op.type = "CREATE" end, "attempt to modify read-only field 'type'")
          and refused(function() op.plan.namespace = "dev" end, "attempt to modify read-only field 'namespace'")
          and refused(function() op.node.labels.zone = "x" end, "attempt to modify read-only field 'zone'")
          and refused(function() ctx.now = nil end, "attempt to modify read-only field 'now'")
          and refused(function() ctx.log.info = print end, "attempt to modify read-only field 'info'")
        if all and op.type == "UPDATE" then return approve("all writes refused") end
        return deny("a write went through")
      end,
    })");
  REQUIRE(fx.registry->reloadAll().failed == 0);
  PolicyEngine engine(*fx.registry, fx.clock);
  FakeData data;
  Json op = prodOp();
  op["node"]["labels"] = {{"zone", "a"}};
  const Evaluation e = engine.evaluate(op, data);
  CHECK(e.outcome == Outcome::kApproved);
  CHECK(e.decisions[0].record.reasons[0] == "all writes refused");
}

TEST_CASE("lua: ctx reads the injected data source") {
  RegistryFixture fx;
  writeFile(fx.policy("reader.lua"), R"(
    return {
      name = "reader",
      decide = function(op, ctx)
        local now = ctx.now()
        local instances = ctx.instances(op.plan.name)
        local parts = {
          ctx.in_flight({ plan = op.plan.name, update_domain = op.node.update_domain }),
          ctx.count({ plan = op.plan.name, state = "PENDING" }),
          ctx.recent_failures({ plan = op.plan.name }),
          #instances, instances[1].name, tostring(instances[2].healthy),
          ctx.node("n1").update_domain,
          now.year, now.month, now.day, now.hour, now.wday, now.epoch,
        }
        ctx.log.info("decided", { plan = op.plan.name })
        return approve(table.concat(parts, " "))
      end,
    })");
  fx.registry->reloadAll();
  PolicyEngine engine(*fx.registry, fx.clock);
  FakeData data;
  data.in_flight = 2;
  data.count_value = 5;
  data.failures = 1;
  const Evaluation e = engine.evaluate(prodOp(), data);
  REQUIRE(e.decisions.size() == 1);
  CHECK(e.decisions[0].record.reasons[0] == "2 5 1 2 web-a false ud-9 2026 3 3 10 3 1772532000");
  REQUIRE(data.asked.size() == 5);
  CHECK(data.asked[0] == Json{{"instances", "web"}});
  CHECK(data.asked[1] == Json{{"in_flight", {{"plan", "web"}, {"update_domain", "ud-1"}}}});
  CHECK(data.asked[3] == Json{{"recent_failures", {{"plan", "web"}, {"seconds", 3600}}}});
  REQUIRE(e.logs.size() == 1);
  CHECK(e.logs[0].message == "decided");
  CHECK(e.logs[0].fields == Json{{"plan", "web"}});
}

TEST_CASE("lua: ctx errors fail closed and unknown filter fields are refused") {
  RegistryFixture fx;
  writeFile(fx.policy("down.lua"), simplePolicy("down", "ctx.node('broken') and approve('x')"));
  writeFile(fx.policy("typo.lua"),
            simplePolicy("typo", "ctx.in_flight({ plan = 'web', zone = 'a' }) == 0 and approve('x')"));
  fx.registry->reloadAll();
  PolicyEngine engine(*fx.registry, fx.clock);
  FakeData data;
  const Evaluation e = engine.evaluate(prodOp(), data);
  CHECK(e.outcome == Outcome::kPendingApproval);
  CHECK(decisionOf(e, "down")->record.reasons[0].get<std::string>().find("ledger is down") != std::string::npos);
  CHECK(decisionOf(e, "typo")->record.reasons[0].get<std::string>().find("unknown filter field 'zone'") !=
        std::string::npos);
}

TEST_CASE("lua: a plan's approval.policies adds advisory policies but never leaves out a hard or soft one") {
  RegistryFixture fx;
  writeFile(fx.policy("guard.lua"), simplePolicy("guard", "deny('guard says no')", "hard"));
  writeFile(fx.policy("review.lua"), simplePolicy("review", "manual('review wants a look')", "soft"));
  writeFile(fx.policy("yes.lua"), simplePolicy("yes", "approve('yes says yes')", "hard"));
  writeFile(fx.policy("note.lua"), simplePolicy("note", "deny('note would say no')", "advisory"));
  fx.registry->reloadAll();
  PolicyEngine engine(*fx.registry, fx.clock);
  FakeData data;
  auto names = [](const Evaluation& e) {
    std::vector<std::string> out;
    for (const PolicyDecision& d : e.decisions) out.push_back(d.record.policy);
    return out;
  };

  Json op = prodOp();
  Evaluation e = engine.evaluate(op, data);
  CHECK(e.outcome == Outcome::kRejected);
  CHECK(names(e) == std::vector<std::string>{"guard", "note", "review", "yes"});

  // Listing only an advisory policy (or only the approving one) still gets the hard deny.
  for (const Json& listed : {Json::array({"note"}), Json::array({"yes"})}) {
    CAPTURE(listed.dump());
    op["plan"]["approval"] = {{"policies", listed}};
    e = engine.evaluate(op, data);
    CHECK(e.outcome == Outcome::kRejected);
    REQUIRE(decisionOf(e, "guard"));
    CHECK(decisionOf(e, "guard")->record.verdict == "deny");
    CHECK(decisionOf(e, "review")->record.verdict == "manual");
  }
  CHECK(names(e) == std::vector<std::string>{"guard", "review", "yes"});  // an unlisted advisory one is left out

  op["plan"]["approval"] = {{"policies", {"yes", "missing"}}};
  e = engine.evaluate(op, data);
  CHECK(e.outcome == Outcome::kRejected);
  REQUIRE(decisionOf(e, "missing"));
  CHECK(decisionOf(e, "missing")->record.verdict == "manual");
  CHECK(decisionOf(e, "missing")->record.error_class == "load");
}

TEST_CASE("lua: a plan listing only an allow-everything policy still gets prod-delete-manual and change-freeze") {
  RegistryFixture fx;
  const std::filesystem::path source = TIDE_SOURCE_DIR;
  std::filesystem::copy(source / "policies", fx.dir.path() / "policies");
  std::filesystem::copy(source / "scripts" / "lib", fx.dir.path() / "scripts" / "lib");
  writeFile(fx.policy("allow_all.lua"), simplePolicy("allow-all", "approve('everything goes')"));
  REQUIRE(fx.registry->reloadAll().failed == 0);
  PolicyEngine engine(*fx.registry, fx.clock);
  FakeData data;
  Json op = prodOp();
  op["plan"]["approval"] = {{"policies", {"allow-all"}}};

  op["type"] = "DELETE";
  Evaluation e = engine.evaluate(op, data);
  CHECK(e.outcome == Outcome::kPendingApproval);
  REQUIRE(decisionOf(e, "prod-delete-manual"));
  CHECK(decisionOf(e, "prod-delete-manual")->record.verdict == "manual");

  op["type"] = "UPDATE";
  fx.clock.set(*parseTimestamp("2026-11-27T12:00:00Z"));  // Black Friday weekend
  e = engine.evaluate(op, data);
  CHECK(e.outcome == Outcome::kRejected);
  CHECK_FALSE(e.overridable);
  REQUIRE(decisionOf(e, "change-freeze"));
  CHECK(decisionOf(e, "change-freeze")->record.verdict == "deny");
  CHECK(decisionOf(e, "allow-all")->record.verdict == "approve");
}

TEST_CASE("lua: tide.lib.namespaces draws the line where docs/lua.md's patterns do, asked in any order") {
  // The lib decides by the first and last words of a name and keeps the last namespace's
  // words; the patterns below are the rule as documented. Asking about each namespace
  // twice in a row, then about the next, exercises the kept words as the policies of one
  // decision do.
  RegistryFixture fx;
  std::filesystem::copy(std::filesystem::path(TIDE_SOURCE_DIR) / "scripts" / "lib", fx.dir.path() / "scripts" / "lib");
  writeFile(fx.policy("namespaces_check.lua"), R"(
    local namespaces = tide.lib.namespaces
    local documented = {
      dev = { "^dev$", "^dev%-", "^test$", "^test%-", "%-dev$", "%-test$" },
      prod = { "^prod$", "^prod%-", "%-prod$" },
    }
    local function matches_any(namespace, patterns)
      for _, pattern in ipairs(patterns) do
        if string.match(namespace or "", pattern) then return true end
      end
      return false
    end
    local names = { "dev", "dev-web", "test", "test-api", "web-dev", "payments-test", "prod", "prod-web",
                    "shop-prod", "payments-prod", "staging", "shop", "devops-tools", "production-like", "", "-",
                    "--", "dev-", "-dev", "test-", "-test", "prod-", "-prod", "a-dev-b", "a-prod-b", "prod-dev",
                    "dev-prod", "test-prod-dev", "xprod", "prodx", "devtest", "DEV", "Prod-web", "dev.web",
                    "a-b-c-d-prod", "a-b-c-d-e", "dev--", "--prod", "web-dev-", string.rep("a-", 40) .. "test" }
    return {
      name = "namespaces-check",
      decide = function(op, ctx)
        local wrong = {}
        for round = 1, 2 do
          for i = 1, #names + 1 do
            local namespace = names[i]  -- nil once: an op without a namespace
            for _ = 1, round do
              if namespaces.is_dev(namespace) ~= matches_any(namespace, documented.dev)
                  or namespaces.is_prod(namespace) ~= matches_any(namespace, documented.prod) then
                wrong[#wrong + 1] = tostring(namespace)
              end
            end
          end
        end
        if #wrong > 0 then return deny("decided otherwise: " .. table.concat(wrong, ", ")) end
        return approve("all agree")
      end,
    })");
  REQUIRE(fx.registry->reloadAll().failed == 0);
  PolicyEngine engine(*fx.registry, fx.clock);
  FakeData data;
  const Evaluation e = engine.evaluate(prodOp(), data);
  REQUIRE(e.decisions.size() == 1);
  CHECK(e.decisions[0].record.reasons.dump() == R"(["all agree"])");
}

TEST_CASE("lua: a policy state lets garbage grow to four times the live heap and collects at allocation's pace") {
  RegistryFixture fx;
  auto interpreter = PolicyInterpreter::create(fx.registry->current(), LuaLimits{}, fx.clock);
  REQUIRE(interpreter.isOk());
  lua_State* L = (*interpreter)->state().raw();
  CHECK(lua_gc(L, LUA_GCSETPAUSE, 400) == 400);  // each returns the setting it replaces
  CHECK(lua_gc(L, LUA_GCSETSTEPMUL, 100) == 100);
}

TEST_CASE("lua: applies() filters policies and the default decides when nobody approves") {
  RegistryFixture fx;
  writeFile(fx.policy("only_dev.lua"), R"(
    return {
      name = "only-dev",
      applies = function(op) return op.plan.namespace == "dev" end,
      decide = function(op, ctx) return approve("dev") end,
    })");
  fx.registry->reloadAll();
  FakeData data;
  PolicyEngine manual_default(*fx.registry, fx.clock);
  Evaluation e = manual_default.evaluate(prodOp(), data);
  CHECK(e.outcome == Outcome::kPendingApproval);
  CHECK(e.decisions.empty());

  PolicyEngine deny_default(*fx.registry, fx.clock, {LuaLimits{}, Outcome::kRejected});
  CHECK(deny_default.evaluate(prodOp(), data).outcome == Outcome::kRejected);

  Json dev = prodOp();
  dev["plan"]["namespace"] = "dev";
  CHECK(deny_default.evaluate(dev, data).outcome == Outcome::kApproved);
}

TEST_CASE("lua: the op snapshot has every documented field, absent and null ones at their defaults") {
  RegistryFixture fx;
  writeFile(fx.policy("shape.lua"), R"(
    return {
      name = "shape",
      decide = function(op, ctx)
        local defaults = op.id == 0 and op.type == "" and op.intent == "" and op.requested_by == ""
          and op.meta_instance == "" and op.attempt == 1
          and op.plan.namespace == "" and op.plan.service_name == "" and type(op.plan.approval) == "table"
          and op.deployment.id == "" and #op.deployment.old_coordinates == 0
          and type(op.deployment.new_coordinates) == "table"
          and op.node.name == "" and op.node.update_domain == "" and type(op.node.labels) == "table"
        if not defaults then return deny("a default is missing") end
        return approve(tostring(op.plan.name) .. " " .. tostring(op.custom) .. " " .. tostring(op.plan.extra))
      end,
    })");
  REQUIRE(fx.registry->reloadAll().failed == 0);
  FakeData data;
  PolicyEngine engine(*fx.registry, fx.clock);
  auto reason = [&](const Json& op) {
    Evaluation e = engine.evaluate(op, data);
    REQUIRE(e.decisions.size() == 1);
    return e.decisions[0].record.verdict + ": " + e.decisions[0].record.reasons[0].get<std::string>();
  };
  CHECK(reason(Json::object()) == "approve:  nil nil");
  CHECK(reason(Json::array()) == "approve:  nil nil");
  CHECK(reason(Json{{"type", nullptr}, {"plan", nullptr}, {"node", {{"name", nullptr}, {"labels", nullptr}}}}) ==
        "approve:  nil nil");
  CHECK(reason(Json{{"custom", "x"}, {"plan", {{"name", "web"}, {"extra", 3}}}}) == "approve: web x 3");
}

TEST_CASE("lua: an evaluation serialises to the dry-run JSON shape") {
  RegistryFixture fx;
  writeFile(fx.policy("gate.lua"), simplePolicy("gate", "manual('look first')", "soft"));
  fx.registry->reloadAll();
  PolicyEngine engine(*fx.registry, fx.clock);
  FakeData data;
  const Json j = engine.evaluate(prodOp(), data);
  CHECK(j["outcome"] == "PENDING_APPROVAL");
  CHECK(j["decisions"][0]["policy"] == "gate");
  CHECK(j["decisions"][0]["level"] == "soft");
  CHECK(j["decisions"][0]["verdict"] == "manual");
  CHECK(j["decisions"][0]["reasons"] == Json::array({"look first"}));
}


namespace {

// The evaluation of prodOp() by one policy whose decide returns `verdict`.
Evaluation evaluateVerdict(const std::string& verdict) {
  RegistryFixture fx;
  writeFile(fx.policy("one.lua"), simplePolicy("one", verdict));
  REQUIRE(fx.registry->reloadAll().failed == 0);
  PolicyEngine engine(*fx.registry, fx.clock);
  FakeData data;
  return engine.evaluate(prodOp(), data);
}

}  // namespace

TEST_CASE("lua: manual{...} asks for several approvals, a role and people other than the requester") {
  const Evaluation e =
      evaluateVerdict(R"(manual{ approvals = 2, role = "approver", distinct_from = {"requester"} })");
  CHECK(e.outcome == Outcome::kPendingApproval);
  CHECK(e.approvals.approvals == 2);
  CHECK(e.approvals.role == "approver");
  CHECK(e.approvals.distinct_from == std::vector<std::string>{"requester"});
  REQUIRE(e.decisions.size() == 1);
  CHECK(e.decisions[0].record.reasons == Json::array({"2 approvals required"}));
  const Json dry_run = e;
  CHECK(dry_run["approvals"]["required"] == 2);
}

TEST_CASE("lua: a manual{...} with a bad field fails closed and says what is wrong") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"manual{ approvals = 0 }", "approvals must be a whole number"},
      {"manual{ approvals = 1.5 }", "approvals must be a whole number"},
      {R"(manual{ role = "boss" })", "role must be viewer, operator, approver or admin"},
      {"manual{ distinct_from = \"requester\" }", "distinct_from must be a list of names"},
      {"manual{ approval = 2 }", "unknown field 'approval'"},
  };
  for (const auto& one_case : cases) {
    const std::string verdict = one_case.first, problem = one_case.second;  // clang's lambdas cannot capture a binding
    CAPTURE(verdict);
    const Evaluation e = evaluateVerdict(verdict);
    CHECK(e.outcome == Outcome::kPendingApproval);
    CHECK(e.approvals.approvals == 1);
    REQUIRE(e.decisions.size() == 1);
    CHECK(e.decisions[0].record.error_class == "runtime");
    CHECK(e.decisions[0].record.reasons.dump().find(problem) != std::string::npos);
  }
}
