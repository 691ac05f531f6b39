// logUpdate: what a second look at the end of a log adds to the first.

#include "host/cli/log_follow.h"

#include <string>

#include <doctest/doctest.h>

using tide::cli::logUpdate;

TEST_CASE("log follow: a log shorter than the window adds exactly what was appended") {
  auto grown = logUpdate("started\n", "started\nline 2\nline 3\n", 64);
  CHECK(grown.added == "line 2\nline 3\n");
  CHECK_FALSE(grown.restarted);

  auto same = logUpdate("started\nline 2\n", "started\nline 2\n", 64);
  CHECK(same.added.empty());
  CHECK_FALSE(same.restarted);

  // Repeated lines are counted, not matched away.
  auto repeated = logUpdate("GET /healthz\nGET /healthz\n", "GET /healthz\nGET /healthz\nGET /healthz\n", 64);
  CHECK(repeated.added == "GET /healthz\n");

  auto first = logUpdate("", "started\n", 64);
  CHECK(first.added == "started\n");
  CHECK_FALSE(first.restarted);
}

TEST_CASE("log follow: a log that does not continue the look before is shown whole as restarted") {
  // A new runtime instance writes a new log.
  auto replaced = logUpdate("listening on :30001\nstopping\n", "listening on :30002\n", 64);
  CHECK(replaced.added == "listening on :30002\n");
  CHECK(replaced.restarted);
  // A log cut shorter.
  auto cut = logUpdate("one\ntwo\n", "one\n", 64);
  CHECK(cut.added == "one\n");
  CHECK(cut.restarted);
  // A log that has gone (nothing to read) adds nothing.
  CHECK(logUpdate("one\n", "", 64).added.empty());
}

TEST_CASE("log follow: once the log fills the window each look is lined up with the one before") {
  // The window is 8 bytes: each look is the log's last 8.
  auto moved = logUpdate("abcdefgh", "cdefghij", 8);
  CHECK(moved.added == "ij");
  CHECK_FALSE(moved.restarted);

  auto still = logUpdate("abcdefgh", "abcdefgh", 8);
  CHECK(still.added.empty());

  // The first look was the whole log, shorter than the window; the log has grown past it.
  auto past = logUpdate("abcde", "cdefghij", 8);
  CHECK(past.added == "fghij");

  // More than a window arrived between the looks: nothing lines up.
  auto burst = logUpdate("abcdefgh", "qrstuvwx", 8);
  CHECK(burst.added == "qrstuvwx");
  CHECK(burst.restarted);

  // The longest overlap wins, even where a shorter one also fits ("ab" ends both).
  auto longest = logUpdate("xxabcdab", "abcdabyy", 8);
  CHECK(longest.added == "yy");
}
