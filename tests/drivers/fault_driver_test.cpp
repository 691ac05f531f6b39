#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <future>

#include "drivers/fault/fault_driver.h"

using namespace tide;
using namespace tide::drivers;

namespace {

// Counts the calls that reach it and always succeeds.
class CountingDriver final : public Driver {
 public:
  std::atomic<int> ensures{0};
  std::atomic<int> stops{0};
  std::atomic<int> statuses{0};

  Status ensureVolume(const VolumeSpec&) override { return Status::ok(); }
  Status removeVolume(const VolumeRef&) override { return Status::ok(); }
  Result<RuntimeStatus> ensure(const RuntimeSpec&) override {
    ++ensures;
    return RuntimeStatus{model::WorkloadState::kRunning, "fake", Json::object(), 0, "", std::nullopt};
  }
  Status stop(const RuntimeRef&) override {
    ++stops;
    return Status::ok();
  }
  Status remove(const RuntimeRef&) override { return Status::ok(); }
  Result<RuntimeStatus> status(const RuntimeRef&) override {
    ++statuses;
    return RuntimeStatus{model::WorkloadState::kRunning, "fake", Json::object(), 0, "", std::nullopt};
  }
  Result<std::vector<RuntimeRef>> list() override { return std::vector<RuntimeRef>{}; }
};

FaultOptions optionsFrom(const Json& config) {
  auto options = parseFaultOptions(config);
  REQUIRE_MESSAGE(options.isOk(), options.status().toString());
  return options.value();
}

std::vector<Code> statusCodes(FaultDriver& driver, int calls) {
  std::vector<Code> codes;
  for (int i = 0; i < calls; ++i) codes.push_back(driver.status({"1", "n", ""}).status().code());
  return codes;
}

}  // namespace

TEST_CASE("driver: fault injection is deterministic for a seed") {
  Json config = {{"inner", "process"}, {"seed", 42}, {"error_rate", 0.3}, {"lost_reply_rate", 0.2}};
  FaultDriver a(std::make_unique<CountingDriver>(), optionsFrom(config));
  FaultDriver b(std::make_unique<CountingDriver>(), optionsFrom(config));
  std::vector<Code> first = statusCodes(a, 200);
  CHECK(first == statusCodes(b, 200));
  CHECK(std::count(first.begin(), first.end(), Code::kUnavailable) > 0);
  CHECK(std::count(first.begin(), first.end(), Code::kOk) > 0);
  CHECK(a.counts().calls == 200);
  CHECK(a.counts().errors + a.counts().lost_replies == std::count(first.begin(), first.end(), Code::kUnavailable));

  config["seed"] = 43;
  FaultDriver c(std::make_unique<CountingDriver>(), optionsFrom(config));
  CHECK(statusCodes(c, 200) != first);
}

TEST_CASE("driver: fault errors skip the inner call, lost replies make it") {
  auto inner = std::make_unique<CountingDriver>();
  CountingDriver& counting = *inner;
  FaultDriver errors(std::move(inner), optionsFrom({{"inner", "process"}, {"error_rate", 1.0}}));
  CHECK(errors.ensure({}).status().code() == Code::kUnavailable);
  CHECK(counting.ensures == 0);

  auto inner2 = std::make_unique<CountingDriver>();
  CountingDriver& counting2 = *inner2;
  FaultDriver lost(std::move(inner2), optionsFrom({{"inner", "process"}, {"lost_reply_rate", 1.0}}));
  auto reply = lost.ensure({});
  CHECK(reply.status().code() == Code::kUnavailable);
  CHECK(reply.status().message().find("lost") != std::string::npos);
  CHECK(counting2.ensures == 1);
  CHECK(lost.counts().lost_replies == 1);
}

TEST_CASE("driver: fault calls filter limits which calls are affected") {
  auto inner = std::make_unique<CountingDriver>();
  CountingDriver& counting = *inner;
  FaultDriver driver(std::move(inner), optionsFrom({{"inner", "process"}, {"error_rate", 1.0}, {"calls", {"stop"}}}));
  CHECK(driver.ensure({}).isOk());
  CHECK(driver.status({}).isOk());
  CHECK(driver.stop({}).code() == Code::kUnavailable);
  CHECK(counting.stops == 0);
  CHECK(driver.counts().calls == 1);
}

