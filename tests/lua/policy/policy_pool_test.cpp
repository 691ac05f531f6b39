#include "host/lua/policy/policy_pool.h"
#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tests/lua/lua_test_util.h"

using namespace tide;
using namespace tide::lua;
using namespace tide::lua::testing;
using namespace std::chrono_literals;

namespace {

// ctx.in_flight answers a fixed number per data source.
class CountData final : public PolicyDataSource {
 public:
  explicit CountData(int64_t in_flight) : in_flight_(in_flight) {}
  Result<int64_t> inFlight(const Json&) override { return in_flight_; }
  Result<int64_t> count(const Json&) override { return 0; }
  Result<int64_t> recentFailures(const Json&) override { return 0; }
  Result<Json> instances(const std::string&) override { return Json::array(); }
  Result<Json> node(const std::string&) override { return Json(nullptr); }

 private:
  int64_t in_flight_;
};

Json opFor(const std::string& meta_instance) {
  return {{"type", "UPDATE"}, {"meta_instance", meta_instance}, {"plan", {{"name", "web"}, {"namespace", "prod"}}}};
}

std::string reasonOf(const Evaluation& evaluation) {
  if (evaluation.decisions.empty() || evaluation.decisions[0].record.reasons.empty()) return "";
  return evaluation.decisions[0].record.reasons[0].get<std::string>();
}

// Echoes what it was given, so an answer shows which op, data and clock it was computed from.
const char* kEchoPolicy = R"(
return {
  name = "echo",
  decide = function(op, ctx)
    return approve(string.format("%s in_flight=%d hour=%d", op.meta_instance, ctx.in_flight{}, ctx.now().hour))
  end,
}
)";

// Marks itself busy while deciding: a run interrupted half-way leaves `busy` set in its
// state, and every later run on that state would deny.
const char* kInterruptiblePolicy = R"(
local busy = false
return {
  name = "interruptible",
  decide = function(op, ctx)
    if busy then return deny("state left behind by an interrupted run") end
    busy = true
    if op.meta_instance == "spin" then while true do end end
    if op.meta_instance == "hog" then local s = string.rep("x", 64 * 1024 * 1024) end
    if op.meta_instance == "boom" then busy = false; error("boom") end
    busy = false
    return approve("clean")
  end,
}
)";

}  // namespace

TEST_CASE("lua: a policy pool reuses one Lua state across evaluations until the scripts change") {
  RegistryFixture fx;
  writeFile(fx.policy("echo.lua"), kEchoPolicy);
  REQUIRE(fx.registry->reloadAll().failed == 0);
  PolicyPool pool(*fx.registry, fx.clock, {{}, 2});
  CountData data(3);
  for (int i = 0; i < 50; ++i) {
    auto evaluation = pool.evaluate(opFor("web-" + std::to_string(i)), data, fx.clock);
    REQUIRE(evaluation.isOk());
    CHECK(reasonOf(*evaluation) == "web-" + std::to_string(i) + " in_flight=3 hour=10");
  }
  CHECK(pool.engines() == 1);  // one caller at a time never needs a second engine
  CHECK(pool.builds() == 1);

  // Hot reload: the next evaluation sees the new version, built once.
  writeFile(fx.policy("echo.lua"), simplePolicy("echo", "deny(\"changed\")"));
  REQUIRE(fx.registry->reloadAll().loaded == 1);
  for (int i = 0; i < 5; ++i) {
    auto evaluation = pool.evaluate(opFor("web"), data, fx.clock);
    REQUIRE(evaluation.isOk());
    CHECK(evaluation->outcome == Outcome::kRejected);
    CHECK(evaluation->script_set_version == fx.registry->current()->version);
  }
  CHECK(pool.builds() == 2);
}

TEST_CASE("lua: each pooled evaluation reads the clock it is given") {
  RegistryFixture fx;
  writeFile(fx.policy("echo.lua"), kEchoPolicy);
  REQUIRE(fx.registry->reloadAll().failed == 0);
  PolicyPool pool(*fx.registry, fx.clock, {{}, 1});
  CountData data(0);
  FakeClock morning(*parseTimestamp("2026-03-03T08:15:00Z"));
  FakeClock evening(*parseTimestamp("2026-03-03T19:45:00Z"));
  for (int i = 0; i < 3; ++i) {
    auto early = pool.evaluate(opFor("a"), data, morning);
    auto late = pool.evaluate(opFor("a"), data, evening);
    REQUIRE(early.isOk());
    REQUIRE(late.isOk());
    CHECK(reasonOf(*early) == "a in_flight=0 hour=8");
    CHECK(early->at == "2026-03-03T08:15:00.000Z");
    CHECK(reasonOf(*late) == "a in_flight=0 hour=19");
  }
  CHECK(reasonOf(*pool.evaluate(opFor("a"), data, fx.clock)) == "a in_flight=0 hour=10");
  CHECK(pool.builds() == 1);
}

