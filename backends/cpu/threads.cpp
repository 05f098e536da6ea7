#include "backends/cpu/threads.h"

#include "backends/cpu/gemm/gemm.h"

namespace infer::cpu {

void set_threads(int n) {
  set_gemm_threads(n);
  set_openmp_threads(n);
}

}  // namespace infer::cpu
