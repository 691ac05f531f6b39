#include "drivers/health/health_probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <vector>

#include <httplib.h>

#include "drivers/driver.h"
#include "host/core/fd.h"
#include "host/core/subprocess.h"

namespace tide::drivers {
namespace {

using Micros = std::chrono::microseconds;
using Steady = std::chrono::steady_clock;

constexpr size_t kMaxOutput = 4096;   // exec output kept for the message
constexpr size_t kMaxBodyKept = 256;  // http reply body read for the message
constexpr size_t kMaxMessageLine = 200;
constexpr Micros kMinTimeout{1000};
constexpr Micros kMaxTimeout = std::chrono::hours(24);
constexpr auto kMinInterval = std::chrono::milliseconds(10);  // a zero interval must not spin
constexpr auto kSleepSlice = std::chrono::milliseconds(20);   // how often waitHealthy looks up from sleeping

// strerror is not thread-safe; strerrordesc_np is.
std::string errnoText(int error) {
  const char* text = strerrordesc_np(error);
  return text != nullptr ? text : "error " + std::to_string(error);
}

std::string secondsText(Micros duration) {
  char text[32];
  std::snprintf(text, sizeof(text), "%gs", std::chrono::duration<double>(duration).count());
  return text;
}

Micros toMicros(double seconds) {
  if (!(seconds > 0)) return kMinTimeout;  // also NaN
  if (seconds >= std::chrono::duration<double>(kMaxTimeout).count()) return kMaxTimeout;
  return std::max(kMinTimeout, std::chrono::duration_cast<Micros>(std::chrono::duration<double>(seconds)));
}

// Milliseconds until `deadline`, rounded up so a poll does not wake just short of it.
int millisUntil(Steady::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Steady::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

std::string firstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  if (line.size() > kMaxMessageLine) line = line.substr(0, kMaxMessageLine) + "...";
  return line;
}

std::string withOutput(std::string message, const std::string& output) {
  std::string line = firstLine(output);
  return line.empty() ? message : message + ": " + line;
}

ProbeResult failure(std::string message) { return {false, std::move(message), 0}; }

constexpr const char* kCancelled = "cancelled";
constexpr auto kCancelPoll = std::chrono::milliseconds(10);  // a token without an eventfd: how often to look

bool isCancelled(const ProbeCancel* cancel) { return cancel != nullptr && cancel->cancelled(); }

// How long a poll may wait of `left` ms while `cancel` must be noticed, and the token's fd
// added to `watched` (at `count`) when it has one.
int watchCancel(const ProbeCancel* cancel, pollfd* watched, nfds_t& count, int left) {
  if (cancel == nullptr) return left;
  if (cancel->fd() < 0) return std::min(left, static_cast<int>(kCancelPoll.count()));
  watched[count++] = {cancel->fd(), POLLIN, 0};
  return left;
}

std::string hostPortText(const std::string& host, int port) {
  bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// The host port the target gives the declared TCP port `declared`.
Result<int> hostPort(int declared, const model::Json& ports) {
  if (declared <= 0) return Status::invalidArgument("the health check names no port");
  std::string key = "tcp/" + std::to_string(declared);
  if (ports.is_object()) {
    auto it = ports.find(key);
    if (it != ports.end() && it->is_number_integer() && it->get<int64_t>() > 0 && it->get<int64_t>() <= 65535) {
      return it->get<int>();
    }
  }
  std::string has;
  if (ports.is_object()) {
    for (const auto& [name, value] : ports.items()) has += (has.empty() ? "" : ", ") + name;
  }
  return Status::notFound("the instance has no port " + key + " (it has " + (has.empty() ? "none" : has) + ")");
}

// --- http ------------------------------------------------------------------------------

std::string httpErrorText(httplib::Error error, Micros timeout) {
  switch (error) {
    case httplib::Error::Connection: return "cannot connect (refused or unreachable)";
    case httplib::Error::ConnectionTimeout: return "connecting timed out after " + secondsText(timeout);
    case httplib::Error::Read: return "no complete reply (timed out after " + secondsText(timeout) + " or closed)";
    case httplib::Error::Write: return "cannot send the request";
    default: return httplib::to_string(error);
  }
}

ProbeResult probeHttp(const model::HealthCheck& check, const std::string& host, int port, Micros timeout,
                      ProbeCancel* cancel) {
  std::string url = "http://" + hostPortText(host, port) + check.path;
  httplib::Client client(host, port);
  time_t seconds = static_cast<time_t>(timeout.count() / 1'000'000);
  time_t micros = static_cast<time_t>(timeout.count() % 1'000'000);
  client.set_connection_timeout(seconds, micros);
  client.set_read_timeout(seconds, micros);
  client.set_write_timeout(seconds, micros);

  // The status decides; of the body only the start is read, for the message.
  int status = 0;
  std::string body;
  int stop_id = 0;
  if (cancel != nullptr) {
    stop_id = cancel->onCancel([&client] { client.stop(); });
    // A cancel() between that and the moment the client has a socket finds nothing to stop:
    // the socket, when it is made, is then swapped for /dev/null, so that connecting fails
    // at once (the client closes it as its own).
    client.set_socket_options([cancel](socket_t sock) {
      if (!cancel->cancelled()) return;
      const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (null_fd < 0) return;
      ::dup3(null_fd, sock, O_CLOEXEC);
      ::close(null_fd);
    });
  }
  httplib::Result result = client.Get(
      check.path, httplib::Headers{},
      [&](const httplib::Response& response) {
        status = response.status;
        return true;
      },
      [&](const char* data, size_t length) {
        body.append(data, std::min(length, kMaxBodyKept - body.size()));
        return body.size() < kMaxBodyKept;
      });
  if (cancel != nullptr) cancel->forget(stop_id);
  if (isCancelled(cancel)) return failure("GET " + url + ": " + kCancelled);
  if (status == 0) return failure("GET " + url + ": " + httpErrorText(result.error(), timeout));
  bool ok = status >= 200 && status < 400;
  return {ok, withOutput("HTTP " + std::to_string(status), body), 0};
}

// --- tcp -------------------------------------------------------------------------------

// "" once connected, else why not.
std::string connectOne(const addrinfo& address, Steady::time_point deadline, Micros timeout,
                       const ProbeCancel* cancel) {
  Fd fd(socket(address.ai_family, address.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, address.ai_protocol));
  if (!fd.valid()) return errnoText(errno);
  if (connect(fd.get(), address.ai_addr, address.ai_addrlen) == 0) return "";
  if (errno != EINPROGRESS) return errnoText(errno);
  while (true) {
    if (isCancelled(cancel)) return kCancelled;
    int left = millisUntil(deadline);
    if (left == 0) return "timed out after " + secondsText(timeout);
    pollfd watched[2] = {{fd.get(), POLLOUT, 0}, {}};
    nfds_t count = 1;
    const int wait_ms = watchCancel(cancel, watched, count, left);
    int ready = poll(watched, count, wait_ms);
    if (ready < 0 && errno != EINTR) return errnoText(errno);
    if (ready <= 0 || watched[0].revents == 0) continue;
    int error = 0;
    socklen_t length = sizeof(error);
    if (getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) return errnoText(errno);
    return error == 0 ? "" : errnoText(error);
  }
}

ProbeResult probeTcp(const std::string& host, int port, Micros timeout, const ProbeCancel* cancel) {
  std::string where = hostPortText(host, port);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    return failure("connect to " + where + ": cannot resolve the host: " + gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found, freeaddrinfo);
  Steady::time_point deadline = Steady::now() + timeout;
  std::string why;
  for (const addrinfo* address = found; address != nullptr; address = address->ai_next) {
    why = connectOne(*address, deadline, timeout, cancel);
    if (why.empty()) return {true, "connected to " + where, 0};
  }
  return failure("connect to " + where + ": " + why);
}

// --- exec ------------------------------------------------------------------------------

ProbeResult probeExec(const std::vector<std::string>& command, const ProbeTarget& target, Micros timeout,
                      const ProbeCancel* cancel) {
  if (command.empty() || command.front().empty()) return failure("the exec health check has no command");
  CommandRequest request;
  request.argv = command;
  for (const auto& [name, value] : target.env) request.env.push_back(name + "=" + value);
  request.env = inheritedEnvironment(request.env);
  request.cwd = target.cwd;
  request.timeout = timeout;
  request.merge_output = true;
  request.max_output = kMaxOutput;
  if (cancel != nullptr) {
    request.cancelled = [cancel] { return cancel->cancelled(); };
    request.cancel_fd = cancel->fd();
  }
  Result<CommandOutcome> ran = runCommand(request);
  if (!ran.isOk()) return failure(ran.status().message());
  return {ran->succeeded(), withOutput(ran->endText(timeout), ran->output), 0};
}

// ---------------------------------------------------------------------------------------

ProbeResult probeWithin(const model::HealthCheck& check, const ProbeTarget& target, Micros timeout,
                        ProbeCancel* cancel) {
  Steady::time_point started = Steady::now();
  ProbeResult result;
  try {
    if (isCancelled(cancel)) {
      result = failure(kCancelled);
    } else if (check.type == "http" || check.type == "tcp") {
      Result<int> port = hostPort(check.port, target.ports);
      if (!port.isOk()) {
        result = failure(port.status().message());
      } else if (check.type == "http") {
        result = probeHttp(check, target.host, *port, timeout, cancel);
      } else {
        result = probeTcp(target.host, *port, timeout, cancel);
      }
    } else if (check.type == "exec") {
      result = probeExec(check.command, target, timeout, cancel);
    } else {
      result = failure("unknown health check type \"" + check.type + "\"");
    }
  } catch (const std::exception& e) {
    result = failure(std::string("the probe failed: ") + e.what());
  } catch (...) {
    result = failure("the probe failed");
  }
  result.duration_us = std::chrono::duration_cast<Micros>(Steady::now() - started).count();
  return result;
}

std::string givingUp(const std::string& why, const HealthTracker& tracker, bool probed, int healthy_threshold) {
  if (!probed) return why + " before the first probe";
  std::string message = why + "; last probe: " + tracker.last().message;
  if (tracker.last().ok) {
    message += " (" + std::to_string(tracker.consecutiveSuccesses()) + " of " + std::to_string(healthy_threshold) +
               " successes in a row)";
  }
  return message;
}

}  // namespace

ProbeCancel::ProbeCancel() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

ProbeCancel::~ProbeCancel() {
  if (fd_ >= 0) ::close(fd_);
}

void ProbeCancel::cancel() {
  // Under the lock, so that a probe cannot forget() (and destroy) what a stop refers to
  // while it runs.
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_.exchange(true)) return;
  if (fd_ >= 0) {
    const uint64_t one = 1;
    // Cannot fail but when the eventfd's counter is full, which wakes the waiters just as well.
    (void)!::write(fd_, &one, sizeof(one));
  }
  for (auto& [id, stop] : stops_) stop();
}

void ProbeCancel::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = false;
  uint64_t count = 0;
  // Drains the eventfd; nothing to drain (EAGAIN) is the same as drained.
  if (fd_ >= 0) (void)!::read(fd_, &count, sizeof(count));
}

