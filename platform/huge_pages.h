// Large buffers (a model's weights, a network's activations) offered to the kernel's transparent
// huge pages, so that it maps many MiB in a few faults instead of one per 4 KiB page. Measured on a
// 2-core VM: a first image through ResNet-18 took about 38,000 page faults, a large part of its
// start-up (docs/how-it-works.md, "The first image").
#pragma once

#include <cstddef>
#include <vector>

namespace infer {

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;  // x86-64's and ARM64's (4 KiB base pages)
// Buffers from this size are offered: a few huge pages' worth, so that the rounding wastes little.
inline constexpr std::size_t kLargeBufferBytes = 4 * kHugePageBytes;

// Offers [p, p + bytes) to huge pages where the system has them (Linux: madvise MADV_HUGEPAGE on
// the whole 2 MiB pages inside it; elsewhere nothing). Call before the memory is first written. A
// hint: a system without them (or with them turned off) maps the usual pages.
void prefer_huge_pages(void* p, std::size_t bytes);

// An empty `v` given room for n values, offered to huge pages when that is large.
template <typename T>
void reserve_large(std::vector<T>& v, std::size_t n) {
  v.reserve(n);
  if (n * sizeof(T) >= kLargeBufferBytes) prefer_huge_pages(v.data(), n * sizeof(T));
}

}  // namespace infer
