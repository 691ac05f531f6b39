#include "drivers/process/spawn.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "host/core/fd.h"

namespace tide::drivers {
namespace {

// What the waiter tells the host through a pipe, in one write (atomic: < PIPE_BUF).
struct Report {
  int64_t workload_pid = 0;
  int64_t workload_start = 0;
  int64_t waiter_pid = 0;
  int64_t waiter_start = 0;
  int64_t fork_errno = 0;
};

// Why a workload did not exec, sent through the exec pipe in one write.
enum class Stage : int32_t { kEnterDir, kBecomeUser, kExec };
struct ExecFailure {
  Stage stage = Stage::kExec;
  int32_t error = 0;
};

constexpr auto kExecReportTimeout = std::chrono::seconds(10);
constexpr auto kWaiterExitTimeout = std::chrono::seconds(2);
// Without a pidfd (kernels before 5.3) the waiter looks for the workload's exit this often.
constexpr int kExitPollMs = 100;

// Moves `fd` above the standard streams so dup2 onto 0..2 in the workload cannot clobber it.
int aboveStdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return moved;
}

bool makePipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  read_end.reset(aboveStdio(fds[0]));
  write_end.reset(aboveStdio(fds[1]));
  return read_end.get() >= 0 && write_end.get() >= 0;
}

// --- async-signal-safe helpers, used between fork and exec/_exit ---------------------

void writeAll(int fd, const void* data, size_t size) {
  const char* at = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = write(fd, at, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    at += n;
    size -= static_cast<size_t>(n);
  }
}

// Closes every descriptor from 3 up except those in `keep`.
void closeAllExcept(std::array<int, 4> keep) {
  std::sort(keep.begin(), keep.end());
  unsigned int next = 3;
  for (int fd : keep) {
    if (fd < static_cast<int>(next)) continue;
    if (static_cast<unsigned int>(fd) > next) close_range(next, static_cast<unsigned int>(fd) - 1, 0);
    next = static_cast<unsigned int>(fd) + 1;
  }
  close_range(next, ~0U, 0);
}

