#pragma once
// An httplib task queue whose threads come and go with the connections: a connection that
// finds no thread idle starts one, up to `max_threads`, and a thread idle for `idle_timeout`
// ends. httplib's own ThreadPool starts max(8, cores - 1) threads up front and keeps them,
// which for `tide workload` (drivers/process/workload.cpp) was 10 threads per workload that
// answers a health probe a second: 10,000 threads at 1,000 workloads. With this queue such
// a workload runs its main thread, the listener and one connection thread.
//
// Thread-safety: enqueue() from the server's listener thread, shutdown() once, after it;
// the threads are the queue's own.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

#include <httplib.h>

namespace tide::drivers {

class ElasticTaskQueue final : public httplib::TaskQueue {
 public:
  ElasticTaskQueue(size_t max_threads, std::chrono::milliseconds idle_timeout);
  ~ElasticTaskQueue() override;  // shutdown()s
  ElasticTaskQueue(const ElasticTaskQueue&) = delete;
  ElasticTaskQueue& operator=(const ElasticTaskQueue&) = delete;

  void enqueue(std::function<void()> task) override;
  // Runs what is queued and waits until every thread has ended. Idempotent.
  void shutdown() override;

  // Threads alive now.
  size_t threads() const;

 private:
  void work();

  const size_t max_threads_;
  const std::chrono::milliseconds idle_timeout_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable ended_cv_;
  std::deque<std::function<void()>> queue_;  // GUARDED_BY(mu_)
  size_t threads_ = 0;                       // GUARDED_BY(mu_)
  size_t idle_ = 0;                          // GUARDED_BY(mu_)
  bool shutdown_ = false;                    // GUARDED_BY(mu_)
};

}  // namespace tide::drivers
