#include "drivers/http/elastic_task_queue.h"

#include <algorithm>
#include <thread>

namespace tide::drivers {

ElasticTaskQueue::ElasticTaskQueue(size_t max_threads, std::chrono::milliseconds idle_timeout)
    : max_threads_(std::max<size_t>(1, max_threads)), idle_timeout_(idle_timeout) {}

ElasticTaskQueue::~ElasticTaskQueue() { shutdown(); }

void ElasticTaskQueue::enqueue(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
    if (idle_ < queue_.size() && threads_ < max_threads_) {
      ++threads_;
      // Detached: an idle one ends on its own; shutdown() waits for the count to reach 0.
      std::thread([this] { work(); }).detach();
    }
  }
  work_cv_.notify_one();
}

void ElasticTaskQueue::shutdown() {
  std::unique_lock<std::mutex> lock(mu_);
  shutdown_ = true;
  work_cv_.notify_all();
  ended_cv_.wait(lock, [&] { return threads_ == 0; });
}

size_t ElasticTaskQueue::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_;
}

void ElasticTaskQueue::work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    ++idle_;
    const bool woken =
        work_cv_.wait_for(lock, idle_timeout_, [&] { return shutdown_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty() && (shutdown_ || !woken)) break;
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
  --threads_;
  // Notified under the lock: shutdown() can return, and the queue be destroyed, only
  // after this thread has let go of mu_, its last touch of the queue.
  ended_cv_.notify_all();
}

}  // namespace tide::drivers
