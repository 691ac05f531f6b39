#include "drivers/process/workload_metrics.h"

#include <cmath>

#include "host/core/prometheus_text.h"

namespace tide::drivers {

WorkloadMetrics::WorkloadMetrics(std::string instance, std::string version, double error_rate)
    : labels_("tide_instance=\"" + prometheusLabelValue(instance) + "\",version=\"" + prometheusLabelValue(version) + "\""),
      error_rate_(error_rate) {
  // Series that exist from the first scrape on: a rate() over a counter that appears later
  // misses its first increase.
  by_status_[200] = 0;
  if (error_rate_ > 0) by_status_[500] = 0;
}

bool WorkloadMetrics::nextFails() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t n = ++requests_;
  return std::floor(static_cast<double>(n) * error_rate_) > std::floor(static_cast<double>(n - 1) * error_rate_);
}

void WorkloadMetrics::record(int status, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++by_status_[status];
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) {
      ++buckets_[i];
      break;
    }
  }
  seconds_sum_ += seconds;
  ++count_;
}

std::string WorkloadMetrics::render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out =
      "# HELP tide_workload_requests_total Requests answered on /, by status code.\n"
      "# TYPE tide_workload_requests_total counter\n";
  for (const auto& [status, n] : by_status_) {
    out += "tide_workload_requests_total{" + labels_ + ",code=\"" + std::to_string(status) + "\"} " +
           std::to_string(n) + "\n";
  }
  out +=
      "# HELP tide_workload_request_duration_seconds Time to answer a request on /.\n"
      "# TYPE tide_workload_request_duration_seconds histogram\n";
  out += prometheusHistogram("tide_workload_request_duration_seconds", labels_, kBuckets, buckets_, count_, seconds_sum_);
  return out;
}

}  // namespace tide::drivers
