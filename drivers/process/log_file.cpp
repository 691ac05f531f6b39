#include "drivers/process/log_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace tide::drivers {

std::optional<LogFile> LogFile::open(const std::string& path, const std::string& runtime_id) {
  LogFile file;
  file.fd_.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat info {};
  if (!file.fd_.valid() || ::fstat(file.fd_.get(), &info) != 0) return std::nullopt;
  file.name_ = runtime_id + "." + std::to_string(info.st_ino);
  file.size_ = static_cast<int64_t>(info.st_size);
  return file;
}

std::string LogFile::read(int64_t offset, size_t max_bytes) const {
  std::string text(std::min(max_bytes, static_cast<size_t>(size_ - offset)), '\0');
  size_t done = 0;
  while (done < text.size()) {
    const auto at = static_cast<off_t>(offset + static_cast<int64_t>(done));
    const ssize_t got = ::pread(fd_.get(), text.data() + done, text.size() - done, at);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += static_cast<size_t>(got);
  }
  text.resize(done);
  return text;
}

std::string LogFile::tail(size_t max_bytes) const {
  return read(size_ - std::min(size_, static_cast<int64_t>(max_bytes)), max_bytes);
}

}  // namespace tide::drivers
