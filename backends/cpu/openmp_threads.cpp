// The OpenMP runtime's thread count (oneDNN's), looked up at run time in the libgomp that libdnnl
// already loaded (threads.h says why).
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>

#include "backends/cpu/threads.h"

namespace infer::cpu {
namespace {

template <typename F>
F omp_function(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

// The count set for the process. OpenMP keeps one per thread (its nthreads-var is a per-task ICV):
// a thread that never set it gets OpenMP's default, so each forward pass applies this one to the
// thread that runs it (apply_openmp_threads).
static std::atomic<int> g_threads{0};

void set_openmp_threads(int n) {
  g_threads.store(n);
  if (auto set = omp_function<void (*)(int)>("omp_set_num_threads")) set(n);
}

void apply_openmp_threads() {
  const int n = g_threads.load(std::memory_order_relaxed);
  if (n > 0) use_openmp_threads_here(n);
}

bool openmp_threads_chosen() {
  static const bool from_environment = [] {
    const char* v = std::getenv("OMP_NUM_THREADS");
    return v != nullptr && *v != '\0';
  }();
  return g_threads.load(std::memory_order_relaxed) > 0 || from_environment;
}

void use_openmp_threads_here(int n) {
  static const auto get = omp_function<int (*)()>("omp_get_max_threads");
  static const auto set = omp_function<void (*)(int)>("omp_set_num_threads");
  if (get && set && get() != n) set(n);
}

int openmp_processors() {
  static const auto procs = omp_function<int (*)()>("omp_get_num_procs");
  return procs ? procs() : 1;
}

int onednn_threads() {
  auto get = omp_function<int (*)()>("omp_get_max_threads");
  return get ? get() : 1;
}

}  // namespace infer::cpu
