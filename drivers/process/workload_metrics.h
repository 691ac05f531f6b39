#pragma once
// What `tide workload` exports on GET /metrics (Prometheus text format 0.0.4), and its
// injected errors (docs/architecture.md#metric-analysis):
//   tide_workload_requests_total{tide_instance, version, code}            counter
//   tide_workload_request_duration_seconds{tide_instance, version}        histogram (_bucket{le}, _sum, _count)
// Only requests to / count: health checks and scrapes are not the service's traffic. The
// counters of 200 (and, with an error rate, 500) are exported from the start, at 0.
//
// Thread-safety: every member may be called from any thread (the server's handler threads).

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace tide::drivers {

class WorkloadMetrics {
 public:
  // `instance` and `version` label every series; `error_rate` in [0, 1] is the share of
  // requests answered 500.
  WorkloadMetrics(std::string instance, std::string version, double error_rate);

  // Whether the next request is to fail: exactly error_rate of the requests so far, spread
  // evenly (request n fails when floor(n * rate) grows), so a short run shows the share too.
  bool nextFails();

  void record(int status, double seconds);

  std::string render() const;

  static constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05,   0.1,   0.25,   0.5,   1,    2.5};

 private:
  const std::string labels_;  // tide_instance="...",version="..."
  const double error_rate_;
  mutable std::mutex mu_;
  uint64_t requests_ = 0;                          // REQUIRES: mu_
  std::map<int, uint64_t> by_status_;              // REQUIRES: mu_
  std::array<uint64_t, kBuckets.size()> buckets_{};  // not cumulative; REQUIRES: mu_
  double seconds_sum_ = 0;                         // REQUIRES: mu_
  uint64_t count_ = 0;                             // REQUIRES: mu_
};

}  // namespace tide::drivers
