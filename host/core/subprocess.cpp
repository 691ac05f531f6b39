#include "host/core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string_view>

#include "host/core/fd.h"

extern char** environ;

namespace tide {
namespace {

using Steady = std::chrono::steady_clock;

constexpr auto kReapPoll = std::chrono::milliseconds(10);    // without a pidfd: how often to look for the exit
constexpr auto kCancelPoll = std::chrono::milliseconds(10);  // a `cancelled` without an fd: how often to ask
constexpr const char* kDefaultPath = "/usr/bin:/bin";

// strerror is not thread-safe; strerrordesc_np is.
std::string errnoText(int error) {
  const char* text = strerrordesc_np(error);
  return text != nullptr ? text : "error " + std::to_string(error);
}

// Milliseconds until `deadline`, rounded up so a poll does not wake just short of it.
int millisUntil(Steady::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Steady::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

// Appends what `fd` has now to `kept`, up to `max` bytes (beyond, it is read and dropped, so
// the program never blocks on a full pipe). Returns false at end of file.
bool drain(int fd, std::string& kept, size_t max) {
  char buffer[4096];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      kept.append(buffer, std::min(static_cast<size_t>(n), max - std::min(max, kept.size())));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);  // else end of file or a broken pipe
  }
}

struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

std::string pathOf(const std::vector<std::string>& env) {
  for (const std::string& entry : env) {
    if (entry.starts_with("PATH=")) return entry.substr(5);
  }
  return kDefaultPath;
}

std::string secondsText(std::chrono::microseconds duration) {
  char text[32];
  std::snprintf(text, sizeof(text), "%gs", std::chrono::duration<double>(duration).count());
  return text;
}

}  // namespace

