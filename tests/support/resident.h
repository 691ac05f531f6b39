#pragma once
// The resident set size of the test process, for tests that check memory goes back (to the
// system or to an allocator's pools). Sizes compared within one run, never times.

#include <unistd.h>

#include <cstddef>
#include <fstream>

namespace tide::testing {

// The resident set size of this process in bytes (/proc/self/statm), 0 where unknown.
inline size_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace tide::testing
