#pragma once
// Small blocks of a LuaState's allocator (lua_state.cpp), kept for reuse when Lua frees
// them. A policy decision makes and drops some forty small objects (strings, tables,
// views), and LuaJIT's collector frees them in bursts that overflow malloc's per-thread
// cache, so they went through malloc's slow paths; a free list per size class takes and
// gives a block in a few instructions.
//
// Blocks of up to kMaxBlockBytes come from here, rounded up to a multiple of kGranule;
// larger ones are the caller's to malloc. Freed blocks are kept up to kMaxKeptBytes in
// all, beyond which they go back to malloc, so a script that once held many small objects
// leaves at most that much behind. Kept blocks are nobody's allocation: no memory budget
// counts them.
//
// Thread-safety: none; owned by one LuaState.

#include <array>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>

// Under AddressSanitizer a kept block is poisoned past its free-list link, so Lua touching
// a block it freed is still reported although the block never went back to malloc.
#if defined(__SANITIZE_ADDRESS__)
#define TIDE_BLOCK_POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TIDE_BLOCK_POOL_ASAN 1
#endif
#endif
#ifdef TIDE_BLOCK_POOL_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace tide::lua {

class BlockPool {
 public:
  static constexpr size_t kGranule = 16;
  static constexpr size_t kMaxBlockBytes = 512;
  static constexpr size_t kMaxKeptBytes = size_t{1} << 20;

  BlockPool() = default;
  ~BlockPool() {
    for (FreeBlock* head : free_) {
      while (head) std::free(std::exchange(head, head->next));
    }
  }
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // Whether a block of `bytes` (> 0) comes from the pool.
  static bool holds(size_t bytes) { return bytes <= kMaxBlockBytes; }
  // Whether blocks of `a` and `b` bytes (both held) are of one size class, so a block of
  // either serves the other.
  static bool sameClass(size_t a, size_t b) { return classOf(a) == classOf(b); }

  // A block of at least `bytes` (0 < bytes <= kMaxBlockBytes), or null when out of memory.
  void* take(size_t bytes) {
    const size_t c = classOf(bytes);
    if (FreeBlock* block = free_[c]) {
      unpoison(block, classBytes(c));
      free_[c] = block->next;
      kept_bytes_ -= classBytes(c);
      return block;
    }
    return std::malloc(classBytes(c));
  }
  // Gives back `block`, taken for `bytes`.
  void give(void* block, size_t bytes) {
    const size_t c = classOf(bytes);
    if (kept_bytes_ + classBytes(c) > kMaxKeptBytes) {
      std::free(block);
      return;
    }
    free_[c] = new (block) FreeBlock{free_[c]};
    kept_bytes_ += classBytes(c);
    poison(static_cast<char*>(block) + sizeof(FreeBlock), classBytes(c) - sizeof(FreeBlock));
  }
  // Bytes held in free blocks.
  size_t keptBytes() const { return kept_bytes_; }

 private:
  struct FreeBlock {
    FreeBlock* next;
  };
  static void poison([[maybe_unused]] void* at, [[maybe_unused]] size_t bytes) {
#ifdef TIDE_BLOCK_POOL_ASAN
    ASAN_POISON_MEMORY_REGION(at, bytes);
#endif
  }
  static void unpoison([[maybe_unused]] void* at, [[maybe_unused]] size_t bytes) {
#ifdef TIDE_BLOCK_POOL_ASAN
    ASAN_UNPOISON_MEMORY_REGION(at, bytes);
#endif
  }
  static size_t classOf(size_t bytes) { return (bytes - 1) / kGranule; }
  static size_t classBytes(size_t c) { return (c + 1) * kGranule; }

  std::array<FreeBlock*, kMaxBlockBytes / kGranule> free_{};
  size_t kept_bytes_ = 0;
};

}  // namespace tide::lua
