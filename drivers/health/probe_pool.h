#pragma once
// A fixed number of threads that run health probes for the observer
// (docs/architecture.md#health-checks): however many probes are due, at most `threads` run
// at once and no thread is started per probe or per pass.
//
// The pool never holds up its caller: submit() queues a probe and returns, and a later
// collect() hands over what finished. So one slow probe (an exec check that hangs, an HTTP
// server that drip-feeds its reply, with a timeout of up to 24 h) delays only its own
// instance's verdict, never the control loop's pass. stop() cancels every probe queued or
// running (ProbeCancel: an exec probe's process group is killed) and joins the threads, so
// the host stops at once whatever its probes are doing.
//
// Thread-safety: submit(), collect(), inFlight() and stop() from one thread at a time (the
// control loop's); the workers are the pool's own.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "drivers/health/health_probe.h"

namespace tide::drivers {

struct ProbeJob {
  model::HealthCheck check;
  ProbeTarget target;
  // The checks of an instance's further applications (docs/architecture.md#applications), each
  // run after the ones before it passed: the probe passes when all do, and then a failure
  // names its application (`application` is the payload name of `check`).
  std::vector<model::ApplicationCheck> more;
  std::string application;
};

class ProbePool {
 public:
  // At least one thread; they start when submitted probes first need them.
  explicit ProbePool(size_t threads);
  ~ProbePool();  // stop()s
  ProbePool(const ProbePool&) = delete;
  ProbePool& operator=(const ProbePool&) = delete;

  // Queues probeOnce() of `job` under `key` (a runtime instance id), unless a probe of that
  // key is already in flight; returns whether it was queued.
  bool submit(int64_t key, ProbeJob job);
  // The probes that finished since the last collect(), in the order they finished.
  std::vector<std::pair<int64_t, ProbeResult>> collect();
  // Submitted and not yet collected.
  bool inFlight(int64_t key) const;
  // Blocks until nothing is queued or running (results may wait to be collected).
  void waitIdle();
  // Cancels what is queued or running, joins the threads and drops every result not yet
  // collected. The pool can be used again afterwards (it starts new threads).
  void stop();

  size_t threadsStarted() const;

 private:
  void work();

  const size_t size_;
  ProbeCancel cancel_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<std::pair<int64_t, ProbeJob>> queue_;         // GUARDED_BY(mu_)
  std::vector<std::pair<int64_t, ProbeResult>> finished_;  // GUARDED_BY(mu_)
  std::set<int64_t> in_flight_;                            // GUARDED_BY(mu_); queued, running or finished
  size_t idle_ = 0;                                        // GUARDED_BY(mu_); threads waiting for work
  size_t running_ = 0;                                     // GUARDED_BY(mu_); probes running
  bool stopping_ = false;                                  // GUARDED_BY(mu_)
  std::vector<std::thread> threads_;                       // GUARDED_BY(mu_)
};

}  // namespace tide::drivers
