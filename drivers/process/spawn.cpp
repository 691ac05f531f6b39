#include "drivers/process/spawn.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
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

// Names this process "<name> <title>" in `ps` (its command line) and `name` in top (its
// comm). Async-signal-safe: it writes bytes only.
void nameProcess(const char* name, const char* title) {
  prctl(PR_SET_NAME, name, 0, 0, 0);
  if (g_title_area == nullptr || g_title_area_size < 2) return;
  size_t at = 0;
  auto put = [&](const char* text) {
    for (; *text != '\0' && at + 1 < g_title_area_size; ++text) g_title_area[at++] = *text;
  };
  put(name);
  if (title != nullptr && *title != '\0') {
    put(" ");
    put(title);
  }
  memset(g_title_area + at, 0, g_title_area_size - at);
}

[[noreturn]] void runWaiter(const ChildPlan& plan) {
  setsid();
  resetSignals();
  nameProcess("tide-waiter", plan.title);
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

// --- the spawn helper (startSpawnHelper) -----------------------------------------------

// The host's end of the helper's socket; -1 without a helper, or once it is gone.
std::atomic<int> g_helper_fd{-1};

// A request larger than this is forked by the host itself: a SOCK_SEQPACKET message must fit
// the socket's send buffer (net.core.wmem_default, 208 KiB on Linux).
constexpr size_t kMaxHelperRequest = 128 << 10;
constexpr size_t kPlanFds = 4;  // report, exec, log, null: sent with the request (SCM_RIGHTS)

// A ChildPlan as the helper receives it: its strings, length-prefixed in a fixed order.
void putField(std::string& out, std::string_view field) {
  const uint32_t size = static_cast<uint32_t>(field.size());
  out.append(reinterpret_cast<const char*>(&size), sizeof size);
  out.append(field);
}

std::string encodePlan(const ChildPlan& plan) {
  std::string out;
  for (const char* field : {plan.title, plan.executable, plan.exit_path, plan.exit_tmp_path, plan.log_path,
                            plan.rotated_log_path, plan.rotating_log_path}) {
    putField(out, field);
  }
  putField(out, plan.working_dir != nullptr ? plan.working_dir : "");
  putField(out, std::to_string(plan.log_max_bytes));
  putField(out, plan.user != nullptr ? "1" : "0");
  if (plan.user != nullptr) {
    putField(out, plan.user->name);
    putField(out, std::to_string(plan.user->uid));
    putField(out, std::to_string(plan.user->gid));
    putField(out, std::to_string(plan.user->groups.size()));
    for (gid_t group : plan.user->groups) putField(out, std::to_string(group));
  }
  for (char* const* list : {plan.argv, plan.envp}) {
    size_t count = 0;
    while (list[count] != nullptr) ++count;
    putField(out, std::to_string(count));
    for (size_t i = 0; i < count; ++i) putField(out, list[i]);
  }
  return out;
}

// What encodePlan wrote, owned, with the pointers a ChildPlan needs into it.
struct DecodedPlan {
  std::vector<std::string> paths;  // title, executable, exit, exit tmp, log, rotated, rotating, working dir
  size_t log_max_bytes = 0;
  std::optional<WorkloadUser> user;
  std::vector<std::string> argv, env;
  std::vector<char*> argv_ptrs, env_ptrs;
};

class PlanReader {
 public:
  PlanReader(const char* data, size_t size) : at_(data), end_(data + size) {}
  bool next(std::string& field) {
    uint32_t size = 0;
    if (static_cast<size_t>(end_ - at_) < sizeof size) return false;
    std::memcpy(&size, at_, sizeof size);
    at_ += sizeof size;
    if (static_cast<size_t>(end_ - at_) < size) return false;
    field.assign(at_, size);
    at_ += size;
    return true;
  }
  bool number(unsigned long long& value) {
    std::string field;
    if (!next(field) || field.empty()) return false;
    char* end = nullptr;
    errno = 0;
    value = std::strtoull(field.c_str(), &end, 10);
    return errno == 0 && *end == '\0';
  }
  bool list(std::vector<std::string>& items, std::vector<char*>& pointers) {
    unsigned long long count = 0;
    if (!number(count) || count > kMaxHelperRequest) return false;
    items.resize(count);
    for (std::string& item : items) {
      if (!next(item)) return false;
    }
    for (std::string& item : items) pointers.push_back(item.data());
    pointers.push_back(nullptr);
    return true;
  }
  bool done() const { return at_ == end_; }

 private:
  const char* at_;
  const char* end_;
};

bool decodePlan(const char* data, size_t size, DecodedPlan& plan) {
  PlanReader in(data, size);
  plan.paths.resize(8);
  for (std::string& path : plan.paths) {
    if (!in.next(path)) return false;
  }
  unsigned long long value = 0;
  if (!in.number(value)) return false;
  plan.log_max_bytes = static_cast<size_t>(value);
  std::string has_user;
  if (!in.next(has_user)) return false;
  if (has_user == "1") {
    WorkloadUser user;
    unsigned long long uid = 0, gid = 0, groups = 0;
    if (!in.next(user.name) || !in.number(uid) || !in.number(gid) || !in.number(groups) || groups > 65536) return false;
    user.uid = static_cast<uid_t>(uid);
    user.gid = static_cast<gid_t>(gid);
    for (unsigned long long i = 0; i < groups; ++i) {
      if (!in.number(value)) return false;
      user.groups.push_back(static_cast<gid_t>(value));
    }
    plan.user = std::move(user);
  }
  return in.list(plan.argv, plan.argv_ptrs) && !plan.argv.empty() && in.list(plan.env, plan.env_ptrs) && in.done();
}

// Takes requests until the host's end closes, forking a waiter for each. It is the host as
// the host was when it started (single-threaded, a few MiB), so each fork copies little
// and each waiter holds nothing of the host's later memory.
[[noreturn]] void runHelper(int socket_fd) {
  nameProcess("tide-spawner", "");  // not the host's command line: `pgrep -f "tide serve"` finds the host alone
  // It lives exactly as long as the host's end of the socket: a terminal's Ctrl-C or a
  // SIGTERM to the process group is the host's to handle. Its waiters are reaped by the kernel.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) signal(sig, SIG_IGN);
  std::vector<char> buffer(kMaxHelperRequest);
  while (true) {
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kPlanFds)];
    iovec io{buffer.data(), buffer.size()};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    ssize_t n = recvmsg(socket_fd, &message, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(0);  // the host is gone
    std::vector<int> fds;
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        fds.push_back(fd);
      }
    }
    DecodedPlan decoded;
    const bool whole = fds.size() == kPlanFds && (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == 0 &&
                       decodePlan(buffer.data(), static_cast<size_t>(n), decoded);
    if (whole) {
      const std::vector<std::string>& p = decoded.paths;
      ChildPlan plan{p[0].c_str(), p[1].c_str(), decoded.argv_ptrs.data(), decoded.env_ptrs.data(),
                     p[2].c_str(), p[3].c_str(), p[4].c_str(), p[5].c_str(), p[6].c_str(),
                     p[7].empty() ? nullptr : p[7].c_str(), decoded.user ? &*decoded.user : nullptr,
                     decoded.log_max_bytes, fds[0], fds[1], fds[2], fds[3]};
      pid_t waiter = fork();
      if (waiter == 0) {
        closeAllExcept({plan.report_fd, plan.exec_fd, plan.log_fd, plan.null_fd});
        runWaiter(plan);
      }
      if (waiter < 0) {
        Report report;
        report.fork_errno = errno;
        writeAll(plan.report_fd, &report, sizeof(report));
      }
    }
    // A request it could not read is answered by closing its pipes: the host reads no report.
    for (int fd : fds) close(fd);
  }
}

