#pragma once
// The per-request log haproxy sends the router (docs/architecture.md#traffic), kept as latency
// histograms for Prometheus. HAProxy 2.6's exporter has no latency histogram, only each
// server's mean over its last 512 requests, so a percentile at the router needs every
// request's time: haproxy writes one datagram per request ("<backend> <server> <status>
// <Ta ms>\n", log-format kLogFormat) to a unix datagram socket this class binds and reads on
// a thread of its own. What it holds is rendered as
//
//   tide_router_response_seconds_bucket{proxy="be_web",server="...",le="0.005"} 12
//   tide_router_response_seconds_sum / _count
//
// with HAProxy's exporter's labels (proxy, server), so one selector serves both, and
// histogram_quantile() gives the p95 (scripts/lib/analysis.lua, router_latency_p95).
//
// The socket is best effort on both sides: haproxy drops a datagram nobody reads (while the
// host is down, or when the queue is full) and keeps serving; a line that does not parse is
// counted (tide_router_log_lines_dropped_total) and skipped. Series of a server unseen for
// kSeriesIdle are dropped at render, so servers that left do not pile up.
//
// Thread-safety: all public members may be called concurrently.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "host/core/status.h"

namespace tide::drivers::traffic {

class RequestLog {
 public:
  // The log-format haproxy's defaults get: backend, server, status, total active time (ms).
  static constexpr std::string_view kLogFormat = "%b %s %ST %Ta";
  static constexpr std::array<double, 13> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                      0.25,  0.5,    1,     2.5,  5,     10};
  static constexpr std::chrono::minutes kSeriesIdle{15};

  explicit RequestLog(std::string socket_path);
  ~RequestLog();  // stops the reader and removes the socket
  RequestLog(const RequestLog&) = delete;
  RequestLog& operator=(const RequestLog&) = delete;

  // Binds the socket (replacing a stale file at its path, mode 0600) and starts the reader.
  // kUnavailable when the socket cannot be made; the router then serves without the log.
  Status start();
  void stop();

  // One line as haproxy writes it; false when it does not parse (then nothing is counted).
  // The reader calls it; public so tests can feed lines without a haproxy.
  bool record(std::string_view line);

  // The histograms and the dropped-line counter in Prometheus text format.
  std::string render() const;

  const std::string& socketPath() const { return socket_path_; }

 private:
  struct Series {
    std::array<uint64_t, kBuckets.size()> buckets{};  // non-cumulative; summed on render
    uint64_t count = 0;
    double sum = 0;
    std::chrono::steady_clock::time_point last_seen{};
  };

  void read();

  const std::string socket_path_;
  int fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread reader_;
  std::atomic<uint64_t> dropped_{0};
  mutable std::mutex mu_;
  mutable std::map<std::pair<std::string, std::string>, Series> series_;  // (proxy, server); REQUIRES: mu_
};

}  // namespace tide::drivers::traffic
