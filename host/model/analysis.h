#pragma once
// Metric analysis (docs/architecture.md#metric-analysis): the metric providers the host
// config declares (`analysis.providers`) and the queries a strategy's analysis asks of them.
// The host answers queries outside the Lua state (engine/metric_fetcher.h); a strategy sees
// the answers the host already has.

#include <map>
#include <string>

namespace tide::model {

// One `analysis.providers.<name>` entry of the host config.
struct MetricProvider {
  std::string type;  // "prometheus" (its HTTP API) | "http" (GET a URL, read a JSON path)
  std::string url;   // prometheus: the server's base URL; http: the URL a query's text is appended to
  int timeout_ms = 2000;
  std::string json_path;  // http: where the number is in the answer ("data.error_rate", "items[0].value")

  bool operator==(const MetricProvider&) const = default;
};

using MetricProviders = std::map<std::string, MetricProvider>;  // by name

// One question to a provider. The query text has its {{variables}} substituted already.
struct MetricQuery {
  std::string provider;
  std::string query;       // PromQL, or (http) the text appended to the provider's URL
  int range_seconds = 0;   // prometheus: 0 for an instant query, else query_range over the last range_seconds
  int step_seconds = 0;    // query_range's step; 0: range_seconds / 10, at least 1
  std::string reduce;      // how a range's points become one number: max (default), min, avg, last
  std::string json_path;   // http: overrides the provider's json_path when not empty

  // The text that names the query among its provider's answers: the query itself for an
  // instant query, else the query followed by its options, "q [range=300 step=15 reduce=max]".
  std::string key() const;

  bool operator<(const MetricQuery& other) const;
  bool operator==(const MetricQuery&) const = default;
};

}  // namespace tide::model
