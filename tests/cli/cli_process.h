#pragma once
// The real `tide` binary as a child process, for what in-process runs cannot show: how the
// process itself answers a command line (its stderr and exit code), and verbs that run until
// they are stopped (`tide logs -f`, `tide events -f`), read while they run.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tests/cli/cli_test_support.h"

namespace tide::testing {

// `TIDE_BINARY <args>` (a shell command line) run to its end, its stderr captured through a
// file in `scratch`.
inline CliRun runTideBinary(const std::string& args, const std::filesystem::path& scratch) {
  const std::string err_file = (scratch / "tide-binary.err").string();
  CliRun result;
  FILE* pipe = ::popen((std::string(TIDE_BINARY) + " " + args + " 2>" + err_file).c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) result.out.append(buffer, n);
  const int status = ::pclose(pipe);
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::stringstream err;
  err << std::ifstream(err_file).rdbuf();
  result.err = err.str();
  return result;
}

// `TIDE_BINARY <args...>` running in the background with its stdout in a pipe the test reads
// as it goes; stopped (SIGINT, as Ctrl-C would) and reaped when the object goes.
class RunningTide {
 public:
  explicit RunningTide(std::vector<std::string> args) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    args.insert(args.begin(), "tide");
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, STDERR_FILENO);
      ::close(fds[0]);
      std::vector<char*> argv;
      for (std::string& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      ::execv(TIDE_BINARY, argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out_ = fds[0];
    ::fcntl(out_, F_SETFL, ::fcntl(out_, F_GETFL) | O_NONBLOCK);
  }
  RunningTide(const RunningTide&) = delete;
  RunningTide& operator=(const RunningTide&) = delete;

  ~RunningTide() {
    ::kill(pid_, SIGINT);
    ::waitpid(pid_, nullptr, 0);
    ::close(out_);
  }

  // Reads what the process printed until `seen` holds of all of it, or `timeout` passes (a
  // liveness bound, generous for a loaded machine) or the process closes its output.
  bool waitFor(const std::function<bool(const std::string&)>& seen,
               std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!seen(out_text_)) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd readable{out_, POLLIN, 0};
      if (::poll(&readable, 1, static_cast<int>(std::min<int64_t>(left.count(), 200))) <= 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(out_, buffer, sizeof buffer);
      if (n == 0) return seen(out_text_);
      if (n > 0) out_text_.append(buffer, static_cast<size_t>(n));
    }
    return true;
  }
  bool waitForText(const std::string& text) {
    return waitFor([&](const std::string& out) { return out.find(text) != std::string::npos; });
  }

  const std::string& output() const { return out_text_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string out_text_;
};

}  // namespace tide::testing