// Hands `plan` to the helper, its descriptors with it. False when there is no helper, it
// is gone, or the request is too large: the caller forks the waiter itself.
bool sendToHelper(const ChildPlan& plan) {
  const int socket_fd = g_helper_fd.load();
  if (socket_fd < 0) return false;
  const std::string request = encodePlan(plan);
  if (request.size() > kMaxHelperRequest) return false;
  const int fds[kPlanFds] = {plan.report_fd, plan.exec_fd, plan.log_fd, plan.null_fd};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  iovec io{const_cast<char*>(request.data()), request.size()};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&message);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  while (true) {
    ssize_t sent = sendmsg(socket_fd, &message, MSG_NOSIGNAL);
    if (sent == static_cast<ssize_t>(request.size())) return true;
    if (sent < 0 && errno == EINTR) continue;
    // Gone (EPIPE) or refusing: from now on the host forks. The descriptor stays open, so
    // its number is never reused under a thread still sending on it.
    if (sent < 0 && errno != EMSGSIZE && errno != ENOBUFS) g_helper_fd.store(-1);
    return false;
  }
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
  if (!sendToHelper(plan)) {
    pid_t intermediate = fork();
    if (intermediate < 0) return Status::unavailable("fork: " + errnoText(errno));
    if (intermediate == 0) runIntermediate(plan);
    while (waitpid(intermediate, nullptr, 0) < 0 && errno == EINTR) {}
  }
  // The waiter (or the helper, on its way to forking it) holds its own copies now.
  report_write.reset();
  exec_write.reset();
  log.reset();
  null.reset();

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

bool startSpawnHelper() {
  if (g_helper_fd.load() >= 0) return true;
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) return false;
  const pid_t parent = getpid();
  const pid_t helper = fork();
  if (helper < 0) {
    close(ends[0]);
    close(ends[1]);
    return false;
  }
  if (helper == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // and the socket's end of file, should this be missed
    if (getppid() != parent) _exit(0);
    closeAllExcept({ends[1], -1, -1, -1});
    runHelper(ends[1]);
  }
  close(ends[1]);
  g_helper_fd.store(ends[0]);
  return true;
}

bool spawnHelperRunning() { return g_helper_fd.load() >= 0; }

}  // namespace tide::drivers
