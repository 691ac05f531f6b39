// The MetricFetcher's caching and pacing, with a counting fake in place of HTTP.
#include "host/engine/metric_fetcher.h"

#include <doctest/doctest.h>

#include <atomic>

#include "tests/support/eventually.h"

using namespace tide;
using namespace tide::engine;
using namespace tide::testing;

namespace {

model::MetricQuery query(const std::string& provider, const std::string& text) {
  model::MetricQuery q;
  q.provider = provider;
  q.query = text;
  return q;
}

struct CountingFetch {
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  MetricFetcher::Fetch fetch() {
    auto counter = calls;
    return [counter](const model::MetricProvider& provider, const model::MetricQuery& q) -> Result<double> {
      ++*counter;
      if (q.query == "broken") return Status::unavailable("cannot connect (refused or unreachable)");
      return provider.timeout_ms / 1000.0;
    };
  }
};

const model::MetricProviders kProviders = {{"prom", {"prometheus", "http://127.0.0.1:9", 2000, ""}}};

}  // namespace

TEST_CASE("metric fetcher: the same query asked twice in one pass is fetched once") {
  CountingFetch counting;
  MetricFetcher fetcher(kProviders, {}, counting.fetch());
  std::atomic<int> answered{0};
  fetcher.onAnswer([&answered] { ++answered; });
  CHECK(fetcher.request({query("prom", "up"), query("prom", "up"), query("prom", "broken")}) == 2);
  REQUIRE(eventually([&] { return fetcher.idle() && answered == 2; }));
  CHECK(*counting.calls == 2);
  CHECK(fetcher.answers() ==
        nlohmann::json{{"prom", {{"up", 2.0}, {"broken", "prom: cannot connect (refused or unreachable)"}}}});
}

TEST_CASE("metric fetcher: an answer younger than refresh_after is not fetched again, an older one is") {
  CountingFetch counting;
  MetricFetcher cached(kProviders, {std::chrono::hours(1), std::chrono::seconds(300)}, counting.fetch());
  cached.request({query("prom", "up")});
  REQUIRE(eventually([&] { return cached.idle() && !cached.answers().empty(); }));
  CHECK(cached.request({query("prom", "up")}) == 0);
  CHECK(*counting.calls == 1);

  MetricFetcher fresh(kProviders, {std::chrono::milliseconds(0), std::chrono::seconds(300)}, counting.fetch());
  fresh.request({query("prom", "up")});
  REQUIRE(eventually([&] { return fresh.idle() && !fresh.answers().empty(); }));
  CHECK(fresh.request({query("prom", "up")}) == 1);
  REQUIRE(eventually([&] { return fresh.idle() && fresh.fetches() == 2; }));
  CHECK(*counting.calls == 3);
}

TEST_CASE("metric fetcher: a query of an undeclared provider is answered with why, without a request") {
  CountingFetch counting;
  MetricFetcher fetcher(kProviders, {}, counting.fetch());
  fetcher.request({query("datadog", "avg:x")});
  REQUIRE(eventually([&] { return fetcher.idle() && !fetcher.answers().empty(); }));
  CHECK(*counting.calls == 0);
  CHECK(fetcher.answers()["datadog"]["avg:x"] == "datadog: no such metric provider (the host config declares prom)");
}

TEST_CASE("metric fetcher: range options name a query apart from the instant one") {
  model::MetricQuery ranged = query("prom", "up");
  ranged.range_seconds = 300;
  ranged.reduce = "avg";
  CHECK(ranged.key() == "up [range=300 reduce=avg]");
  CHECK(query("prom", "up").key() == "up");
  CountingFetch counting;
  MetricFetcher fetcher(kProviders, {}, counting.fetch());
  CHECK(fetcher.request({ranged, query("prom", "up")}) == 2);
  REQUIRE(eventually([&] { return fetcher.idle() && fetcher.answers()["prom"].size() == 2; }));
}
