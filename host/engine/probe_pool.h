#pragma once
// A fixed number of threads that run health probes for the observer
// (docs/architecture.md#health-checks): however many probes are due in a pass, at most
// `threads` run at once and no thread is started per probe or per pass.
//
// Thread-safety: run() from one thread at a time (the control loop's); the workers are the
// pool's own and live until it is destroyed.

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include "host/engine/health_probe.h"

namespace tide::engine {

struct ProbeJob {
  model::HealthCheck check;
  ProbeTarget target;
};

class ProbePool {
 public:
  // At least one thread; they start when a run() first needs them.
  explicit ProbePool(size_t threads);
  ~ProbePool();  // joins the threads; REQUIRES: no run() in progress
  ProbePool(const ProbePool&) = delete;
  ProbePool& operator=(const ProbePool&) = delete;

  // probeOnce() of every job, at most `threads` at once; returns the results in the jobs'
  // order when all are done.
  std::vector<ProbeResult> run(const std::vector<ProbeJob>& jobs);

  size_t threadsStarted() const;

 private:
  void work();

  const size_t size_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  const std::vector<ProbeJob>* jobs_ = nullptr;  // GUARDED_BY(mu_); the run in progress
  std::vector<ProbeResult>* results_ = nullptr;  // GUARDED_BY(mu_)
  size_t next_ = 0;                              // GUARDED_BY(mu_); the next job to take
  size_t left_ = 0;                              // GUARDED_BY(mu_); jobs not finished
  bool stopping_ = false;                        // GUARDED_BY(mu_)
  std::vector<std::thread> threads_;             // GUARDED_BY(mu_)
};

}  // namespace tide::engine
