#pragma once
// Waiting for an outcome in tests that run real threads or processes: poll for it with a
// generous deadline (a liveness bound on a shared machine, not a timing check) instead of
// sleeping a fixed time. Tests of code that waits on a Clock move a FakeClock instead.

#include <chrono>
#include <thread>

namespace tide::testing {

// Polls `done` every 10 ms until it returns true (true) or `timeout` passes (false).
template <class Pred>
bool eventually(Pred done, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace tide::testing
