#pragma once
// `tide logs -f`: what is new in a log the host only hands out as its last bytes (an agent
// node's: its replies name no place to go on from, docs/api.md#following-a-log). Each look
// reads the last `window` bytes again; what a look adds is found by lining it up with the
// look before. The log of a process node is followed from where each reply ended instead.

#include <cstddef>
#include <string>
#include <string_view>

namespace tide::cli {

struct LogUpdate {
  std::string added;  // what to print
  // The log does not continue the earlier look: it was replaced (the instance runs as a new
  // runtime instance) or cut, or more than `window` bytes arrived in between. `added` is then
  // all of the new look.
  bool restarted = false;
};

// What `now`, the last `window` bytes of a log, adds to `before`, an earlier look at the same
// log. While the log is shorter than `window` the answer is exact. Once it is longer, `now`
// is lined up with the end of `before` at their longest overlap, so in a log that repeats
// itself for the length of that overlap, new lines equal to the ones before may be missed.
LogUpdate logUpdate(std::string_view before, std::string_view now, size_t window);

}  // namespace tide::cli
