#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "host/core/thread_guard.h"

using tide::runGuarded;

TEST_CASE("thread guard: a round that returns is not reported") {
  int rounds = 0;
  std::string reported = "none";
  CHECK(runGuarded([&] { ++rounds; }, [&](const std::string& what) { reported = what; }));
  CHECK(rounds == 1);
  CHECK(reported == "none");
}

TEST_CASE("thread guard: an escaped exception becomes a report instead of terminate") {
  std::string reported;
  CHECK_FALSE(
      runGuarded([] { throw std::runtime_error("disk on fire"); }, [&](const std::string& what) { reported = what; }));
  CHECK(reported == "disk on fire");
  CHECK_FALSE(runGuarded([] { throw 42; }, [&](const std::string& what) { reported = what; }));
  CHECK(reported == "unknown exception");
  // A report that throws is swallowed too: nothing gets past the barrier.
  CHECK_FALSE(runGuarded([] { throw std::logic_error("bug"); },
                         [](const std::string&) { throw std::runtime_error("the report failed"); }));
}
