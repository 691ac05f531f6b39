#pragma once
// `tide serve` as a child process, for the tests and programs that kill and restart it (the
// crash test, the crash harness). Nothing here asserts: callers that are not doctest
// programs use it too.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace tide::testing {

// Starts `<binary> serve --config <config>` with its stdout and stderr appended to `log` and
// `failpoints` armed (TIDE_FAILPOINTS; empty: none). The child's pid; -1 when fork failed.
inline pid_t spawnServe(const std::string& binary, const std::string& config, const std::string& log,
                        const std::string& failpoints) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    if (!failpoints.empty()) ::setenv("TIDE_FAILPOINTS", failpoints.c_str(), 1);
    ::execl(binary.c_str(), "tide", "serve", "--config", config.c_str(), nullptr);
    ::_exit(127);
  }
  return pid;
}

// Sends `signal` to `pid` when it runs, waits for it to end and sets it to -1.
inline void killAndReap(pid_t& pid, int signal) {
  if (pid <= 0) return;
  ::kill(pid, signal);
  int status = 0;
  ::waitpid(pid, &status, 0);
  pid = -1;
}

}  // namespace tide::testing
