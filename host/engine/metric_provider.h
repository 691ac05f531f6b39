#pragma once
// Asking a metric provider one query (docs/architecture.md#metric-analysis): the one place
// that speaks HTTP to Prometheus servers and JSON endpoints for the analyses. Called by the
// MetricFetcher's thread, never inside a Lua state.
//
//   prometheus  GET <url>/api/v1/query?query=Q (an instant query), or with range_seconds
//               GET <url>/api/v1/query_range?query=Q&start&end&step, whose points are
//               reduced to one number (max unless the query says min, avg or last). The
//               answer must hold exactly one series (or a scalar): aggregate with sum(...).
//   http        GET <url><query>, the number at json_path (the query's, else the provider's)
//               of the JSON answer; a numeric string counts as its number.
//
// Errors (kUnavailable for the transport and HTTP status, kInvalidArgument for an answer that
// holds no usable number) say what went wrong in words a person reads in a rollout's reason:
// "cannot connect (refused or unreachable)", "bad_data: parse error at char 4", "no data: the query
// matched no series", "answer is not JSON". NaN and infinities are "no data".
//
// Thread-safety: the functions share nothing; call them from any thread.

#include <string>

#include "host/core/status.h"
#include "host/model/analysis.h"

namespace tide::engine {

// Asks `provider` `query` over HTTP, within the provider's timeout_ms for connecting and
// again for reading.
Result<double> fetchMetric(const model::MetricProvider& provider, const model::MetricQuery& query);

// The number in a Prometheus HTTP API answer (`body` of /api/v1/query or /query_range);
// `reduce` as MetricQuery::reduce. For tests and fetchMetric.
Result<double> prometheusValue(const std::string& body, const std::string& reduce);

// The number at `json_path` ("data.rate", "items[0].value", "[2]") in the JSON `body`.
Result<double> jsonPathValue(const std::string& body, const std::string& json_path);

}  // namespace tide::engine
