#pragma once
// Starting a workload that outlives the host. The host forks a short-lived child that
// forks the *waiter* and exits at once (so nothing becomes a zombie of the host); the
// waiter starts a session of its own, forks the *workload* (which starts its own session
// and process group too, then execs), waits for it, and writes its exit code to a file.
// Neither process depends on the host, so both survive a host restart.
//
//   host ── fork ──> child (exits) ── fork ──> waiter (setsid) ── fork ──> workload (setsid, exec)
//
// The workload keeps nothing of the host but what the request names: its descriptors are
// /dev/null, and a pipe to the waiter as stdout and stderr; it starts in its working
// directory, as its user, with its environment. The waiter copies the pipe into the log,
// rotating it to <log>.1 when it reaches log_max_bytes, until the workload exits; what the
// workload's own children write after that is dropped.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "drivers/process/proc_stat.h"
#include "drivers/process/workload_user.h"
#include "host/core/status.h"

namespace tide::drivers {

struct SpawnRequest {
  std::string executable;         // absolute path, already resolved
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // "NAME=value", the whole environment
  std::string log_path;           // stdout and stderr, appended
  std::string exit_path;          // the waiter writes "<code>\n" here (via a temp file + rename)
  std::string working_dir;        // entered before the user changes, so its parents need not be reachable
  std::optional<WorkloadUser> user;  // nullopt: the host's user
  size_t log_max_bytes = 0;          // 0: no cap
  std::string title;                 // the waiter's name in `ps`: "tide-waiter <title>"
};

// Lets the waiters spawnDetached() forks name themselves in `ps` ("tide-waiter <title>")
// instead of showing the host's own command line (after the host ends, `ps` looked as if
// many hosts still ran; an agent's showed its --token). A waiter overwrites the argument and
// environment strings it shares with the host until it writes them (copy on write: the host
// keeps its own); it reads neither. Call once from main(), before any thread starts; without
// it waiters keep the host's command line.
void setProcessTitleArea(int argc, char** argv);

// Starts the spawn helper: a process forked now, which forks every waiter spawnDetached()
// starts from then on. Without it spawnDetached() forks the calling process, and a host with
// hundreds of threads and tens of MiB pays for that fork with its page tables copied, every
// page it writes afterwards copied again (copy on write), and a waiter that keeps the copy
// alive: measured at 1,000 workloads, a third of the host's CPU and 8 MiB of private memory
// per waiter (docs/performance.md). The helper is the caller as it is now, so call it where
// the process is still small and single-threaded: the CLI calls it for `serve` and `agent`
// after parsing their flags. It ends when this process does (the end of its socket). Best
// effort: false when it could not start; while it is not there (or after it died)
// spawnDetached() forks as before. Idempotent.
bool startSpawnHelper();
// Whether spawnDetached() hands its requests to the helper.
bool spawnHelperRunning();

struct SpawnedProcess {
  ProcessIdentity workload;  // leads its own session and process group
  ProcessIdentity waiter;
};

// Starts the workload. Exit code written to exit_path: the status it exited with, or
// 128 + the signal that killed it. Errors: kUnprocessable when exec, entering the working
// directory or becoming the user fails (the message names which, and errno; the workload
// never runs as the host's user then), kUnavailable when fork or pipes fail, kInternal when
// the log cannot be opened. Thread-safe; after fork only async-signal-safe calls are made.
Result<SpawnedProcess> spawnDetached(const SpawnRequest& request);

}  // namespace tide::drivers
