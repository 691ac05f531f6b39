#include "drivers/process/proc_stat.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace tide::drivers {
namespace {

// Parses the decimal number at text[*at], leaving *at after it.
bool parseNumber(const char* text, size_t length, size_t* at, int64_t* out) {
  bool negative = *at < length && text[*at] == '-';
  if (negative) ++*at;
  size_t start = *at;
  int64_t value = 0;
  while (*at < length && text[*at] >= '0' && text[*at] <= '9') {
    value = value * 10 + (text[*at] - '0');
    ++*at;
  }
  if (*at == start) return false;
  *out = negative ? -value : value;
  return true;
}

// "/proc/<pid>/stat" into `path` without allocating.
void statPath(pid_t pid, char (&path)[32]) {
  char digits[16];
  int n = 0;
  auto value = static_cast<unsigned long>(pid);
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0 && n < 15);
  const char prefix[] = "/proc/";
  const char suffix[] = "/stat";
  size_t at = 0;
  for (size_t i = 0; prefix[i] != '\0'; ++i) path[at++] = prefix[i];
  while (n > 0) path[at++] = digits[--n];
  for (size_t i = 0; suffix[i] != '\0'; ++i) path[at++] = suffix[i];
  path[at] = '\0';
}

}  // namespace

std::optional<ProcStat> parseProcStat(const char* text, size_t length) {
  // The command name (field 2) is in parentheses and may itself hold spaces or ')', so
  // fields are counted from the last ')'.
  size_t close = length;
  for (size_t i = length; i > 0; --i) {
    if (text[i - 1] == ')') {
      close = i - 1;
      break;
    }
  }
  if (close == length || close + 2 >= length) return std::nullopt;
  ProcStat stat;
  size_t at = close + 2;
  stat.state = text[at];
  int field = 3;
  while (field < 22) {
    while (at < length && text[at] != ' ') ++at;
    if (at >= length) return std::nullopt;
    ++at;
    ++field;
    if (field == 5 || field == 22) {
      int64_t value = 0;
      size_t probe = at;
      if (!parseNumber(text, length, &probe, &value)) return std::nullopt;
      if (field == 5) stat.pgrp = static_cast<pid_t>(value);
      if (field == 22) stat.start_time = static_cast<uint64_t>(value);
    }
  }
  return stat;
}

std::optional<ProcStat> readProcStat(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  char path[32];
  statPath(pid, path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buffer[1024];
  size_t length = 0;
  while (length < sizeof(buffer)) {
    ssize_t n = read(fd, buffer + length, sizeof(buffer) - length);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    length += static_cast<size_t>(n);
  }
  close(fd);
  return parseProcStat(buffer, length);
}

bool isRunning(const ProcessIdentity& identity) {
  std::optional<ProcStat> stat = readProcStat(identity.pid);
  return stat && stat->start_time == identity.start_time && stat->state != 'Z' && stat->state != 'X';
}

bool groupHasLiveMembers(pid_t pgrp) {
  if (pgrp <= 0) return false;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return false;
  bool found = false;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') continue;
    std::optional<ProcStat> stat = readProcStat(static_cast<pid_t>(pid));
    if (stat && stat->pgrp == pgrp && stat->state != 'Z' && stat->state != 'X') {
      found = true;
      break;
    }
  }
  closedir(proc);
  return found;
}

bool ownsGroup(const ProcessIdentity& identity) {
  if (identity.pid <= 0) return false;
  std::optional<ProcStat> leader = readProcStat(identity.pid);
  return !leader || leader->start_time == identity.start_time;
}

}  // namespace tide::drivers
