#include "drivers/container/container_log.h"

#include <algorithm>

#include "drivers/process/log_file.h"

namespace tide::drivers {
namespace {

constexpr size_t kMinWindow = size_t{64} << 10;

// The workload's text of one record (the line without its newline): what follows the
// time, the stream and the tag, with a newline when the tag is F.
std::string recordText(std::string_view line) {
  size_t at = 0;
  for (int field = 0; field < 3; ++field) {
    const size_t space = line.find(' ', at);
    if (space == std::string_view::npos) return std::string(line) + "\n";  // not a record
    if (field == 2) {
      const std::string_view tag = line.substr(at, space - at);
      const std::string_view text = line.substr(space + 1);
      return tag == "P" ? std::string(text) : std::string(text) + "\n";
    }
    at = space + 1;
  }
  return std::string(line) + "\n";
}

}  // namespace

DecodedLog decodeK8sRecords(std::string_view records, size_t max_text) {
  DecodedLog decoded;
  while (decoded.consumed < records.size()) {
    const size_t newline = records.find('\n', decoded.consumed);
    if (newline == std::string_view::npos) break;
    std::string text = recordText(records.substr(decoded.consumed, newline - decoded.consumed));
    if (!decoded.text.empty() && decoded.text.size() + text.size() > max_text) break;
    decoded.text += text;
    decoded.consumed = newline + 1;
  }
  return decoded;
}

Result<LogSlice> readK8sLogSlice(const std::string& path, const std::string& runtime_id,
                                 const std::optional<LogCursor>& from, size_t max_bytes) {
  std::optional<LogFile> file = LogFile::open(path, runtime_id);
  if (!file) return Status::notFound("no log for instance " + runtime_id);
  LogSlice slice;
  const bool resumes =
      from && (from->file.empty() || from->file == file->name()) && from->offset >= 0 && from->offset <= file->size();
  if (resumes || from) {
    // From the cursor, or from the start when it names a file rotated away or a place beyond the end.
    int64_t at = resumes ? from->offset : 0;
    slice.continues = resumes;
    size_t window = std::max(kMinWindow, max_bytes + 4096);
    while (at < file->size() && slice.text.size() < max_bytes) {
      const std::string raw = file->read(at, window);
      DecodedLog decoded = decodeK8sRecords(raw, slice.text.empty() ? max_bytes : max_bytes - slice.text.size());
      if (decoded.consumed == 0) {
        // The next record is longer than the window, or not written whole yet.
        if (raw.size() < window || !slice.text.empty()) break;
        window *= 2;
        continue;
      }
      slice.text += decoded.text;
      at += static_cast<int64_t>(decoded.consumed);
      if (decoded.consumed < raw.size() && raw.find('\n', decoded.consumed) != std::string::npos) break;  // full
    }
    slice.end = LogCursor{file->name(), at};
    return slice;
  }
  // The tail: records read backwards in growing windows until they hold max_bytes of text.
  size_t window = std::max(kMinWindow, max_bytes + 4096);
  while (true) {
    const int64_t start = std::max<int64_t>(0, file->size() - static_cast<int64_t>(window));
    const std::string raw = file->read(start, static_cast<size_t>(file->size() - start));
    size_t first = 0;  // a window starting mid-record begins at the next record
    if (start > 0) {
      const size_t newline = raw.find('\n');
      first = newline == std::string::npos ? raw.size() : newline + 1;
    }
    DecodedLog decoded = decodeK8sRecords(std::string_view(raw).substr(first));
    if (decoded.text.size() >= max_bytes || start == 0) {
      slice.text = decoded.text.substr(decoded.text.size() - std::min(decoded.text.size(), max_bytes));
      slice.end = LogCursor{file->name(), start + static_cast<int64_t>(first + decoded.consumed)};
      return slice;
    }
    window *= 2;
  }
}

}  // namespace tide::drivers
