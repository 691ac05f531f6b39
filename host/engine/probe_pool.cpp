#include "host/engine/probe_pool.h"

#include <algorithm>

namespace tide::engine {

ProbePool::ProbePool(size_t threads) : size_(std::max<size_t>(1, threads)) {}

ProbePool::~ProbePool() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  work_cv_.notify_all();
  for (std::thread& thread : threads) thread.join();
}

std::vector<ProbeResult> ProbePool::run(const std::vector<ProbeJob>& jobs) {
  std::vector<ProbeResult> results(jobs.size());
  if (jobs.empty()) return results;
  std::unique_lock<std::mutex> lock(mu_);
  while (threads_.size() < std::min(size_, jobs.size())) threads_.emplace_back([this] { work(); });
  jobs_ = &jobs;
  results_ = &results;
  next_ = 0;
  left_ = jobs.size();
  work_cv_.notify_all();
  done_cv_.wait(lock, [&] { return left_ == 0; });
  jobs_ = nullptr;
  results_ = nullptr;
  return results;
}

size_t ProbePool::threadsStarted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_.size();
}

void ProbePool::work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] { return stopping_ || (jobs_ != nullptr && next_ < jobs_->size()); });
    if (stopping_) return;
    const size_t i = next_++;
    const ProbeJob& job = (*jobs_)[i];
    lock.unlock();
    ProbeResult result = probeOnce(job.check, job.target);  // never throws
    lock.lock();
    (*results_)[i] = std::move(result);
    if (--left_ == 0) done_cv_.notify_all();
  }
}

}  // namespace tide::engine
