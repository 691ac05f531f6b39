#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "drivers/http/elastic_task_queue.h"
#include "tests/support/eventually.h"

using namespace tide::drivers;
using namespace tide::testing;

namespace {

// Tasks that wait until released.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> started{0};
  std::atomic<int> finished{0};

  std::function<void()> task() {
    return [this] {
      ++started;
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [this] { return open; });
      ++finished;
    };
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

}  // namespace

TEST_CASE("elastic task queue: a thread per waiting task up to the limit, none once idle") {
  ElasticTaskQueue queue(3, std::chrono::milliseconds(20));
  CHECK(queue.threads() == 0);
  Gate gate;
  for (int i = 0; i < 5; ++i) queue.enqueue(gate.task());
  CHECK(queue.threads() == 3);
  REQUIRE(eventually([&] { return gate.started == 3; }));
  gate.release();
  REQUIRE(eventually([&] { return gate.finished == 5; }));
  REQUIRE(eventually([&] { return queue.threads() == 0; }));
}

TEST_CASE("elastic task queue: tasks one after another reuse one thread") {
  ElasticTaskQueue queue(8, std::chrono::seconds(60));
  std::atomic<int> done{0};
  for (int i = 0; i < 20; ++i) {
    queue.enqueue([&] { ++done; });
    REQUIRE(eventually([&] { return done == i + 1; }));
  }
  CHECK(queue.threads() == 1);
}

TEST_CASE("elastic task queue: shutdown runs what is queued and ends every thread") {
  Gate gate;
  auto queue = std::make_unique<ElasticTaskQueue>(2, std::chrono::seconds(60));
  for (int i = 0; i < 6; ++i) queue->enqueue(gate.task());
  gate.release();
  queue->shutdown();
  CHECK(gate.finished == 6);
  CHECK(queue->threads() == 0);
  queue.reset();
}
