#pragma once
// What the process driver learns about processes from /proc. A pid alone is not an
// identity (pids are reused); a pid plus its start time (field 22 of /proc/<pid>/stat,
// clock ticks since boot) is. Linux only.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace tide::drivers {

struct ProcessIdentity {
  pid_t pid = 0;
  uint64_t start_time = 0;
};

struct ProcStat {
  char state = '?';  // R, S, D, Z, X, ...
  pid_t pgrp = 0;
  uint64_t start_time = 0;
};

// Parses the text of /proc/<pid>/stat. Async-signal-safe (no allocation), so a forked
// child of a multi-threaded host may call it.
std::optional<ProcStat> parseProcStat(const char* text, size_t length);

// Reads /proc/<pid>/stat; nullopt when there is no such process. Async-signal-safe.
std::optional<ProcStat> readProcStat(pid_t pid);

// True when `identity` names a process that exists, is not a zombie, and started at the
// recorded time (so a reused pid is never mistaken for ours).
bool isRunning(const ProcessIdentity& identity);

// True when some process that is not a zombie belongs to process group `pgrp`.
bool groupHasLiveMembers(pid_t pgrp);

// True when process group `identity.pid` can only be the group `identity` led: either the
// leader is still there with the recorded start time, or no process holds the pid (Linux
// does not hand out a pid while a group of that id exists, so the survivors are ours).
bool ownsGroup(const ProcessIdentity& identity);

}  // namespace tide::drivers
