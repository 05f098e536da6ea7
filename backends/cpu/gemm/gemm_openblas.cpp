// gemm.h through OpenBLAS (the Linux build), opened (dlopen) the first time the plain kernels need
// it, not linked: loading OpenBLAS starts its threads, one per core, which spin for a while and are
// stopped again at exit. A run on oneDNN's kernels never calls it, and its start and stop took about
// 20 ms of a first image's 100-150 on a 2-core machine (docs/how-it-works.md, "The first image").
// The packages depend on it as before (cmake/Packaging.cmake); its header gives the functions' types.
#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <mutex>
#include <string>

#include "backends/cpu/gemm/gemm.h"
#include "infer/errors.h"

namespace infer::cpu {
namespace {

constexpr const char* kSoname = "libopenblas.so.0";  // Debian's libopenblas0-pthread (and -openmp, -serial)

struct OpenBlas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&openblas_get_num_threads) get_threads = nullptr;
  decltype(&openblas_set_num_threads) set_threads = nullptr;
  decltype(&openblas_get_config) config = nullptr;
  std::string problem;  // why it could not be opened; empty when it was
};

// set_gemm_threads's count, applied when OpenBLAS is opened, and OpenBLAS's setter once it is: both
// under g_mutex, so that a count set while another thread opens it is not lost.
std::mutex g_mutex;
int g_threads = 0;
decltype(&openblas_set_num_threads) g_set_threads = nullptr;

template <typename F>
bool find(void* handle, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(handle, name));
  return f != nullptr;
}

// Opened once, on first use; never closed (its threads run until exit).
const OpenBlas& openblas() {
  static const OpenBlas lib = [] {
    OpenBlas l;
    void* handle = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      l.problem = std::string(kSoname) + " cannot be loaded: " + (why ? why : "unknown reason");
      return l;
    }
    if (!find(handle, "cblas_sgemm", l.sgemm) || !find(handle, "openblas_get_num_threads", l.get_threads) ||
        !find(handle, "openblas_set_num_threads", l.set_threads) || !find(handle, "openblas_get_config", l.config)) {
      l = OpenBlas{};
      l.problem = std::string(kSoname) + " lacks OpenBLAS's functions (another library under its name?)";
      return l;
    }
    const std::lock_guard<std::mutex> lock(g_mutex);
    if (g_threads > 0) l.set_threads(g_threads);
    g_set_threads = l.set_threads;
    return l;
  }();
  return lib;
}

const OpenBlas& usable_openblas() {
  const OpenBlas& lib = openblas();
  if (!lib.problem.empty()) throw Error("the plain CPU kernels need OpenBLAS: " + lib.problem);
  return lib;
}

}  // namespace

void sgemm(Transpose b_op, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta,
           float* c, int ldc) {
  usable_openblas().sgemm(CblasRowMajor, CblasNoTrans, b_op == Transpose::Yes ? CblasTrans : CblasNoTrans, m, n, k,
                          1.0f, a, lda, b, ldb, beta, c, ldc);
}

int gemm_threads() {
  const OpenBlas& lib = openblas();
  if (lib.problem.empty()) return lib.get_threads();
  const std::lock_guard<std::mutex> lock(g_mutex);
  return std::max(g_threads, 1);
}

// Not opened for this: the count waits for the first use.
void set_gemm_threads(int n) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_threads = n;
  if (g_set_threads != nullptr) g_set_threads(n);
}

std::string gemm_library() {
  const OpenBlas& lib = openblas();
  return lib.problem.empty() ? std::string(lib.config()) : "OpenBLAS unusable (" + lib.problem + ")";
}

}  // namespace infer::cpu
