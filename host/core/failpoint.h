#pragma once
// Failpoints (docs/architecture.md#failpoints): named places in the host where a test can make
// the process die or a call fail, to prove that recovery works from exactly there. They are
// compiled into every build and inert unless armed: the check at each place is one relaxed
// atomic load while nothing is armed.
//
// The environment variable TIDE_FAILPOINTS arms them when the process starts, as a
// comma-separated list of NAME=ACTION[@N]:
//   kill    the process sends itself SIGKILL (a crash: no destructor, no flush, no reply);
//   error   the call at that place fails with kUnavailable, as a transient fault would;
//   @N      only the N-th time the place is reached (counting from 1); without it, every time.
// e.g. TIDE_FAILPOINTS=ledger.commit.after=kill@3,driver.ensure.before=error@1
//
// The places: ledger.commit.before / .after (the group commit of every ledger write) and
// driver.<call>.before / .after for every driver call (ensure_volume, remove_volume, ensure,
// stop, remove, status, list; a batched status of many instances is one "status" call), and
// process.spawned (the process driver started a workload and has not recorded its pid yet).
//
// Thread-safety: every function is thread-safe.

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "host/core/status.h"

namespace tide::failpoint {

// The environment variable read at start.
inline constexpr const char* kEnvironmentVariable = "TIDE_FAILPOINTS";

namespace internal {
extern std::atomic<bool> g_armed;
Status reached(std::string_view name);
}  // namespace internal

// Called at the place named `name`: ok unless an armed `error` fires; never returns when an
// armed `kill` fires.
inline Status check(std::string_view name) {
  if (!internal::g_armed.load(std::memory_order_relaxed)) return Status::ok();
  return internal::reached(name);
}

// Whether any failpoint is armed: wrappers that exist only to hold failpoints (the host's
// driver wrapper) are put in place only then.
inline bool armed() { return internal::g_armed.load(std::memory_order_relaxed); }

// Replaces every armed failpoint with those of `spec` (the TIDE_FAILPOINTS syntax; empty
// disarms all) and resets the counts. kInvalidArgument naming the entry that does not parse;
// then nothing changes.
Status arm(std::string_view spec);

// How often `name` was reached while any failpoint was armed, since the last arm().
int64_t timesReached(std::string_view name);

}  // namespace tide::failpoint
