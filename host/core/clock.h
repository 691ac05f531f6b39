#pragma once
// Time is injected: production code asks a Clock, tests pass a FakeClock and move it
// instead of sleeping. Timestamps cross the ledger and the API as RFC 3339 UTC strings
// with milliseconds ("2026-11-21T11:47:50.123Z"), which sort lexicographically.

#include <chrono>
#include <mutex>
#include <string>
#include <string_view>

#include "host/core/status.h"

namespace tide {

using TimePoint = std::chrono::system_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

// The wall clock. Thread-safe.
class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::system_clock::now(); }
};

// A clock that only moves when told to. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start) : now_(start) {}
  TimePoint now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  void advance(std::chrono::milliseconds by) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += by;
  }
  void set(TimePoint to) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ = to;
  }

 private:
  mutable std::mutex mu_;
  TimePoint now_;
};

std::string formatTimestamp(TimePoint t);
// Accepts "YYYY-MM-DDTHH:MM:SS[.fff]Z".
Result<TimePoint> parseTimestamp(std::string_view text);

}  // namespace tide
