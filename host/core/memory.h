#pragma once
// Giving memory the host freed back to the system. glibc keeps freed blocks for reuse and
// returns only what sits at the top of a heap, so one large transient (a pass's rollout
// snapshot of 100,000 instances, the world loaded at start) leaves the resident size at its
// high-water mark for the life of the process (docs/performance.md#fleet-scale-where-tide-stands).

namespace tide {

// Returns the free pages of every malloc arena to the system (glibc's malloc_trim). Costs a
// walk over the free blocks: call it after large transients or every few seconds, not per
// request. Does nothing where the allocator cannot (other C libraries, sanitizer builds).
void releaseFreeMemory();

}  // namespace tide
