// gemm.h without a BLAS library: a cache-blocked kernel in plain C++ that the compiler vectorises
// (the Windows build). Each element of C is one sum over k, accumulated in float in order of p
// (Transpose::No) or in eight interleaved partial sums (Transpose::Yes): the float error bound of
// a k-term sum holds either way (tests/backends/cpu/test_gemm.cpp checks it against a double reference).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>

#include "backends/cpu/gemm/gemm.h"

namespace infer::cpu {
namespace {

// C is computed in column blocks of kColumns floats and k in blocks of kDepth: four rows of a C
// block (4 KiB) stay in L1 while a kDepth x kColumns block of B (128 KiB) stays in L2.
constexpr int kColumns = 256;
constexpr int kDepth = 128;
constexpr int kRows = 4;

// C[rows x n] += A[rows x k] * B[k x n] for rows <= kRows, over columns [j0, j1) and depth [p0, p1).
// Four rows share each load of B; the rows of C and B never overlap (__restrict), so the column
// loop vectorises without run-time alias checks.
void block_nn(int rows, int j0, int j1, int p0, int p1, const float* a, int lda, const float* b, int ldb, float* c,
              int ldc) {
  if (rows == kRows) {
    float* __restrict c0 = c;
    float* __restrict c1 = c + ldc;
    float* __restrict c2 = c + 2 * static_cast<std::ptrdiff_t>(ldc);
    float* __restrict c3 = c + 3 * static_cast<std::ptrdiff_t>(ldc);
    for (int p = p0; p < p1; ++p) {
      const float* __restrict bp = b + static_cast<std::ptrdiff_t>(p) * ldb;
      const float a0 = a[p], a1 = a[lda + p], a2 = a[2 * static_cast<std::ptrdiff_t>(lda) + p],
                  a3 = a[3 * static_cast<std::ptrdiff_t>(lda) + p];
      for (int j = j0; j < j1; ++j) {
        const float bj = bp[j];
        c0[j] += a0 * bj;
        c1[j] += a1 * bj;
        c2[j] += a2 * bj;
        c3[j] += a3 * bj;
      }
    }
    return;
  }
  for (int r = 0; r < rows; ++r) {
    float* __restrict cr = c + static_cast<std::ptrdiff_t>(r) * ldc;
    const float* ar = a + static_cast<std::ptrdiff_t>(r) * lda;
    for (int p = p0; p < p1; ++p) {
      const float* __restrict bp = b + static_cast<std::ptrdiff_t>(p) * ldb;
      for (int j = j0; j < j1; ++j) cr[j] += ar[p] * bp[j];
    }
  }
}

// The dot product of two contiguous rows of length k, in eight partial sums (vectorisable without
// reassociating the compiler's own way).
float dot(const float* x, const float* y, int k) {
  float part[8] = {};
  int p = 0;
  for (; p + 8 <= k; p += 8) {
    for (int l = 0; l < 8; ++l) part[l] += x[p + l] * y[p + l];
  }
  for (int l = 0; p < k; ++p, ++l) part[l] += x[p] * y[p];
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

// 0 until set: every core (hardware_concurrency is not constexpr, and a static initialiser elsewhere
// may ask before a dynamic one here would have run).
std::atomic<int> g_threads{0};

}  // namespace

void sgemm(Transpose b_op, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta,
           float* c, int ldc) {
  for (int i = 0; i < m; ++i) {
    float* ci = c + static_cast<std::ptrdiff_t>(i) * ldc;
    if (beta == 0.0f) {
      std::fill(ci, ci + n, 0.0f);
    } else if (beta != 1.0f) {
      for (int j = 0; j < n; ++j) ci[j] *= beta;
    }
  }
  if (b_op == Transpose::Yes) {
    for (int i = 0; i < m; ++i) {
      const float* ai = a + static_cast<std::ptrdiff_t>(i) * lda;
      float* ci = c + static_cast<std::ptrdiff_t>(i) * ldc;
      for (int j = 0; j < n; ++j) ci[j] += dot(ai, b + static_cast<std::ptrdiff_t>(j) * ldb, k);
    }
    return;
  }
  for (int j0 = 0; j0 < n; j0 += kColumns) {
    const int j1 = std::min(n, j0 + kColumns);
    for (int p0 = 0; p0 < k; p0 += kDepth) {
      const int p1 = std::min(k, p0 + kDepth);
      for (int i = 0; i < m; i += kRows) {
        block_nn(std::min(kRows, m - i), j0, j1, p0, p1, a + static_cast<std::ptrdiff_t>(i) * lda, lda, b, ldb,
                 c + static_cast<std::ptrdiff_t>(i) * ldc, ldc);
      }
    }
  }
}

int gemm_threads() {
  const int set = g_threads.load();
  return set > 0 ? set : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}
void set_gemm_threads(int n) { g_threads.store(std::max(1, n)); }
std::string gemm_library() { return "portable sgemm (no BLAS in this build)"; }

}  // namespace infer::cpu
