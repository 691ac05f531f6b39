#pragma once
// The barrier of every long-lived thread's loop (the engine, the executor's workers, the hook
// runner, the script directory watcher): an exception that escapes one round of the loop is
// reported — a log line, an error event — and the loop goes on, instead of std::terminate
// taking the host down. Errors are values in tide; this only catches what a library or a bug
// throws anyway.

#include <exception>
#include <string>

namespace tide {

// Runs `round()` and returns true when it returned. An exception escaping it is passed to
// `report` as text (its what(), or "unknown exception") and false is returned. Whatever
// `report` itself throws is dropped: the barrier never lets anything through.
template <class Round, class Report>
bool runGuarded(Round&& round, Report&& report) noexcept {
  std::string what;
  try {
    round();
    return true;
  } catch (const std::exception& error) {
    what = error.what();
  } catch (...) {
    what = "unknown exception";
  }
  try {
    report(what);
  } catch (...) {}
  return false;
}

}  // namespace tide
