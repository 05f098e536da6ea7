// The OpenMP runtime's thread count (oneDNN's), looked up at run time in the libgomp that libdnnl
// already loaded (threads.h says why).
#include <dlfcn.h>

#include "backends/cpu/threads.h"

namespace infer::cpu {
namespace {

template <typename F>
F omp_function(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

void set_openmp_threads(int n) {
  if (auto set = omp_function<void (*)(int)>("omp_set_num_threads")) set(n);
}

int onednn_threads() {
  auto get = omp_function<int (*)()>("omp_get_max_threads");
  return get ? get() : 1;
}

}  // namespace infer::cpu