int ProbeCancel::onCancel(std::function<void()> stop) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) stop();
  const int id = next_id_++;
  stops_.emplace(id, std::move(stop));
  return id;
}

void ProbeCancel::forget(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  stops_.erase(id);
}

ProbeResult probeOnce(const model::HealthCheck& check, const ProbeTarget& target, ProbeCancel* cancel) {
  return probeWithin(check, target, toMicros(check.timeout_seconds), cancel);
}

HealthTracker::HealthTracker(const model::HealthCheck& check, bool initially_healthy)
    : healthy_threshold_(std::max(1, check.healthy_threshold)),
      unhealthy_threshold_(std::max(1, check.unhealthy_threshold)),
      healthy_(initially_healthy),
      last_{false, "not probed yet", 0} {}

bool HealthTracker::record(const ProbeResult& result) {
  last_ = result;
  if (result.ok) {
    ++successes_;
    failures_ = 0;
  } else {
    ++failures_;
    successes_ = 0;
  }
  bool next = healthy_ ? failures_ < unhealthy_threshold_ : successes_ >= healthy_threshold_;
  bool changed = next != healthy_;
  healthy_ = next;
  return changed;
}

ProbeResult waitHealthy(const model::HealthCheck& check, const ProbeTarget& target, const Clock& clock,
                        TimePoint deadline, const std::function<bool()>& asked_to_stop, ProbeCancel* cancel) {
  const auto cancelled = [&] { return isCancelled(cancel) || asked_to_stop(); };
  HealthTracker tracker(check);
  const Micros timeout = toMicros(check.timeout_seconds);
  const auto interval = std::max<Steady::duration>(toMicros(check.interval_seconds), kMinInterval);
  const int healthy_threshold = std::max(1, check.healthy_threshold);
  bool probed = false;
  while (true) {
    if (cancelled()) return failure(givingUp("cancelled", tracker, probed, healthy_threshold));
    Micros left = std::chrono::duration_cast<Micros>(deadline - clock.now());
    if (left.count() <= 0) return failure(givingUp("not healthy by the deadline", tracker, probed, healthy_threshold));

    ProbeResult result = probeWithin(check, target, std::max(kMinTimeout, std::min(timeout, left)), cancel);
    probed = true;
    if (tracker.record(result)) return result;  // it starts unhealthy: a change is to healthy

    const TimePoint slept_from = clock.now();
    const TimePoint wake = slept_from + std::chrono::duration_cast<TimePoint::duration>(interval);
    while (!cancelled()) {
      const TimePoint now = clock.now();
      if (now >= wake || now >= deadline || now < slept_from) break;  // stepped back: do not stretch
      clock.waitUntil(std::min({wake, deadline, now + kSleepSlice}), cancelled);
    }
  }
}

ProbeTarget localTarget(const model::Json& ports) {
  ProbeTarget target;
  target.ports = ports;
  for (const auto& [declared, host_port] : ports.items()) {
    target.env[portEnvName(declared)] = std::to_string(host_port.get<int>());
  }
  return target;
}

}  // namespace tide::drivers
