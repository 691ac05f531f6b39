#pragma once
// Time is injected: production code asks a Clock, tests pass a FakeClock and move it
// instead of sleeping. Timestamps cross the ledger and the API as RFC 3339 UTC strings
// with milliseconds ("2026-11-21T11:47:50.123Z"), which sort lexicographically.
//
// Waiting is injected too: code that waits for time to pass (the control loop, the
// executor's polls, health-probe intervals) waits on its Clock, so a test's advance()
// ends the wait at once. A wait also ends early when a condition the waiter names holds;
// whoever makes it hold calls wake() (the engine's stop() and poke() do):
//
//   stopping_ = true;
//   clock_.wake();                                  // in stop()
//   ...
//   clock_.sleepFor(interval, [this] { return stopping_.load(); });  // in the loop

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/status.h"

namespace tide {

using TimePoint = std::chrono::system_clock::time_point;

// Thread-safety: every method of every Clock may be called from any thread at once.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;

  // Blocks the calling thread until this clock reaches `deadline` or `done()` returns true,
  // whichever comes first; returns true when done() did. `done` may be empty (wait for the
  // deadline only). It is called on this thread at entry and again after every wake() and
  // every move of a FakeClock, never in between (a condition nobody wake()s for must be
  // waited for in slices), and with no lock of the clock held: it may read the ledger, but
  // must not wait on this clock. Spurious wake-ups do not return.
  virtual bool waitUntil(TimePoint deadline, const std::function<bool()>& done) const = 0;
  bool sleepFor(std::chrono::nanoseconds duration, const std::function<bool()>& done = nullptr) const {
    return waitUntil(now() + std::chrono::ceil<TimePoint::duration>(duration), done);
  }

  // Makes every thread in waitUntil() on this clock call its done() again. Call it after
  // changing what a done() reads; it costs every waiter one call of its done().
  virtual void wake() const = 0;
};

// The wall clock. A wait measures its length on the steady clock from its start, so a step
// of the wall clock during the wait neither stretches nor cuts it.
class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::system_clock::now(); }
  bool waitUntil(TimePoint deadline, const std::function<bool()>& done) const override;
  void wake() const override;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable woken_;
  mutable uint64_t wakes_ = 0;  // REQUIRES: mu_; bumped by wake(), so no wake-up is lost
};

// A clock for tests. kFrozen: time moves only by advance() and set(). kRealTime: it also
// runs at the pace of the steady clock from `start`, for tests whose real processes need
// time to pass while the test skips the long waits with advance().
class FakeClock final : public Clock {
 public:
  enum class Flow { kFrozen, kRealTime };

  explicit FakeClock(TimePoint start, Flow flow = Flow::kFrozen);
  TimePoint now() const override;
  bool waitUntil(TimePoint deadline, const std::function<bool()>& done) const override;
  void wake() const override;

  // Both wake every waiter, so each whose deadline has passed returns.
  void advance(std::chrono::milliseconds by);
  void set(TimePoint to);

 private:
  TimePoint nowLocked() const;  // REQUIRES: mu_

  const Flow flow_;
  mutable std::mutex mu_;
  mutable std::condition_variable woken_;
  TimePoint base_;                                     // REQUIRES: mu_; the time at base_steady_
  std::chrono::steady_clock::time_point base_steady_;  // REQUIRES: mu_
  mutable uint64_t wakes_ = 0;                         // REQUIRES: mu_
};

std::string formatTimestamp(TimePoint t);

// Times read from outside (request bodies, fixtures, scripts). A TimePoint counts nanoseconds
// in 64 bits, about 292 years either side of 1970: both refuse, as invalid argument, what lies
// beyond 1677-09-22 .. 2262-04-10 instead of overflowing.
// Accepts "YYYY-MM-DDTHH:MM:SS[.fff]Z".
Result<TimePoint> parseTimestamp(std::string_view text);
// A span of time as people type it: a positive whole number of minutes, hours or days
// ("90m", "12h", "30d"), as token lifetimes (`expires_in`) and the lists' `since` and
// `until` take it. nullopt for anything else, and for a span beyond what a TimePoint holds
// from the epoch (callers cap it lower, each with its own reason).
std::optional<std::chrono::seconds> parseWholeDuration(std::string_view text);
// Seconds since the epoch, to the microsecond; also refuses NaN and infinities.
Result<TimePoint> timeFromUnixSeconds(double seconds);

// The CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID): what a Lua call's
// deadline counts, since work does not stretch when other threads take the CPU. A system
// call, not a vDSO read: about as dear as a small allocation.
std::chrono::nanoseconds threadCpuTime();

}  // namespace tide
