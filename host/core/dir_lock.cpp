#include "host/core/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace tide {
namespace {

// What the lock file says about its holder: "pid 1234", or "an unknown pid".
std::string holderOf(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
  std::string pid = n > 0 ? std::string(text, static_cast<size_t>(n)) : std::string();
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos ? "an unknown pid" : "pid " + pid;
}

}  // namespace

Result<DirLock> DirLock::acquire(const std::string& dir) {
  const std::string path = dir + "/" + kFileName;
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) return Status::internal("cannot open " + path + ": " + std::strerror(errno));
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) {
      return Status::conflict("the data dir " + dir + " is in use by another tide serve (" + holderOf(fd.get()) +
                              "); stop it first, or give this one another --data-dir");
    }
    return Status::internal("cannot lock " + path + ": " + std::strerror(errno));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) != 0 ||
      ::pwrite(fd.get(), pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    return Status::internal("cannot write " + path + ": " + std::strerror(errno));
  }
  return DirLock(std::move(fd));
}

}  // namespace tide
