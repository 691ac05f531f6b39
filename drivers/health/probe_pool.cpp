#include "drivers/health/probe_pool.h"

#include <algorithm>

namespace tide::drivers {

ProbePool::ProbePool(size_t threads) : size_(std::max<size_t>(1, threads)) {}

ProbePool::~ProbePool() { stop(); }

bool ProbePool::submit(int64_t key, ProbeJob job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!in_flight_.insert(key).second) return false;
    queue_.emplace_back(key, std::move(job));
    // A thread per queued probe until there are `size_`: an idle one takes it otherwise.
    if (idle_ < queue_.size() && threads_.size() < size_) threads_.emplace_back([this] { work(); });
  }
  work_cv_.notify_one();
  return true;
}

std::vector<std::pair<int64_t, ProbeResult>> ProbePool::collect() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<int64_t, ProbeResult>> out;
  out.swap(finished_);
  for (const auto& [key, result] : out) in_flight_.erase(key);
  return out;
}

bool ProbePool::inFlight(int64_t key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_.count(key) > 0;
}

void ProbePool::waitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
}

void ProbePool::stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    queue_.clear();
    threads.swap(threads_);
  }
  cancel_.cancel();
  work_cv_.notify_all();
  idle_cv_.notify_all();
  for (std::thread& thread : threads) thread.join();
  std::lock_guard<std::mutex> lock(mu_);
  finished_.clear();
  in_flight_.clear();
  idle_ = 0;
  stopping_ = false;
  cancel_.reset();
}

size_t ProbePool::threadsStarted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_.size();
}

namespace {

// `job`'s checks in turn, up to the first that fails.
ProbeResult probeAll(const ProbeJob& job, ProbeCancel* cancel) {
  ProbeResult result = probeOnce(job.check, job.target, cancel);
  if (job.more.empty()) return result;
  auto named = [](const std::string& application, ProbeResult failed) {
    failed.message = "application '" + application + "': " + failed.message;
    return failed;
  };
  if (!result.ok) return named(job.application, std::move(result));
  for (const model::ApplicationCheck& next : job.more) {
    ProbeResult more = probeOnce(next.check, job.target, cancel);
    result.duration_us += more.duration_us;
    if (!more.ok) {
      more.duration_us = result.duration_us;
      return named(next.application, std::move(more));
    }
  }
  return result;
}

}  // namespace

void ProbePool::work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    ++idle_;
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (stopping_) return;
    auto [key, job] = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    ProbeResult result = probeAll(job, &cancel_);  // never throws
    lock.lock();
    --running_;
    if (!stopping_) finished_.emplace_back(key, std::move(result));
    if (queue_.empty() && running_ == 0) idle_cv_.notify_all();
  }
}

}  // namespace tide::drivers
