// A build without oneDNN (the Windows build; Debian packages no oneDNN for mingw-w64): the plain
// kernels run every CPU network (make_cpu_backend asks onednn_available()), there is no OpenMP
// runtime and no Winograd memory to plan for.
#include <stdexcept>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/threads.h"

namespace infer {

bool onednn_available() { return false; }

std::unique_ptr<Backend> make_onednn_backend(const Network&, int, bool) {
  throw std::logic_error("make_onednn_backend: this build has no oneDNN (ask onednn_available() first)");
}

bool onednn_has_winograd() { return false; }

std::vector<WinogradMemory> onednn_winograd_memory(const Layer&, int) { return {}; }
std::uint64_t onednn_scratchpad_memory(const Layer&, int) { return 0; }

std::string cpu_libraries() {
  return "plain kernels (no oneDNN in this build): " + cpu::gemm_library() + ", " +
         cpu::threads_string(cpu::gemm_threads());
}

namespace cpu {
void set_openmp_threads(int) {}
void apply_openmp_threads() {}
int onednn_threads() { return 1; }
bool openmp_threads_chosen() { return false; }
void use_openmp_threads_here(int) {}
int openmp_processors() { return 1; }
int last_onednn_pass_threads() { return 0; }
}  // namespace cpu

}  // namespace infer
