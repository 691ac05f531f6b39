#include "host/core/clock.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace tide {
namespace {

using Steady = std::chrono::steady_clock;

// Longer waits are cut to this, so adding it to the steady clock cannot overflow; nobody
// waits a century.
constexpr auto kLongestWait = std::chrono::hours(24 * 365 * 100);

std::chrono::nanoseconds boundedWait(TimePoint::duration left) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::min<TimePoint::duration>(left, kLongestWait));
}

// The latest second parseTimestamp and timeFromUnixSeconds accept either side of the epoch: a
// day inside what a TimePoint holds, so the fraction added to it cannot overflow either.
constexpr int64_t kMaxUnixSeconds =
    std::chrono::duration_cast<std::chrono::seconds>(TimePoint::duration::max()).count() - 24 * 3600;

}  // namespace

bool SystemClock::waitUntil(TimePoint deadline, const std::function<bool()>& done) const {
  const Steady::time_point until = Steady::now() + boundedWait(deadline - now());
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    const uint64_t seen = wakes_;
    if (done) {
      lock.unlock();
      if (done()) return true;
      lock.lock();
    }
    if (!woken_.wait_until(lock, until, [&] { return wakes_ != seen; })) return false;
  }
}

void SystemClock::wake() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++wakes_;
  }
  woken_.notify_all();
}

FakeClock::FakeClock(TimePoint start, Flow flow) : flow_(flow), base_(start), base_steady_(Steady::now()) {}

TimePoint FakeClock::now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nowLocked();
}

TimePoint FakeClock::nowLocked() const {
  if (flow_ == Flow::kFrozen) return base_;
  return base_ + std::chrono::duration_cast<TimePoint::duration>(Steady::now() - base_steady_);
}

bool FakeClock::waitUntil(TimePoint deadline, const std::function<bool()>& done) const {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    const uint64_t seen = wakes_;
    if (done) {
      lock.unlock();
      if (done()) return true;
      lock.lock();
    }
    const TimePoint now = nowLocked();
    if (now >= deadline) return false;
    const auto woken = [&] { return wakes_ != seen; };
    if (flow_ == Flow::kFrozen) {
      woken_.wait(lock, woken);
    } else {
      woken_.wait_for(lock, boundedWait(deadline - now), woken);
    }
  }
}

void FakeClock::wake() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++wakes_;
  }
  woken_.notify_all();
}

void FakeClock::advance(std::chrono::milliseconds by) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    base_ += by;
    ++wakes_;
  }
  woken_.notify_all();
}

void FakeClock::set(TimePoint to) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    base_ = to;
    base_steady_ = Steady::now();
    ++wakes_;
  }
  woken_.notify_all();
}

std::string formatTimestamp(TimePoint t) {
  // Calendar arithmetic and digits by hand, not gmtime_r and snprintf: every policy
  // decision formats one.
  using namespace std::chrono;
  const long long ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  const sys_days day = floor<days>(sys_time<milliseconds>(milliseconds(ms)));
  const year_month_day date{day};
  const long long in_day = ms - duration_cast<milliseconds>(day.time_since_epoch()).count();
  const long long year = static_cast<int>(date.year());
  if (year < 0 || year > 9999) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%03lldZ", year,
                  static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()), in_day / 3600000,
                  in_day / 60000 % 60, in_day / 1000 % 60, in_day % 1000);
    return buf;
  }
  std::string out(24, '0');
  char* p = out.data();
  auto digits = [&p](long long value, int width) {
    for (int i = width - 1; i >= 0; --i, value /= 10) p[i] = static_cast<char>('0' + value % 10);
    p += width;
  };
  digits(year, 4);
  *p++ = '-';
  digits(static_cast<unsigned>(date.month()), 2);
  *p++ = '-';
  digits(static_cast<unsigned>(date.day()), 2);
  *p++ = 'T';
  digits(in_day / 3600000, 2);
  *p++ = ':';
  digits(in_day / 60000 % 60, 2);
  *p++ = ':';
  digits(in_day / 1000 % 60, 2);
  *p++ = '.';
  digits(in_day % 1000, 3);
  *p++ = 'Z';
  return out;
}

Result<TimePoint> parseTimestamp(std::string_view text) {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, consumed = 0;
  const std::string s(text);
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute, &second, &consumed) !=
      6) {
    return Status::invalidArgument("timestamp '" + s + "' is not YYYY-MM-DDTHH:MM:SSZ");
  }
  long millis = 0;
  size_t pos = static_cast<size_t>(consumed);
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    long scale = 100;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      millis += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
  }
  if (pos != s.size() - 1 || s[pos] != 'Z' || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 ||
      minute < 0 || minute > 59 || second < 0 || second > 60) {
    return Status::invalidArgument("timestamp '" + s + "' is not YYYY-MM-DDTHH:MM:SSZ");
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const std::time_t secs = timegm(&tm);
  if (secs < -kMaxUnixSeconds || secs > kMaxUnixSeconds) {
    return Status::invalidArgument("timestamp '" + s + "' is outside the years 1677 to 2262 that tide can hold");
  }
  return TimePoint(std::chrono::seconds(secs)) + std::chrono::milliseconds(millis);
}

std::optional<std::chrono::seconds> parseWholeDuration(std::string_view text) {
  if (text.size() < 2) return std::nullopt;
  int64_t unit = 0;
  switch (text.back()) {
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    default: return std::nullopt;
  }
  int64_t count = 0;
  const char* end = text.data() + text.size() - 1;
  auto [stop, error] = std::from_chars(text.data(), end, count);
  if (error != std::errc() || stop != end || count <= 0 || count > kMaxUnixSeconds / unit) return std::nullopt;
  return std::chrono::seconds(count * unit);
}

Result<TimePoint> timeFromUnixSeconds(double seconds) {
  if (!std::isfinite(seconds) || std::fabs(seconds) > static_cast<double>(kMaxUnixSeconds)) {
    return Status::invalidArgument("unix time " + std::to_string(seconds) +
                                   " is outside the years 1677 to 2262 that tide can hold");
  }
  return TimePoint(std::chrono::microseconds(std::llround(seconds * 1e6)));
}

std::chrono::nanoseconds threadCpuTime() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}

}  // namespace tide
