#include "host/engine/engine_metrics.h"

#include <algorithm>
#include <sstream>

#include "host/core/prometheus_text.h"

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

std::string planLabel(const std::string& plan) { return "plan=\"" + prometheusLabelValue(plan) + "\""; }

// Seconds from `since` to `now`, never below 0 (a clock that stepped back).
std::string secondsSince(TimePoint since, TimePoint now) {
  return prometheusNumber(std::max(0.0, std::chrono::duration<double>(now - since).count()));
}

void renderFleet(std::ostringstream& out, const FleetGauges& fleet, TimePoint now) {
  out << "# HELP tide_rollouts 1 for each ACTIVE plan whose newest rollout is in_progress, held (PAUSED), failed "
         "or rolled_back.\n"
      << "# TYPE tide_rollouts gauge\n";
  for (const auto& [plan, g] : fleet.plans) {
    if (g.active && !g.rollout.empty()) {
      out << "tide_rollouts{" << planLabel(plan) << ",state=\"" << g.rollout << "\"} 1\n";
    }
  }
  out << "# HELP tide_rollout_held_seconds How long the plan's newest rollout has been held (PAUSED).\n"
      << "# TYPE tide_rollout_held_seconds gauge\n";
  for (const auto& [plan, g] : fleet.plans) {
    if (g.active && g.held_since) {
      out << "tide_rollout_held_seconds{" << planLabel(plan) << "} " << secondsSince(*g.held_since, now) << "\n";
    }
  }
  out << "# HELP tide_plan_desired_instances Instances the plan's current deployment asks for.\n"
      << "# TYPE tide_plan_desired_instances gauge\n";
  for (const auto& [plan, g] : fleet.plans) {
    if (g.active) out << "tide_plan_desired_instances{" << planLabel(plan) << "} " << g.desired_instances << "\n";
  }
  out << "# HELP tide_plan_running_instances Instances of the plan whose active runtime instance is RUNNING.\n"
      << "# TYPE tide_plan_running_instances gauge\n";
  for (const auto& [plan, g] : fleet.plans) {
    if (g.active) out << "tide_plan_running_instances{" << planLabel(plan) << "} " << g.running_instances << "\n";
  }
  out << "# HELP tide_operations_waiting_approval Operations in PENDING_APPROVAL, by plan.\n"
      << "# TYPE tide_operations_waiting_approval gauge\n";
  for (const auto& [plan, g] : fleet.plans) {
    if (g.active || g.waiting_approval > 0) {
      out << "tide_operations_waiting_approval{" << planLabel(plan) << "} " << g.waiting_approval << "\n";
    }
  }
  out << "# HELP tide_operations_waiting_approval_oldest_seconds How long the plan's longest-waiting operation in "
         "PENDING_APPROVAL has waited.\n"
      << "# TYPE tide_operations_waiting_approval_oldest_seconds gauge\n";
  for (const auto& [plan, g] : fleet.plans) {
    if (g.oldest_waiting_since) {
      out << "tide_operations_waiting_approval_oldest_seconds{" << planLabel(plan) << "} "
          << secondsSince(*g.oldest_waiting_since, now) << "\n";
    }
  }
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

void EngineMetrics::observeFleet(FleetGauges fleet) {
  std::lock_guard<std::mutex> lock(mu_);
  fleet_ = std::move(fleet);
}

void EngineMetrics::countHookFailure(const std::string& hook, const std::string& event) {
  std::lock_guard<std::mutex> lock(mu_);
  ++hook_failures_[{hook.empty() ? "host" : hook, event}];
}

void EngineMetrics::countRouterError(const std::string& call) {
  std::lock_guard<std::mutex> lock(mu_);
  ++router_errors_[call];
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
  out << "# HELP tide_hook_failures_total Runtime hook calls that failed, by hook and hook event.\n"
      << "# TYPE tide_hook_failures_total counter\n";
  for (const auto& [key, n] : hook_failures_) {
    out << "tide_hook_failures_total{hook=\"" << prometheusLabelValue(key.first) << "\",event=\""
        << prometheusLabelValue(key.second) << "\"} " << n << "\n";
  }
  out << "# HELP tide_router_errors_total Traffic router calls that failed or found the router down, by call.\n"
      << "# TYPE tide_router_errors_total counter\n";
  for (const auto& [call, n] : router_errors_) out << "tide_router_errors_total{call=\"" << call << "\"} " << n << "\n";
  renderFleet(out, fleet_, clock_.now());
  return out.str();
}

}  // namespace tide::engine
