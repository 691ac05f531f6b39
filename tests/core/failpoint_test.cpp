#include "host/core/failpoint.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tide {
namespace {

// Disarms whatever a case armed, so no other test meets an armed failpoint.
struct Disarm {
  ~Disarm() { (void)failpoint::arm(""); }
};

TEST_CASE("failpoint: inert unless armed, and counts nothing then") {
  Disarm disarm;
  REQUIRE(failpoint::arm("").isOk());
  CHECK_FALSE(failpoint::armed());
  CHECK(failpoint::check("ledger.commit.before").isOk());
  CHECK(failpoint::timesReached("ledger.commit.before") == 0);
}

TEST_CASE("failpoint: error@N fails the N-th time the place is reached and no other") {
  Disarm disarm;
  REQUIRE(failpoint::arm("driver.ensure.before=error@2, ledger.commit.after=error").isOk());
  CHECK(failpoint::armed());
  CHECK(failpoint::check("driver.ensure.before").isOk());
  Status second = failpoint::check("driver.ensure.before");
  CHECK(second.code() == Code::kUnavailable);
  CHECK(second.message().find("driver.ensure.before") != std::string::npos);
  CHECK(failpoint::check("driver.ensure.before").isOk());
  CHECK(failpoint::timesReached("driver.ensure.before") == 3);
  // Without @N, every time; a place nobody armed is only counted.
  CHECK_FALSE(failpoint::check("ledger.commit.after").isOk());
  CHECK_FALSE(failpoint::check("ledger.commit.after").isOk());
  CHECK(failpoint::check("driver.stop.after").isOk());
  CHECK(failpoint::timesReached("driver.stop.after") == 1);
}

TEST_CASE("failpoint: a spec that does not parse names its entry and changes nothing") {
  Disarm disarm;
  REQUIRE(failpoint::arm("driver.stop.before=error").isOk());
  for (const char* bad : {"driver.stop.before", "=kill", "x=explode", "x=kill@0", "x=kill@", "x=kill@2x"}) {
    CAPTURE(bad);
    Status refused = failpoint::arm(std::string("ledger.commit.after=kill,") + bad);
    CHECK(refused.code() == Code::kInvalidArgument);
    CHECK(refused.message().find(bad) != std::string::npos);
  }
  CHECK_FALSE(failpoint::check("driver.stop.before").isOk());
  CHECK(failpoint::check("ledger.commit.after").isOk());
}

TEST_CASE("failpoint: kill ends the process with SIGKILL at the place, not before") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (!failpoint::arm("ledger.commit.after=kill@2").isOk()) ::_exit(2);
    (void)failpoint::check("ledger.commit.after");
    (void)failpoint::check("ledger.commit.after");
    ::_exit(0);  // reached only when the kill did not fire
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
}

}  // namespace
}  // namespace tide
