#pragma once
// Request counters and latency histograms in Prometheus text format. Series are keyed by
// route pattern ("/v1/nodes/{name}"), never by raw path, so their number stays bounded.
//
// Thread-safety: all methods may be called concurrently.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

namespace tide::api {

// Route label for requests that matched no route.
inline constexpr std::string_view kUnmatchedRoute = "unmatched";

class HttpMetrics {
 public:
  void observe(std::string_view method, std::string_view route, int code, std::chrono::duration<double> elapsed);
  // A connection closed unanswered: limits.max_waiting_connections wait already (host/api/transport.h).
  void connectionDropped() { dropped_.fetch_add(1, std::memory_order_relaxed); }
  // A request answered 503 by the transport: limits.max_connections were being served.
  void connectionRefused() { refused_.fetch_add(1, std::memory_order_relaxed); }

  // tide_http_requests_total{method,route,code},
  // tide_http_request_duration_seconds{method,route} (buckets, sum, count) and
  // tide_http_connections_dropped_total and tide_http_connections_refused_total.
  std::string render() const;

 private:
  static constexpr std::array<double, 11> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  struct Histogram {
    std::array<uint64_t, kBuckets.size()> buckets{};  // non-cumulative; summed on render
    uint64_t count = 0;
    double sum = 0;
  };

  struct RouteSeries {
    std::map<int, uint64_t> requests;  // by status code
    Histogram durations;
  };

  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> refused_{0};
  // Orders (method, route) keys of strings and of string_views alike, so a series is found
  // without building its key's strings. (std::less<> would compare a tuple of strings with
  // a tuple of string_views, which libstdc++ allows under gcc and not under clang.)
  struct RouteKeyLess {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return std::tuple<std::string_view, std::string_view>(std::get<0>(a), std::get<1>(a)) <
             std::tuple<std::string_view, std::string_view>(std::get<0>(b), std::get<1>(b));
    }
  };

  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string>, RouteSeries, RouteKeyLess> routes_;  // REQUIRES: mu_
};

}  // namespace tide::api
