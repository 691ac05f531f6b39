#pragma once
// Running a short-lived program to its end and keeping what it printed, within a deadline:
// the one way tide runs a command and waits for it (exec health checks, the podman CLI of the
// container driver). No shell: argv runs as given.
//
// The program runs in a process group of its own, with stdin from /dev/null, the default
// signal dispositions and an empty signal mask (the host's ignored SIGPIPE and blocked
// signals do not leak into it), and no descriptor of the caller's but the pipes of its
// output. On the deadline or a cancel the whole group is SIGKILLed and reaped before
// runCommand returns, so nothing it started in its group outlives the call.
//
// Thread-safe: calls share nothing and may run on any number of threads at once.
// REQUIRES: SIGCHLD is not ignored and nothing else reaps with waitpid(-1).

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "host/core/status.h"

namespace tide {

struct CommandRequest {
  // argv[0] is a path (holding a '/') or a name looked up in the PATH of `env`.
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=value": the program's whole environment
  std::string cwd;               // empty: the caller's
  std::chrono::microseconds timeout = std::chrono::seconds(30);
  bool merge_output = false;            // stderr into `output` too (as one pipe: their order kept)
  size_t max_output = size_t{1} << 20;  // kept of each stream; the rest is read and dropped
  // Ends the program early once `cancelled` returns true: asked before every wait, which
  // `cancel_fd` (readable once cancelled) wakes; without a fd, every 10 ms. Both optional.
  std::function<bool()> cancelled;
  int cancel_fd = -1;
};

struct CommandOutcome {
  enum class Ending { kExited, kTimedOut, kCancelled };
  Ending ending = Ending::kExited;
  int wait_status = 0;  // waitpid's status, for kExited (an exit or a signal)
  std::string output;   // stdout, and stderr with merge_output
  std::string errors;   // stderr without merge_output

  // Exited by itself with code 0.
  bool succeeded() const;
  // The exit code; 128 + the signal when killed by one; -1 when it did not end by itself.
  int exitCode() const;
  // "exited 1", "killed by SIGTERM", "timed out after 0.2s; killed", "cancelled; killed".
  std::string endText(std::chrono::microseconds timeout) const;
};

// Runs `request` to its end. The outcome also when the program failed or was killed; an
// error only when it could not be run: kNotFound for a name not on PATH ("cannot run \"x\":
// not found in PATH"), kUnavailable when pipes or the spawn failed (the message names the
// executable and errno's text), kInternal when its exit status was reaped elsewhere.
Result<CommandOutcome> runCommand(const CommandRequest& request);

// `name` itself when it holds a '/', else the first executable regular file of that name in
// `path_variable` (colon-separated); "" when there is none.
std::string findExecutable(const std::string& name, const std::string& path_variable);

// The environment of this process as "NAME=value" entries, with `overrides` ("NAME=value")
// replacing or adding entries.
std::vector<std::string> inheritedEnvironment(const std::vector<std::string>& overrides = {});

}  // namespace tide
