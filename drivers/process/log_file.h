#pragma once
// One log file of a runtime instance, open, named as LogCursor names files ("<runtime id>.<inode>"),
// with its size when it was opened: reads stop there, so a place found in it stays true while
// the workload writes on. The process driver's logs and the container driver's k8s-file logs
// are read through it.
//
// Thread-safety: none; one owner (reads are preads, so a const LogFile may be shared).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "host/core/fd.h"

namespace tide::drivers {

class LogFile {
 public:
  // nullopt when the file cannot be opened (there is no such log).
  static std::optional<LogFile> open(const std::string& path, const std::string& runtime_id);

  const std::string& name() const { return name_; }
  int64_t size() const { return size_; }

  // At most `max_bytes` from `offset` on (0 <= offset <= size()); shorter when a read fails.
  std::string read(int64_t offset, size_t max_bytes) const;
  // The last `max_bytes`.
  std::string tail(size_t max_bytes) const;

 private:
  LogFile() = default;
  Fd fd_;
  std::string name_;
  int64_t size_ = 0;
};

}  // namespace tide::drivers