TEST_CASE("driver: fault hangs are bounded and interruptible") {
  FaultDriver driver(std::make_unique<CountingDriver>(),
                     optionsFrom({{"inner", "process"}, {"hang_rate", 1.0}, {"hang_ms", 600000}}));
  auto hung = std::async(std::launch::async, [&] { return driver.status({}).status(); });
  // Interrupt until the call returns: the first interrupt may come before it sleeps.
  bool returned = false;
  for (int i = 0; i < 2000 && !returned; ++i) {
    driver.interrupt();
    returned = hung.wait_for(std::chrono::milliseconds(10)) == std::future_status::ready;
  }
  REQUIRE(returned);
  CHECK(hung.get().code() == Code::kDeadlineExceeded);
  CHECK(driver.counts().hangs == 1);

  FaultDriver short_hang(std::make_unique<CountingDriver>(),
                         optionsFrom({{"inner", "process"}, {"hang_rate", 1.0}, {"hang_ms", 1}, {"latency_ms", 1}}));
  CHECK(short_hang.stop({}).code() == Code::kDeadlineExceeded);
}

TEST_CASE("driver: fault config errors name every bad field") {
  auto fields = [](const Json& config) {
    std::vector<std::string> out;
    auto parsed = parseFaultOptions(config);
    REQUIRE(parsed.status().code() == Code::kInvalidArgument);
    for (const ErrorDetail& detail : parsed.status().details()) out.push_back(detail.field);
    return out;
  };
  CHECK(fields({{"inner", "process"},
                {"seed", -1},
                {"error_rate", 2},
                {"lost_reply_rate", "often"},
                {"latency_ms", {50, 10}},
                {"hang_rate", -0.1},
                {"hang_ms", 10000000},
                {"calls", {"ensure", "reboot"}},
                {"inner_config", "x"},
                {"bogus", true}}) ==
        std::vector<std::string>{"driver_config.bogus", "driver_config.inner_config", "driver_config.seed",
                                 "driver_config.error_rate", "driver_config.lost_reply_rate", "driver_config.hang_rate",
                                 "driver_config.latency_ms", "driver_config.hang_ms", "driver_config.calls[1]"});
  CHECK(fields(Json::object()) == std::vector<std::string>{"driver_config.inner"});
  CHECK(fields({{"inner", "process"}, {"calls", Json::array()}}) == std::vector<std::string>{"driver_config.calls"});
  CHECK(parseFaultOptions(nullptr).status().code() == Code::kInvalidArgument);

  FaultOptions options =
      optionsFrom({{"inner", "process"}, {"latency_ms", {5, 9}}, {"calls", {"ensure_volume", "list"}}});
  CHECK(options.latency_min == std::chrono::milliseconds(5));
  CHECK(options.latency_max == std::chrono::milliseconds(9));
  CHECK(options.calls == std::set<DriverCall>{DriverCall::kEnsureVolume, DriverCall::kList});
}

TEST_CASE("driver: fault statusAll draws one fate for the whole batch") {
  auto inner = std::make_unique<CountingDriver>();
  CountingDriver& counting = *inner;
  FaultDriver failing(std::move(inner),
                      optionsFrom({{"inner", "process"}, {"error_rate", 1.0}, {"calls", {"status"}}}));
  const std::vector<RuntimeRef> batch = {{"1", "n", ""}, {"2", "n", ""}, {"3", "n", ""}};
  CHECK(failing.statusAll(batch).status().code() == Code::kUnavailable);
  CHECK(failing.counts().calls == 1);
  CHECK(counting.statuses == 0);

  auto inner2 = std::make_unique<CountingDriver>();
  CountingDriver& counting2 = *inner2;
  FaultDriver passing(std::move(inner2), optionsFrom({{"inner", "process"}, {"seed", 3}, {"error_rate", 0.0}}));
  auto answers = passing.statusAll(batch);
  REQUIRE(answers.isOk());
  CHECK(answers->size() == 3);
  CHECK(passing.counts().calls == 1);
  CHECK(counting2.statuses == 3);  // the inner driver's own statusAll (here the default, per ref)
}