// Default dispositions and an empty mask: the host's handlers and blocked signals must not
// leak into the waiter or the workload.
void resetSignals() {
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &fallback, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

size_t formatCode(int code, char* out) {
  char digits[16];
  size_t n = 0;
  bool negative = code < 0;
  unsigned int value =
      negative ? static_cast<unsigned int>(-static_cast<int64_t>(code)) : static_cast<unsigned int>(code);
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  size_t at = 0;
  if (negative) out[at++] = '-';
  while (n > 0) out[at++] = digits[--n];
  out[at++] = '\n';
  return at;
}

// The host's argument and environment strings, one contiguous area (setProcessTitleArea).
char* g_title_area = nullptr;
size_t g_title_area_size = 0;

struct ChildPlan {
  const char* title;
  const char* executable;
  char* const* argv;
  char* const* envp;
  const char* exit_path;
  const char* exit_tmp_path;
  const char* log_path;
  const char* rotated_log_path;
  const char* rotating_log_path;  // where the old log is linked, and the new one opened, on the way
  const char* working_dir;  // null: stay where the host is
  const WorkloadUser* user;  // null: stay the host's user
  size_t log_max_bytes;
  int report_fd;
  int exec_fd;
  int log_fd;
  int null_fd;
};

[[noreturn]] void failWorkload(const ChildPlan& plan, Stage stage) {
  ExecFailure failure{stage, errno};
  writeAll(plan.exec_fd, &failure, sizeof(failure));
  _exit(127);
}

[[noreturn]] void runWorkload(const ChildPlan& plan, int output_fd) {
  setsid();
  resetSignals();
  dup2(plan.null_fd, 0);
  dup2(output_fd, 1);
  dup2(output_fd, 2);
  if (plan.working_dir != nullptr && chdir(plan.working_dir) != 0) failWorkload(plan, Stage::kEnterDir);
  if (plan.user != nullptr) {
    // Groups first: once the uid changes, the process may no longer change them.
    const WorkloadUser& user = *plan.user;
    if (setgroups(user.groups.size(), user.groups.data()) != 0 || setgid(user.gid) != 0 || setuid(user.uid) != 0) {
      failWorkload(plan, Stage::kBecomeUser);
    }
  }
  execve(plan.executable, plan.argv, plan.envp);
  failWorkload(plan, Stage::kExec);
}

// The log the waiter copies the workload's output into, rotated at max_bytes (0: never).
struct LogSink {
  const ChildPlan& plan;
  int fd;
  size_t size;

  // The log's path names a file at every moment, so a reader never finds no log: the old file
  // is linked to <log>.1 while it still is <log>, and a new one, opened on the side, then takes
  // its place in one rename. A reader between the two sees one file under both names.
  void rotate() {
    unlink(plan.rotating_log_path);
    if (link(plan.log_path, plan.rotating_log_path) == 0) {
      rename(plan.rotating_log_path, plan.rotated_log_path);
    } else {
      rename(plan.log_path, plan.rotated_log_path);  // no hard links here: a short gap instead
    }
    if (fd >= 0) close(fd);
    fd = open(plan.rotating_log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0 && rename(plan.rotating_log_path, plan.log_path) != 0) {
      close(fd);
      fd = -1;
    }
    if (fd < 0) fd = open(plan.log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    size = 0;
  }

  // Output that finds no log (it could not be reopened) is dropped: never written to <log>.1.
  void append(const char* data, size_t length) {
    while (length > 0) {
      if (fd < 0 || (plan.log_max_bytes > 0 && size >= plan.log_max_bytes)) rotate();
      size_t room = plan.log_max_bytes > 0 ? plan.log_max_bytes - size : length;
      size_t take = length < room ? length : room;
      if (fd >= 0) writeAll(fd, data, take);
      size += take;
      data += take;
      length -= take;
    }
  }
};

// Copies what the non-blocking `fd` holds now into `sink`. False at end of file.
bool copyAvailable(int fd, LogSink& sink) {
  char buffer[16384];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      sink.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

// Copies the workload's output into the log until it exits; returns its wait status.
int copyUntilExit(pid_t workload, int output_fd, LogSink& sink) {
  fcntl(output_fd, F_SETFL, O_NONBLOCK);
  int exited_fd = static_cast<int>(syscall(SYS_pidfd_open, workload, 0));
  bool output_open = true;
  int status = 0;
  while (true) {
    pid_t waited = waitpid(workload, &status, WNOHANG);
    if (waited == workload) break;
    if (waited < 0 && errno != EINTR) _exit(1);
    pollfd watched[2];
    nfds_t count = 0;
    if (output_open) watched[count++] = {output_fd, POLLIN, 0};
    if (exited_fd >= 0) watched[count++] = {exited_fd, POLLIN, 0};
    poll(watched, count, exited_fd >= 0 ? -1 : kExitPollMs);
    if (output_open) output_open = copyAvailable(output_fd, sink);
  }
  if (output_open) copyAvailable(output_fd, sink);  // what it wrote just before exiting
  if (exited_fd >= 0) close(exited_fd);
  return status;
}

// Names the waiter "tide-waiter <title>" in `ps` (its command line) and in top (its comm).
// Async-signal-safe: it writes bytes only.
void nameWaiter(const char* title) {
  static constexpr char kName[] = "tide-waiter";
  prctl(PR_SET_NAME, kName, 0, 0, 0);
  if (g_title_area == nullptr || g_title_area_size < 2) return;
  size_t at = 0;
  auto put = [&](const char* text) {
    for (; *text != '\0' && at + 1 < g_title_area_size; ++text) g_title_area[at++] = *text;
  };
  put(kName);
  if (title != nullptr && *title != '\0') {
    put(" ");
    put(title);
  }
  memset(g_title_area + at, 0, g_title_area_size - at);
}

[[noreturn]] void runWaiter(const ChildPlan& plan) {
  setsid();
  resetSignals();
  nameWaiter(plan.title);
  Report report;
  int output[2];
  if (pipe2(output, O_CLOEXEC) != 0) {
    report.fork_errno = errno;
    writeAll(plan.report_fd, &report, sizeof(report));
    _exit(1);
  }
  pid_t workload = fork();
  if (workload == 0) runWorkload(plan, output[1]);
  close(output[1]);
  if (workload < 0) {
    report.fork_errno = errno;
    writeAll(plan.report_fd, &report, sizeof(report));
    _exit(1);
  }
  // The workload cannot vanish before we reap it, so its /proc entry is readable here.
  std::optional<ProcStat> workload_stat = readProcStat(workload);
  std::optional<ProcStat> own_stat = readProcStat(getpid());
  report.workload_pid = workload;
  report.workload_start = workload_stat ? static_cast<int64_t>(workload_stat->start_time) : 0;
  report.waiter_pid = getpid();
  report.waiter_start = own_stat ? static_cast<int64_t>(own_stat->start_time) : 0;
  writeAll(plan.report_fd, &report, sizeof(report));
  close(plan.report_fd);
  close(plan.exec_fd);
  close(plan.null_fd);

  struct stat log_stat {};
  LogSink sink{plan, plan.log_fd, fstat(plan.log_fd, &log_stat) == 0 ? static_cast<size_t>(log_stat.st_size) : 0};
  int status = copyUntilExit(workload, output[0], sink);
  close(output[0]);
  if (sink.fd >= 0) close(sink.fd);

  int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  char text[24];
  size_t length = formatCode(code, text);
  int fd = open(plan.exit_tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    writeAll(fd, text, length);
    fsync(fd);
    close(fd);
    rename(plan.exit_tmp_path, plan.exit_path);
  }
  _exit(0);
}

[[noreturn]] void runIntermediate(const ChildPlan& plan) {
  closeAllExcept({plan.report_fd, plan.exec_fd, plan.log_fd, plan.null_fd});
  pid_t waiter = fork();
  if (waiter == 0) runWaiter(plan);
  if (waiter < 0) {
    Report report;
    report.fork_errno = errno;
    writeAll(plan.report_fd, &report, sizeof(report));
  }
  _exit(0);
}

// --- host side ---------------------------------------------------------------------

size_t readFully(int fd, void* data, size_t size) {
  char* at = static_cast<char*>(data);
  size_t got = 0;
  while (got < size) {
    ssize_t n = read(fd, at + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

// Why the workload did not exec; nullopt once exec succeeded (the pipe closed on exec). A
// workload that neither execs nor exits within the timeout is taken as started.
std::optional<ExecFailure> awaitExec(int fd) {
  auto deadline = std::chrono::steady_clock::now() + kExecReportTimeout;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd poll_fd{fd, POLLIN, 0};
    int ready = poll(&poll_fd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    ExecFailure failure;
    if (readFully(fd, &failure, sizeof(failure)) != sizeof(failure)) return std::nullopt;
    return failure;
  }
}

std::string errnoText(int error) { return std::strerror(error); }

}  // namespace

Result<SpawnedProcess> spawnDetached(const SpawnRequest& request) {
  if (request.argv.empty()) return Status::invalidArgument("empty argv");
  Fd report_read, report_write, exec_read, exec_write;
  if (!makePipe(report_read, report_write) || !makePipe(exec_read, exec_write)) {
    return Status::unavailable("cannot create pipes: " + errnoText(errno));
  }
  Fd log(aboveStdio(open(request.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)));
  if (log.get() < 0) return Status::internal("cannot open log " + request.log_path + ": " + errnoText(errno));
  Fd null(aboveStdio(open("/dev/null", O_RDWR | O_CLOEXEC)));
  if (null.get() < 0) return Status::internal("cannot open /dev/null: " + errnoText(errno));

  std::vector<char*> argv;
  for (const std::string& arg : request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& entry : request.env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  std::string exit_tmp_path = request.exit_path + ".tmp";
  std::string rotated_log_path = request.log_path + ".1";
  std::string rotating_log_path = request.log_path + ".next";
  unlink(request.exit_path.c_str());

  ChildPlan plan{request.title.c_str(),
                 request.executable.c_str(),
                 argv.data(),
                 envp.data(),
                 request.exit_path.c_str(),
                 exit_tmp_path.c_str(),
                 request.log_path.c_str(),
                 rotated_log_path.c_str(),
                 rotating_log_path.c_str(),
                 request.working_dir.empty() ? nullptr : request.working_dir.c_str(),
                 request.user ? &*request.user : nullptr,
                 request.log_max_bytes,
                 report_write.get(),
                 exec_write.get(),
                 log.get(),
                 null.get()};
  pid_t intermediate = fork();
  if (intermediate < 0) return Status::unavailable("fork: " + errnoText(errno));
  if (intermediate == 0) runIntermediate(plan);

  report_write.reset();
  exec_write.reset();
  log.reset();
  null.reset();
  while (waitpid(intermediate, nullptr, 0) < 0 && errno == EINTR) {}

  Report report;
  if (readFully(report_read.get(), &report, sizeof(report)) != sizeof(report)) {
    return Status::unavailable("the process waiter exited before reporting");
  }
  if (report.fork_errno != 0) return Status::unavailable("fork: " + errnoText(static_cast<int>(report.fork_errno)));

  SpawnedProcess spawned;
  spawned.workload = {static_cast<pid_t>(report.workload_pid), static_cast<uint64_t>(report.workload_start)};
  spawned.waiter = {static_cast<pid_t>(report.waiter_pid), static_cast<uint64_t>(report.waiter_start)};

  if (std::optional<ExecFailure> failure = awaitExec(exec_read.get())) {
    // The waiter records the failed workload's exit; let it finish so no exit file
    // appears after the caller has cleaned up.
    auto deadline = std::chrono::steady_clock::now() + kWaiterExitTimeout;
    while (isRunning(spawned.waiter) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    unlink(request.exit_path.c_str());
    std::string why = errnoText(failure->error);
    switch (failure->stage) {
      case Stage::kEnterDir: return Status::unprocessable("cannot enter " + request.working_dir + ": " + why);
      case Stage::kBecomeUser: return Status::unprocessable("cannot become user " + request.user->name + ": " + why);
      case Stage::kExec: break;
    }
    return Status::unprocessable("cannot execute " + request.executable + ": " + why);
  }
  return spawned;
}

void setProcessTitleArea(int argc, char** argv) {
  if (argc < 1 || argv == nullptr || argv[0] == nullptr) return;
  // Linux lays the argument strings out back to back, the environment's right after them;
  // take the run that is contiguous, so nothing past it is ever written.
  char* end = argv[0];
  for (int i = 0; i < argc && argv[i] == end; ++i) end = argv[i] + strlen(argv[i]) + 1;
  for (char** entry = environ; entry != nullptr && *entry != nullptr && *entry == end; ++entry) {
    end = *entry + strlen(*entry) + 1;
  }
  g_title_area = argv[0];
  g_title_area_size = static_cast<size_t>(end - argv[0]);
}

}  // namespace tide::drivers
