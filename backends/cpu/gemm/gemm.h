// The matrix product under the plain kernels' convolutions and linear layers. Row-major:
//   C[m x n] = A[m x k] * op(B) + beta * C
//   op(B) = B, stored [k x n] (Transpose::No), or B^T with B stored [n x k] (Transpose::Yes).
// lda, ldb, ldc are row strides in elements (lda >= k, ldb >= the row length of B, ldc >= n); C
// overlaps neither A nor B (as in BLAS; the portable kernel relies on it). beta == 0 means C is only
// written, never read (it may hold anything, NaN included).
//
// One implementation per build: OpenBLAS's cblas_sgemm (gemm_openblas.cpp, the Linux build) or the
// project's own blocked kernel (gemm_portable.cpp: the Windows build, for which no BLAS is packaged;
// built and tested on Linux too, against a double-precision reference).
#pragma once

#include <string>

namespace infer::cpu {

enum class Transpose { No, Yes };

void sgemm(Transpose b_op, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta,
           float* c, int ldc);

// The threads of the plain kernels: OpenBLAS's own thread count (OPENBLAS_NUM_THREADS, else every
// core), or, with the portable kernel, which runs each call on the calling thread, the number of
// worker threads the plain backend spreads chunks over (every core unless set). set_gemm_threads
// takes n >= 1.
int gemm_threads();
void set_gemm_threads(int n);

// The implementation, for --version and the backend's description: "OpenBLAS 0.3.21 ...",
// "portable sgemm (no BLAS in this build)".
std::string gemm_library();

}  // namespace infer::cpu