bool CommandOutcome::succeeded() const {
  return ending == Ending::kExited && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

int CommandOutcome::exitCode() const {
  if (ending != Ending::kExited) return -1;
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

std::string CommandOutcome::endText(std::chrono::microseconds timeout) const {
  if (ending == Ending::kTimedOut) return "timed out after " + secondsText(timeout) + "; killed";
  if (ending == Ending::kCancelled) return "cancelled; killed";
  if (WIFEXITED(wait_status)) return "exited " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const char* name = sigabbrev_np(WTERMSIG(wait_status));
    return "killed by " +
           (name != nullptr ? "SIG" + std::string(name) : "signal " + std::to_string(WTERMSIG(wait_status)));
  }
  return "ended with status " + std::to_string(wait_status);
}

std::string findExecutable(const std::string& name, const std::string& path_variable) {
  if (name.find('/') != std::string::npos) return name;
  size_t start = 0;
  while (start <= path_variable.size()) {
    size_t end = std::min(path_variable.find(':', start), path_variable.size());
    std::string dir = path_variable.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return "";
}

std::vector<std::string> inheritedEnvironment(const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> env;
  auto add = [&env](std::string_view entry) {
    const size_t equals = entry.find('=');
    if (equals != std::string_view::npos) env[std::string(entry.substr(0, equals))] = entry.substr(equals + 1);
  };
  for (char** entry = environ; *entry != nullptr; ++entry) add(*entry);
  for (const std::string& entry : overrides) add(entry);
  std::vector<std::string> entries;
  entries.reserve(env.size());
  for (const auto& [name, value] : env) entries.push_back(name + "=" + value);
  return entries;
}

Result<CommandOutcome> runCommand(const CommandRequest& request) {
  if (request.argv.empty() || request.argv.front().empty()) return Status::invalidArgument("no command to run");
  const std::string executable = findExecutable(request.argv.front(), pathOf(request.env));
  if (executable.empty()) return Status::notFound("cannot run \"" + request.argv.front() + "\": not found in PATH");

  std::vector<std::string> env_entries = request.env;
  std::vector<char*> envp;
  for (std::string& entry : env_entries) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = request.argv;
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Status::unavailable("cannot create a pipe: " + errnoText(errno));
  Fd output_read(fds[0]);
  Fd output_write(fds[1]);
  Fd errors_read, errors_write;
  if (!request.merge_output) {
    if (::pipe2(fds, O_CLOEXEC) != 0) return Status::unavailable("cannot create a pipe: " + errnoText(errno));
    errors_read.reset(fds[0]);
    errors_write.reset(fds[1]);
  }

  SpawnSetup setup;
  posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&setup.actions, output_write.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&setup.actions, request.merge_output ? output_write.get() : errors_write.get(),
                                   STDERR_FILENO);
  // Descriptors the caller opened without O_CLOEXEC (another thread's, a library's) must not
  // live on in what the program leaves behind (podman's conmon outlives the call).
  posix_spawn_file_actions_addclosefrom_np(&setup.actions, 3);
  if (!request.cwd.empty()) posix_spawn_file_actions_addchdir_np(&setup.actions, request.cwd.c_str());
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  posix_spawnattr_setflags(&setup.attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&setup.attributes, 0);
  posix_spawnattr_setsigmask(&setup.attributes, &none);
  posix_spawnattr_setsigdefault(&setup.attributes, &all);

  const Steady::time_point deadline = Steady::now() + request.timeout;
  pid_t pid = 0;
  const int spawned =
      posix_spawn(&pid, executable.c_str(), &setup.actions, &setup.attributes, argv.data(), envp.data());
  output_write.reset();
  errors_write.reset();
  if (spawned != 0) {
    const std::string where = request.cwd.empty() ? "" : " in " + request.cwd;
    return Status::unavailable("cannot run " + executable + where + ": " + errnoText(spawned));
  }
  ::fcntl(output_read.get(), F_SETFL, O_NONBLOCK);
  if (errors_read.valid()) ::fcntl(errors_read.get(), F_SETFL, O_NONBLOCK);
  // Wakes poll when the program exits. Without one (old kernels), poll in short slices.
  Fd exited_fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));

  CommandOutcome outcome;
  bool reaped = false;
  bool cancelled = false;
  while (true) {
    const pid_t waited = ::waitpid(pid, &outcome.wait_status, WNOHANG);
    if (waited == pid) {
      reaped = true;
      break;
    }
    if (waited < 0 && errno == ECHILD) {
      return Status::internal("the exit status of " + executable + " was lost (reaped elsewhere)");
    }
    cancelled = request.cancelled && request.cancelled();
    const int left = millisUntil(deadline);
    if (cancelled || left == 0) break;
    pollfd watched[4];
    nfds_t count = 0;
    if (output_read.valid()) watched[count++] = {output_read.get(), POLLIN, 0};
    if (errors_read.valid()) watched[count++] = {errors_read.get(), POLLIN, 0};
    if (exited_fd.valid()) watched[count++] = {exited_fd.get(), POLLIN, 0};
    if (request.cancel_fd >= 0) watched[count++] = {request.cancel_fd, POLLIN, 0};
    int wait_ms = exited_fd.valid() ? left : std::min(left, static_cast<int>(kReapPoll.count()));
    if (request.cancelled && request.cancel_fd < 0) wait_ms = std::min(wait_ms, static_cast<int>(kCancelPoll.count()));
    ::poll(watched, count, wait_ms);
    if (output_read.valid() && !drain(output_read.get(), outcome.output, request.max_output)) output_read.reset();
    if (errors_read.valid() && !drain(errors_read.get(), outcome.errors, request.max_output)) errors_read.reset();
  }
  if (!reaped) {
    ::kill(-pid, SIGKILL);
    while (::waitpid(pid, &outcome.wait_status, 0) < 0 && errno == EINTR) {}
    outcome.ending = cancelled ? CommandOutcome::Ending::kCancelled : CommandOutcome::Ending::kTimedOut;
  }
  // What the program wrote before it ended (and what its group, killed now, wrote).
  if (output_read.valid()) drain(output_read.get(), outcome.output, request.max_output);
  if (errors_read.valid()) drain(errors_read.get(), outcome.errors, request.max_output);
  return outcome;
}

}  // namespace tide
