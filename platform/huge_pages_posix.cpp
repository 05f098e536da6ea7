#include <sys/mman.h>

#include <cstdint>

#include "platform/huge_pages.h"

namespace infer {

void prefer_huge_pages(void* p, std::size_t bytes) {
#if defined(MADV_HUGEPAGE)
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first = (begin + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const std::uintptr_t last = (begin + bytes) / kHugePageBytes * kHugePageBytes;
  // The answer is not checked: EINVAL where the kernel has no transparent huge pages.
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)p, (void)bytes;
#endif
}

}  // namespace infer
