#include "platform/huge_pages.h"

namespace infer {

// Windows' large pages need the "Lock pages in memory" privilege and memory from VirtualAlloc:
// nothing here.
void prefer_huge_pages(void*, std::size_t) {}

}  // namespace infer
