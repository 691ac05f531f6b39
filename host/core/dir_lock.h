#pragma once
// An exclusive lock on a directory (docs/architecture.md#start-up): `tide serve` holds
// one on its data dir for as long as it runs, so that a second host cannot open the same
// ledger and drive the same workloads.
//
// The lock is flock(2) on <dir>/tide.lock, which holds the holder's pid for the message a
// second host prints. The kernel drops it when the holder exits, however it exits (a
// SIGKILL leaves no stale lock); the file itself stays. The descriptor is close-on-exec, so
// workloads the host starts never hold it.
//
// Thread-safety: none; one owner.

#include <string>

#include "host/core/fd.h"
#include "host/core/status.h"

namespace tide {

class DirLock {
 public:
  static constexpr const char* kFileName = "tide.lock";

  // Locks `dir` (which must exist) without waiting. kConflict, naming the dir and
  // the holder's pid, when another process holds it; kInternal when the lock file cannot
  // be opened or written.
  static Result<DirLock> acquire(const std::string& dir);

  DirLock(DirLock&&) = default;
  DirLock& operator=(DirLock&&) = default;

 private:
  explicit DirLock(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

}  // namespace tide
