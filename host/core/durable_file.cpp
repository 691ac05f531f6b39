#include "host/core/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

namespace tide {
namespace {

int syncWith(const SyncFn& sync, int fd) { return sync ? sync(fd) : ::fsync(fd); }

}  // namespace

Status syncDir(const std::filesystem::path& dir, const SyncFn& sync) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::internal("cannot open " + dir.string() + " to sync it: " + std::strerror(errno));
  const int synced = syncWith(sync, fd);
  const int error = errno;
  close(fd);
  if (synced != 0) return Status::internal("cannot sync " + dir.string() + ": " + std::strerror(error));
  return Status::ok();
}

Status writeFileDurably(const std::filesystem::path& path, std::string_view text, const SyncFn& sync) {
  static std::atomic<uint64_t> counter{0};
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::internal("cannot write " + tmp.string() + ": " + std::strerror(errno));
  const auto fail = [&](const std::string& what, int error) {
    if (fd >= 0) close(fd);
    unlink(tmp.c_str());
    return Status::internal(what + " " + tmp.string() + ": " + std::strerror(error));
  };
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write", n < 0 ? errno : ENOSPC);
    done += static_cast<size_t>(n);
  }
  // A failed fsync may have dropped the written pages: the file is not trusted, whatever a
  // retry of fsync would say.
  if (syncWith(sync, fd) != 0) return fail("cannot sync", errno);
  const int closed = close(fd);
  fd = -1;
  if (closed != 0) return fail("cannot close", errno);
  if (rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename", errno);
  return syncDir(path.parent_path(), sync);
}

}  // namespace tide
