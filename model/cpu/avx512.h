// For the AVX-512 kernel files only (blocked_*.cpp): their functions are compiled for AVX-512F
// whatever the build's target, and called only after blocked_kernels_supported() said yes.
#pragma once

#include <immintrin.h>

#define INFER_AVX512 __attribute__((target("avx512f")))

// GCC 12 warns that _mm512_max_ps's internal _mm512_undefined_ps() "may be used uninitialized":
// a false positive inside its own header (the masked builtin ignores that operand with a full
// mask). Included by the kernel files alone, so the rest of the build keeps the warning.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
