#include "host/core/memory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tide {

void releaseFreeMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace tide
