// Giving freed memory back to the system (host/core/memory.h).

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "host/core/memory.h"
#include "tests/support/resident.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TIDE_OWN_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TIDE_OWN_ALLOCATOR 1
#endif
#endif

TEST_CASE("memory: the resident size is known") { CHECK(tide::testing::residentBytes() > 0); }

#if defined(__GLIBC__) && !defined(TIDE_OWN_ALLOCATOR)
TEST_CASE("memory: freed blocks between live ones go back to the system") {
  // 128 MiB in small blocks, then all but one in 64 freed: glibc keeps the holes (a live
  // block above them pins the heap's top) until releaseFreeMemory. Sizes, not times.
  constexpr size_t kBlock = 512, kBlocks = (128u << 20) / kBlock;
  std::vector<void*> blocks(kBlocks);
  for (auto& block : blocks) {
    block = std::malloc(kBlock);
    std::memset(block, 1, kBlock);
  }
  for (size_t i = 0; i < kBlocks; ++i) {
    if (i % 64 != 63) {
      std::free(blocks[i]);
      blocks[i] = nullptr;
    }
  }
  const size_t held = tide::testing::residentBytes();
  tide::releaseFreeMemory();
  const size_t after = tide::testing::residentBytes();
  CAPTURE(held);
  CAPTURE(after);
  // About 126 MiB were freed; at least half of it must leave the resident set. (Written as a
  // sum: `held - after` would wrap to a huge size_t and pass if the resident set grew.)
  CHECK(after + (63u << 20) < held);
  for (void* block : blocks) std::free(block);
}
#endif
