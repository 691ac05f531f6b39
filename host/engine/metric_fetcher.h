#pragma once
// The host's side of metric analysis (docs/architecture.md#metric-analysis): it fetches the
// metric queries the strategies asked for through r.metric, on its own thread, and holds the
// answers the next passes hand to the strategies in the rollout snapshot's `metrics`. No Lua
// state waits for a provider and no fetch counts against a strategy's deadline: a pass reads
// what was fetched after an earlier one.
//
// A query is fetched once however many strategies asked it in a pass (request() takes the
// pass's queries at once), and not again while its answer is younger than refresh_after or a
// fetch of it is queued or running. Each answer is a number or the reason there is none
// ("prom: cannot connect (refused or unreachable)", "web: no such metric provider (the host
// config declares prom)"); a new answer replaces the old one
// and calls the onAnswer callback, so the control loop can run a pass with it at once.
//
// Thread-safety: every member may be called from any thread. The callback runs on the
// fetcher's thread, with no lock held.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/status.h"
#include "host/model/analysis.h"

namespace tide::engine {

struct MetricFetcherOptions {
  // A query answered less than this long ago is not fetched again: the metrics server gets
  // at most one request per query in this time, however often the control loop passes.
  // Real (steady) time on purpose: it paces I/O, not a rollout.
  std::chrono::milliseconds refresh_after{1000};
  // An answer no pass asked for in this long is forgotten.
  std::chrono::seconds forget_after{300};
};

class MetricFetcher {
 public:
  // The function that asks a provider a query; fetchMetric (metric_provider.h) by default.
  using Fetch = std::function<Result<double>(const model::MetricProvider&, const model::MetricQuery&)>;

  explicit MetricFetcher(model::MetricProviders providers, MetricFetcherOptions options = {}, Fetch fetch = nullptr);
  ~MetricFetcher();  // stop()s

  // Called after each answer is stored. Set it before the first request().
  void onAnswer(std::function<void()> callback);

  // Queues the queries not already queued, running or answered within refresh_after, and
  // starts the thread if it is not running. Returns how many it queued.
  int request(const std::vector<model::MetricQuery>& queries);

  // The answers held, in the snapshot's shape: {provider: {query key: number | reason}}.
  nlohmann::json answers() const;

  // Ends the thread after the fetch in progress (bounded by its provider's timeout); queued
  // queries are dropped. A later request() starts it again.
  void stop();

  // Fetches started so far; whether nothing is queued or running. For tests.
  uint64_t fetches() const;
  bool idle() const;

 private:
  using Steady = std::chrono::steady_clock;
  struct Entry {
    bool queued = false;  // queued or being fetched
    std::optional<double> value;
    std::string reason;  // why there is no value; "" before the first answer
    std::optional<Steady::time_point> answered_at;
    Steady::time_point asked_at;
  };

  void run();
  Result<double> ask(const model::MetricQuery& query) const;

  const model::MetricProviders providers_;
  const MetricFetcherOptions options_;
  const Fetch fetch_;
  std::function<void()> on_answer_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::map<model::MetricQuery, Entry> entries_;  // REQUIRES: mu_
  std::deque<model::MetricQuery> queue_;         // REQUIRES: mu_
  bool stopping_ = false;                        // REQUIRES: mu_
  int running_ = 0;                              // fetches in progress; REQUIRES: mu_
  uint64_t fetches_ = 0;                         // REQUIRES: mu_
  std::thread thread_;                           // REQUIRES: mu_ to start it
};

}  // namespace tide::engine
