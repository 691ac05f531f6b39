#include "host/engine/engine_metrics.h"

#include <sstream>

namespace tide::engine {
namespace {

void renderHistogram(std::ostringstream& out, const std::string& name, const std::string& labels,
                     const std::array<double, 12>& bounds, const std::array<uint64_t, 12>& buckets, uint64_t count,
                     double sum) {
  const std::string sep = labels.empty() ? "" : ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds.size(); ++i) {
    cumulative += buckets[i];
    out << name << "_bucket{" << labels << sep << "le=\"" << bounds[i] << "\"} " << cumulative << "\n";
  }
  out << name << "_bucket{" << labels << sep << "le=\"+Inf\"} " << count << "\n";
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out << name << "_sum" << braces << " " << sum << "\n";
  out << name << "_count" << braces << " " << count << "\n";
}

}  // namespace

void EngineMetrics::Histogram::observe(double seconds) {
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) {
      ++buckets[i];
      break;
    }
  }
  ++count;
  sum += seconds;
}

void EngineMetrics::observePass(std::chrono::duration<double> elapsed) {
  std::lock_guard<std::mutex> lock(mu_);
  passes_.observe(elapsed.count());
}

void EngineMetrics::observeDriverCall(const std::string& call, bool ok, std::chrono::duration<double> elapsed) {
  std::lock_guard<std::mutex> lock(mu_);
  driver_calls_[call].observe(elapsed.count());
  if (!ok) ++driver_errors_[call];
}

void EngineMetrics::observeDirty(size_t rows) {
  std::lock_guard<std::mutex> lock(mu_);
  dirty_last_ = rows;
  dirty_total_ += rows;
}

void EngineMetrics::observeLiveness(size_t unreachable_nodes, bool partition_alarm) {
  std::lock_guard<std::mutex> lock(mu_);
  unreachable_nodes_ = unreachable_nodes;
  partition_alarm_ = partition_alarm;
}

void EngineMetrics::countAttempt(const std::string& type, const std::string& outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  ++attempts_[{type, outcome}];
}

std::string EngineMetrics::render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream out;
  out << "# HELP tide_reconcile_pass_duration_seconds Duration of one pass of the control loop.\n"
      << "# TYPE tide_reconcile_pass_duration_seconds histogram\n";
  renderHistogram(out, "tide_reconcile_pass_duration_seconds", "", kBuckets, passes_.buckets, passes_.count,
                  passes_.sum);
  out << "# HELP tide_reconcile_dirty_rows Ledger rows the last pass refreshed its picture from.\n"
      << "# TYPE tide_reconcile_dirty_rows gauge\n"
      << "tide_reconcile_dirty_rows " << dirty_last_ << "\n"
      << "# HELP tide_reconcile_dirty_rows_total Ledger rows passes refreshed their picture from.\n"
      << "# TYPE tide_reconcile_dirty_rows_total counter\n"
      << "tide_reconcile_dirty_rows_total " << dirty_total_ << "\n";
  out << "# HELP tide_driver_call_duration_seconds Latency of driver calls.\n"
      << "# TYPE tide_driver_call_duration_seconds histogram\n";
  for (const auto& [call, h] : driver_calls_) {
    renderHistogram(out, "tide_driver_call_duration_seconds", "call=\"" + call + "\"", kBuckets, h.buckets, h.count,
                    h.sum);
  }
  out << "# HELP tide_driver_call_errors_total Driver calls that returned an error.\n"
      << "# TYPE tide_driver_call_errors_total counter\n";
  for (const auto& [call, n] : driver_errors_) {
    out << "tide_driver_call_errors_total{call=\"" << call << "\"} " << n << "\n";
  }
  out << "# HELP tide_operation_attempts_total Operation attempts by type and outcome.\n"
      << "# TYPE tide_operation_attempts_total counter\n";
  for (const auto& [key, n] : attempts_) {
    out << "tide_operation_attempts_total{type=\"" << key.first << "\",outcome=\"" << key.second << "\"} " << n << "\n";
  }
  out << "# HELP tide_unreachable_nodes Nodes the drivers could not reach at the last pass.\n"
      << "# TYPE tide_unreachable_nodes gauge\n"
      << "tide_unreachable_nodes " << unreachable_nodes_ << "\n"
      << "# HELP tide_partition_alarm 1 while the partition alarm holds the replacement of unreachable nodes.\n"
      << "# TYPE tide_partition_alarm gauge\n"
      << "tide_partition_alarm " << (partition_alarm_ ? 1 : 0) << "\n";
  return out.str();
}

}  // namespace tide::engine
