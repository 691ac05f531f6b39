#pragma once
// A container's log as conmon writes it for `--log-driver k8s-file`: one record a line,
//   <RFC 3339 time> <stdout|stderr> <F|P> <text>
// where F ends a line of the workload's output and P is a part of one (a long line cut by
// conmon's buffer, or output without its newline yet). Read back as the workload's own
// text, stdout and stderr merged in the order written, with LogCursor places that always
// stand at a record's start, so `tide logs -f` reads on from where its last read ended.
// conmon rotates a log at its max-size by starting a new file (a new inode, so a new cursor
// name) and dropping the old one: a cursor into the old file reads again from the new one's
// start, with `continues` false.
//
// Pure but for reading the file; thread-safe.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "drivers/driver.h"

namespace tide::drivers {

struct DecodedLog {
  std::string text;     // the workload's output
  size_t consumed = 0;  // bytes of `records` decoded: whole records only
};

// The text of the whole records at the start of `records`, stopping before the record that
// would take the text beyond `max_text` unless the text is still empty (a record longer than
// `max_text` alone is taken whole). A last record without its newline is left for a later
// read. A line that is not a record is passed through as it is.
DecodedLog decodeK8sRecords(std::string_view records, size_t max_text = std::string::npos);

// Driver::readLogSlice over the k8s-file at `path`: without `from`, the last `max_bytes` of
// text; with it, the text of the records from there on, at most `max_bytes` (more only when
// one record alone is longer). kNotFound when there is no such file.
Result<LogSlice> readK8sLogSlice(const std::string& path, const std::string& runtime_id,
                                 const std::optional<LogCursor>& from, size_t max_bytes);

}  // namespace tide::drivers
