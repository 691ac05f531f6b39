#pragma once
// Health probes (docs/architecture.md#the-control-loop): the executor waits for a new instance to turn healthy before
// an operation succeeds, and the observer probes running instances on every pass. A probe
// is one http, tcp or exec check of one instance; HealthTracker turns a run of probe
// results into a healthy/unhealthy verdict with Kubernetes-style consecutive thresholds.
//
// Thread-safety: probeOnce and waitHealthy share no state and may run on any number of
// threads at once. A HealthTracker is a plain value: one owner, or external locking.
// No probe starts a thread.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "host/core/clock.h"
#include "host/model/records.h"

namespace tide::drivers {

// Where an instance can be reached.
struct ProbeTarget {
  std::string host = "127.0.0.1";  // numeric address or a name (a name's lookup is not bounded by the timeout)
  model::Json ports = model::Json::object();  // {"tcp/80": 31080}: declared "proto/port" → host port
  std::map<std::string, std::string> env;     // exec: layered over the host's environment (TIDE_PORT_TCP_80, ...)
  std::string cwd;                            // exec: working directory; empty = the host's
};

struct ProbeResult {
  bool ok = false;
  std::string message;  // "HTTP 200", "HTTP 503: starting", "exited 1: <first output line>", ...
  int64_t duration_us = 0;
};

// Ends probes before their timeout, from another thread (docs/architecture.md#health-checks):
// the host stopping must not wait out a probe whose timeout may be 24 h. Once cancel() is
// called, every probe given this token ends within milliseconds, not ok, with message
// "cancelled": an exec probe's process group is SIGKILLed and reaped, a tcp connect is
// abandoned, an http request's socket is shut down (a connect in progress to an address
// that never answers still runs to its timeout).
//
// Thread-safety: all methods may be called from any thread. reset() REQUIRES that no probe
// uses the token.
class ProbeCancel {
 public:
  ProbeCancel();
  ~ProbeCancel();
  ProbeCancel(const ProbeCancel&) = delete;
  ProbeCancel& operator=(const ProbeCancel&) = delete;

  void cancel();
  bool cancelled() const { return cancelled_.load(); }
  // Makes the token usable again after a cancel().
  void reset();

  // Readable once cancelled: for a probe waiting in poll(2). -1 if it could not be made
  // (then waits poll in short slices and look at cancelled()).
  int fd() const { return fd_; }
  // Runs `stop` from cancel() (at once when already cancelled) until the returned id is
  // passed to forget(); for a probe that blocks where poll(2) cannot see the token.
  int onCancel(std::function<void()> stop);
  void forget(int id);

 private:
  int fd_ = -1;  // an eventfd
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::map<int, std::function<void()>> stops_;  // GUARDED_BY(mu_)
  int next_id_ = 1;                             // GUARDED_BY(mu_)
};

// The target of an instance on this machine whose declared ports have host ports `ports`
// ({"tcp/80": 31080}): exec checks see each as TIDE_PORT_<PROTO>_<PORT> (TIDE_PORT_TCP_80).
ProbeTarget localTarget(const model::Json& ports);

// Runs one probe of `check` against `target`. Never throws; every failure is a result
// that is not ok, with a message an operator can act on.
//   http  GET http://<host>:<host port of tcp/<check.port>><check.path>; ok on 2xx and 3xx
//         (redirects are not followed). Connecting and each read are bounded by
//         timeout_seconds separately, so a slow server can hold a probe for about twice that.
//   tcp   ok when a connection to the host port of tcp/<check.port> is established within
//         timeout_seconds; it is closed at once.
//   exec  check.command (argv; a bare name is looked up in PATH, no shell) with stdin from
//         /dev/null and stdout+stderr captured (the first 4 KiB are kept), in a process
//         group of its own; ok when it exits 0 within timeout_seconds. On timeout the whole
//         group is SIGKILLed and reaped before this returns. The message carries the exit
//         code or signal and the first line of output.
//         REQUIRES: SIGCHLD is not ignored and nothing else reaps with waitpid(-1).
// A check naming a port the target does not have is not ok, and says so.
// With `cancel`, the probe also ends when it is cancelled (see ProbeCancel).
ProbeResult probeOnce(const model::HealthCheck& check, const ProbeTarget& target, ProbeCancel* cancel = nullptr);

// Consecutive-result thresholds, like Kubernetes and Nomad: healthy after
// check.healthy_threshold successes in a row, unhealthy after check.unhealthy_threshold
// failures in a row (thresholds below 1 count as 1). Starts unhealthy unless told
// otherwise (an observer resuming after a restart passes the ledger's healthy flag).
class HealthTracker {
 public:
  explicit HealthTracker(const model::HealthCheck& check, bool initially_healthy = false);

  // Returns true exactly when this result changed healthy().
  bool record(const ProbeResult& result);

  bool healthy() const { return healthy_; }
  const ProbeResult& last() const { return last_; }  // message "not probed yet" before the first record
  int consecutiveSuccesses() const { return successes_; }
  int consecutiveFailures() const { return failures_; }

 private:
  int healthy_threshold_;
  int unhealthy_threshold_;
  bool healthy_;
  int successes_ = 0;
  int failures_ = 0;
  ProbeResult last_;
};

// Probes at once and then every check.interval_seconds (of `clock`'s time, from the end of
// one probe to the start of the next) until a HealthTracker over the results turns healthy:
// returns that last probe's result (ok). Returns not ok, with a message that quotes the
// last probe's, once `clock` reaches `deadline` or `cancelled()` returns true. Each probe's
// timeout is cut to the time left before the deadline (probes themselves take real time).
// Cancellation and the deadline are checked between probes and, while waiting, every few
// milliseconds of `clock`'s time and whenever the clock is woken (Clock::wake), so either
// is noticed within one probe's timeout; a probe in progress ends at once when `cancel` (if
// given) is cancelled. `cancelled` is called on this thread and must not throw.
ProbeResult waitHealthy(const model::HealthCheck& check, const ProbeTarget& target, const Clock& clock,
                        TimePoint deadline, const std::function<bool()>& cancelled, ProbeCancel* cancel = nullptr);

}  // namespace tide::drivers
