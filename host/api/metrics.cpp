#include "host/api/metrics.h"

#include "host/core/prometheus_text.h"

namespace tide::api {

void HttpMetrics::observe(std::string_view method, std::string_view route, int code,
                          std::chrono::duration<double> elapsed) {
  double seconds = elapsed.count();
  std::lock_guard<std::mutex> lock(mu_);
  auto series = routes_.find(std::tuple(method, route));
  if (series == routes_.end()) series = routes_.try_emplace(std::tuple(std::string(method), std::string(route))).first;
  ++series->second.requests[code];
  Histogram& histogram = series->second.durations;
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) {
      ++histogram.buckets[i];
      break;
    }
  }
  ++histogram.count;
  histogram.sum += seconds;
}

std::string HttpMetrics::render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  out += "# HELP tide_http_requests_total HTTP requests served, by route pattern and status code.\n";
  out += "# TYPE tide_http_requests_total counter\n";
  for (const auto& [key, series] : routes_) {
    const auto& [method, route] = key;
    for (const auto& [code, count] : series.requests) {
      out += "tide_http_requests_total{method=\"" + prometheusLabelValue(method) + "\",route=\"" + prometheusLabelValue(route) +
             "\",code=\"" + std::to_string(code) + "\"} " + std::to_string(count) + "\n";
    }
  }
  out += "# HELP tide_http_request_duration_seconds Time to serve an HTTP request, by route pattern.\n";
  out += "# TYPE tide_http_request_duration_seconds histogram\n";
  for (const auto& [key, series] : routes_) {
    const auto& [method, route] = key;
    const Histogram& histogram = series.durations;
    std::string labels = "method=\"" + prometheusLabelValue(method) + "\",route=\"" + prometheusLabelValue(route) + "\"";
    out += prometheusHistogram("tide_http_request_duration_seconds", labels, kBuckets, histogram.buckets,
                               histogram.count, histogram.sum);
  }
  out +=
      "# HELP tide_http_connections_dropped_total Connections closed unanswered: too many were waiting "
      "for their request to arrive (limits.max_waiting_connections).\n";
  out += "# TYPE tide_http_connections_dropped_total counter\n";
  out += "tide_http_connections_dropped_total " + std::to_string(dropped_.load(std::memory_order_relaxed)) + "\n";
  out +=
      "# HELP tide_http_connections_refused_total Requests answered 503 by the transport: "
      "limits.max_connections requests were being served.\n";
  out += "# TYPE tide_http_connections_refused_total counter\n";
  out += "tide_http_connections_refused_total " + std::to_string(refused_.load(std::memory_order_relaxed)) + "\n";
  return out;
}

}  // namespace tide::api
