// gemm.h through OpenBLAS (the Linux build).
#include <cblas.h>

#include "backends/cpu/gemm/gemm.h"

namespace infer::cpu {

void sgemm(Transpose b_op, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta,
           float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, b_op == Transpose::Yes ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda,
              b, ldb, beta, c, ldc);
}

int gemm_threads() { return openblas_get_num_threads(); }
void set_gemm_threads(int n) { openblas_set_num_threads(n); }
std::string gemm_library() { return openblas_get_config(); }

}  // namespace infer::cpu