TEST_CASE("lua: concurrent pooled evaluations hold different engines and get independent answers") {
  RegistryFixture fx;
  writeFile(fx.policy("echo.lua"), kEchoPolicy);
  REQUIRE(fx.registry->reloadAll().failed == 0);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200;
  PolicyPool pool(*fx.registry, fx.clock, {{}, kThreads});

  {
    auto first = pool.borrow();
    auto second = pool.borrow();
    REQUIRE(first.isOk());
    REQUIRE(second.isOk());
    CHECK(&first->engine() != &second->engine());
  }

  std::atomic<int> wrong{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      CountData data(t);
      FakeClock clock(*parseTimestamp("2026-03-03T1" + std::to_string(t) + ":00:00Z"));
      ++ready;
      while (ready < kThreads) std::this_thread::yield();
      for (int i = 0; i < kPerThread; ++i) {
        const std::string name = "t" + std::to_string(t) + "-" + std::to_string(i);
        auto evaluation = pool.evaluate(opFor(name), data, clock);
        const std::string expected = name + " in_flight=" + std::to_string(t) + " hour=1" + std::to_string(t);
        if (!evaluation.isOk() || evaluation->outcome != Outcome::kApproved || reasonOf(*evaluation) != expected) {
          ++wrong;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(wrong == 0);
  CHECK(pool.engines() >= 2);
  CHECK(pool.engines() <= kThreads);
  // No engine built its state twice. An engine is built on its first evaluation, so one that
  // the threads never needed (they need not overlap on a loaded machine) was not built.
  CHECK(pool.builds() <= pool.engines());
}

TEST_CASE("lua: a policy pool at its bound makes a borrower wait, then answers unavailable") {
  RegistryFixture fx;
  writeFile(fx.policy("echo.lua"), kEchoPolicy);
  REQUIRE(fx.registry->reloadAll().failed == 0);

  PolicyPool quick(*fx.registry, fx.clock, {{}, 1, 30ms});
  {
    auto held = quick.borrow();
    REQUIRE(held.isOk());
    auto refused = quick.borrow();
    CHECK(refused.status().code() == Code::kUnavailable);
    CHECK(refused.status().message() == "all 1 policy evaluators are busy; try again");
  }

  PolicyPool patient(*fx.registry, fx.clock, {{}, 1, 10s});
  auto held = patient.borrow();
  REQUIRE(held.isOk());
  PolicyEngine* engine = &held->engine();
  std::thread giver([lease = std::move(held).value()]() mutable {
    std::this_thread::sleep_for(20ms);
    PolicyPool::Lease gone = std::move(lease);
  });
  auto waited = patient.borrow();
  giver.join();
  REQUIRE(waited.isOk());
  CHECK(&waited->engine() == engine);
  CHECK(patient.engines() == 1);
}

TEST_CASE("lua: a policy that hits a limit does not poison the pooled state for the next evaluation") {
  LuaLimits limits;
  limits.deadline = 20ms;
  limits.memory_bytes = 8u << 20;
  RegistryFixture fx(limits);
  writeFile(fx.policy("interruptible.lua"), kInterruptiblePolicy);
  REQUIRE(fx.registry->reloadAll().failed == 0);
  PolicyPool pool(*fx.registry, fx.clock, {{limits, Outcome::kPendingApproval}, 1});
  CountData data(0);

  auto clean = pool.evaluate(opFor("web"), data, fx.clock);
  REQUIRE(clean.isOk());
  CHECK(clean->outcome == Outcome::kApproved);

  // A runtime error unwinds like any Lua error: the state stays and keeps answering.
  auto boom = pool.evaluate(opFor("boom"), data, fx.clock);
  REQUIRE(boom.isOk());
  CHECK(boom->outcome == Outcome::kPendingApproval);
  CHECK(boom->decisions[0].record.error_class == "runtime");
  CHECK(pool.evaluate(opFor("web"), data, fx.clock)->outcome == Outcome::kApproved);
  CHECK(pool.builds() == 1);

  // A deadline or memory limit interrupts the policy half-way: the state is discarded, and
  // the next evaluation runs on a fresh one instead of seeing `busy` left set.
  for (const char* name : {"spin", "hog"}) {
    CAPTURE(name);
    const uint64_t builds_before = pool.builds();
    auto interrupted = pool.evaluate(opFor(name), data, fx.clock);
    REQUIRE(interrupted.isOk());
    CHECK(interrupted->outcome == Outcome::kPendingApproval);
    CHECK(interrupted->decisions[0].record.error_class == (std::string(name) == "spin" ? "timeout" : "memory"));
    auto next = pool.evaluate(opFor("web"), data, fx.clock);
    REQUIRE(next.isOk());
    CHECK(next->outcome == Outcome::kApproved);
    CHECK(reasonOf(*next) == "clean");
    CHECK(pool.builds() == builds_before + 1);
  }
  CHECK(pool.engines() == 1);
}
