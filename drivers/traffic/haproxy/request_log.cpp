#include "drivers/traffic/haproxy/request_log.h"

#include "host/core/prometheus_text.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <sstream>
#include <vector>

namespace tide::drivers::traffic {
namespace {

constexpr int kPollMs = 200;  // how soon stop() is noticed
constexpr size_t kMaxDatagram = 2048;

// A label value as haproxy names our proxies and servers (encodeName): nothing to escape.
bool plainName(std::string_view name) {
  if (name.empty() || name.size() > 512) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  });
}

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at < line.size()) {
    const size_t end = line.find(' ', at);
    const size_t stop = end == std::string_view::npos ? line.size() : end;
    if (stop > at) out.push_back(line.substr(at, stop - at));
    at = stop + 1;
  }
  return out;
}

}  // namespace

RequestLog::RequestLog(std::string socket_path) : socket_path_(std::move(socket_path)) {}

RequestLog::~RequestLog() { stop(); }

Status RequestLog::start() {
  if (fd_ >= 0) return Status::ok();
  sockaddr_un address{};
  if (socket_path_.size() >= sizeof(address.sun_path)) {
    return Status::unavailable("haproxy request log: socket path " + socket_path_ + " is longer than " +
                               std::to_string(sizeof(address.sun_path) - 1) + " bytes");
  }
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::unavailable(std::string("haproxy request log: socket: ") + std::strerror(errno));
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
  ::unlink(socket_path_.c_str());  // a socket an earlier host left; nothing else lives at this path
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const int error = errno;
    ::close(fd);
    return Status::unavailable("haproxy request log: bind " + socket_path_ + ": " + std::strerror(error));
  }
  ::chmod(socket_path_.c_str(), 0600);
  // Bursts of requests arrive faster than one thread parses them at times; a larger queue
  // drops fewer (best effort: the kernel may cap it).
  const int buffer = 4 << 20;
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
  fd_ = fd;
  stopping_ = false;
  reader_ = std::thread([this] { read(); });
  return Status::ok();
}

void RequestLog::stop() {
  if (fd_ < 0) return;
  stopping_ = true;
  if (reader_.joinable()) reader_.join();
  ::close(fd_);
  fd_ = -1;
  ::unlink(socket_path_.c_str());
}

void RequestLog::read() {
  char buffer[kMaxDatagram];
  while (!stopping_) {
    pollfd ready{fd_, POLLIN, 0};
    if (::poll(&ready, 1, kPollMs) <= 0) continue;
    // Everything queued, then poll again.
    for (;;) {
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
      if (n <= 0) break;
      std::string_view text(buffer, static_cast<size_t>(n));
      while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.remove_suffix(1);
      if (!record(text)) dropped_.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

bool RequestLog::record(std::string_view line) {
  const std::vector<std::string_view> parts = fields(line);
  if (parts.size() != 4) return false;
  int status = 0;
  long long active_ms = 0;
  if (std::from_chars(parts[2].data(), parts[2].data() + parts[2].size(), status).ec != std::errc{}) return false;
  if (std::from_chars(parts[3].data(), parts[3].data() + parts[3].size(), active_ms).ec != std::errc{}) return false;
  // No server (<NOSRV>: refused before one was chosen) or no time (-1: the client left first).
  if (parts[1].front() == '<' || active_ms < 0) return true;
  if (!plainName(parts[0]) || !plainName(parts[1])) return false;
  const double seconds = static_cast<double>(active_ms) / 1000.0;
  std::lock_guard<std::mutex> lock(mu_);
  Series& series = series_[{std::string(parts[0]), std::string(parts[1])}];
  const auto bucket = std::lower_bound(kBuckets.begin(), kBuckets.end(), seconds);
  if (bucket != kBuckets.end()) ++series.buckets[static_cast<size_t>(bucket - kBuckets.begin())];
  ++series.count;
  series.sum += seconds;
  series.last_seen = std::chrono::steady_clock::now();
  return true;
}

std::string RequestLog::render() const {
  std::ostringstream out;
  out << "# HELP tide_router_response_seconds Time haproxy spent on each request a server of a plan answered "
         "(%Ta: from the request to the answer's last byte), from haproxy's per-request log.\n"
         "# TYPE tide_router_response_seconds histogram\n";
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(series_, [&](const auto& entry) { return now - entry.second.last_seen > kSeriesIdle; });
    for (const auto& [key, series] : series_) {
      const std::string labels = "proxy=\"" + key.first + "\",server=\"" + key.second + "\"";
      out << prometheusHistogram("tide_router_response_seconds", labels, kBuckets, series.buckets, series.count,
                                 series.sum);
    }
  }
  out << "# HELP tide_router_log_lines_dropped_total Lines of haproxy's request log that did not parse.\n"
         "# TYPE tide_router_log_lines_dropped_total counter\n"
         "tide_router_log_lines_dropped_total "
      << dropped_.load(std::memory_order_relaxed) << "\n";
  return out.str();
}

}  // namespace tide::drivers::traffic
