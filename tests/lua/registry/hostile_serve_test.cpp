// `tide serve` with hostile policies: it starts (a policy that spins at top level or in
// its tests table fails validation in bounded time), keeps answering HTTP while a spinning
// policy is evaluated, never approves through it, and reloads in bounded time.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/cli/serve_process.h"
#include "tests/lua/lua_test_util.h"

using namespace std::chrono_literals;
using Json = nlohmann::json;

namespace {

constexpr const char* kSpinningDecide = R"(return {
  name = "spin",
  decide = function(op, ctx)
    while true do pcall(function() while true do end end) end
  end,
})";

constexpr const char* kSpinningTopLevel = R"(while true do pcall(function() while true do end end) end
return { name = "top-spin", decide = function() return approve("escaped") end })";

std::string spinningTests() {
  std::string cases;
  for (int i = 0; i < 500; ++i) cases += "  { name = 'spin', expect = 'approve' },\n";
  return "return {\n  name = 'tests-spin',\n  decide = function() while true do end end,\n  tests = {\n" + cases +
         "  },\n}\n";
}

}  // namespace

TEST_CASE("hostile scripts: tide serve starts, answers and reloads with policies that spin") {
  tide::lua::testing::TempDir dir;
  const std::filesystem::path policies = dir.path() / "policies";
  tide::lua::testing::writeFile(policies / "spin.lua", kSpinningDecide);
  tide::lua::testing::writeFile(policies / "top_spin.lua", kSpinningTopLevel);
  tide::lua::testing::writeFile(policies / "tests_spin.lua", spinningTests());

  // Validation runs each call under the registry's validation deadline (500 ms), and the
  // spinning tests table for testRunBudget() of it (10 s): start-up takes about that long.
  tide::testing::ServeProcess serve("policies_dir: " + policies.string() + "\nlimits: {lua_deadline_ms: 20}\n");
  // Generous watchdogs for a loaded machine, not measurements: what must hold is that
  // every request is answered at all, and is not stuck behind the spinning policy.
  httplib::Client client(serve.url());
  client.set_read_timeout(60s);
  const httplib::Headers auth = {{"Authorization", "Bearer " + serve.token()}};

  std::atomic<bool> stop{false};
  std::atomic<int> evaluations{0};
  std::atomic<int> approved{0};
  std::atomic<int> not_timeout{0};
  std::thread evaluator([&] {
    httplib::Client c(serve.url());
    c.set_read_timeout(60s);
    while (!stop) {
      const Json body = {{"op", {{"type", "CREATE"}, {"plan", {{"name", "web"}, {"namespace", "prod"}}}}}};
      auto reply = c.Post("/v1/policies/evaluate", auth, body.dump(), "application/json");
      if (!reply || reply->status != 200) continue;
      const Json result = Json::parse(reply->body, nullptr, false);
      if (result.value("outcome", "") == "APPROVED") ++approved;
      bool spin_timed_out = false;
      for (const Json& decision : result.value("decisions", Json::array())) {
        if (decision.value("policy", "") == "spin") spin_timed_out = decision.value("error_class", "") == "timeout";
      }
      if (!spin_timed_out) ++not_timeout;
      ++evaluations;
    }
  });

  // While the spinning policy is evaluated again and again, the host keeps answering.
  CHECK(tide::testing::eventually([&] { return evaluations.load() >= 1; }, 60s));
  for (int i = 0; i < 20; ++i) {
    auto health = client.Get("/healthz");
    REQUIRE(health);
    CHECK(health->status == 200);
  }
  // A changed hostile file is validated again by the reload, which still returns.
  tide::lua::testing::writeFile(policies / "top_spin.lua", std::string("-- edited\n") + kSpinningTopLevel);
  const auto reload_started = std::chrono::steady_clock::now();
  auto reload = client.Post("/v1/scripts/reload", auth, "{}", "application/json");
  const auto reload_took = std::chrono::steady_clock::now() - reload_started;
  REQUIRE(reload);
  CHECK(reload->status == 200);
  MESSAGE("reload with hostile policies took "
          << std::chrono::duration_cast<std::chrono::milliseconds>(reload_took).count() << " ms");
  CHECK(tide::testing::eventually([&] { return evaluations.load() >= 5; }, 60s));
  stop = true;
  evaluator.join();
  CHECK(approved.load() == 0);
  CHECK(not_timeout.load() == 0);

  // The files that spin while they are validated are listed as failed, with the reason.
  auto scripts = client.Get("/v1/scripts", auth);
  REQUIRE(scripts);
  CHECK(scripts->status == 200);
  const Json listed = Json::parse(scripts->body, nullptr, false);
  auto find = [&](const std::string& file) {
    const Json items = listed.is_object() ? listed.value("items", Json::array()) : listed;
    for (const Json& item : items) {
      if (item.value("path", "").ends_with(file)) return item;
    }
    return Json();
  };
  const Json top_spin = find("top_spin.lua");
  CHECK(top_spin.value("last_error_class", "") == "timeout");
  CHECK(top_spin.value("last_error", "").find("deadline of") != std::string::npos);
  const Json tests_spin = find("tests_spin.lua");
  CHECK(tests_spin.value("last_error", "").find("the time budget of a tests table") != std::string::npos);
}
