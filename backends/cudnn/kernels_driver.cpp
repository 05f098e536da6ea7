// The kernels of kernels.h for the CUDA 12 backend: the PTX of kernels_ptx.h, loaded into the
// current context with the driver API and launched with cuLaunchKernel.
#include <cuda.h>
#include <dlfcn.h>

#include <array>
#include <cstring>
#include <string>

#include "backends/cudnn/kernels.h"
#include "backends/cudnn/kernels/launch_shape.h"
#include "backends/cudnn/kernels_ptx.h"
#include "graph/ops.h"
#include "infer/errors.h"

namespace infer::cudnn {
namespace {

// The order of Module::functions.
enum Function { kTopK, kFloatToHalf, kHalfToFloat, kPointwise, kResize, kLayerNorm, kSoftmaxTopK };
constexpr std::array<const char*, kKernelCount> kFunctionNames = {"infer::cudnn::kernels::top_k_kernel",
                                                                  "infer::cudnn::kernels::float_nchw_to_half_nhwc",
                                                                  "infer::cudnn::kernels::half_nhwc_to_float_nchw",
                                                                  "infer::cudnn::kernels::pointwise_kernel",
                                                                  "infer::cudnn::kernels::resize_bilinear_kernel",
                                                                  "infer::cudnn::kernels::layernorm_kernel",
                                                                  "infer::cudnn::kernels::softmax_top_k_kernel"};

struct LibraryCloser {
  void operator()(void* handle) const { dlclose(handle); }
};

template <typename F>
F symbol(void* library, const char* name) {
  void* f = dlsym(library, name);
  if (!f) throw GpuError(std::string("libcuda.so.1 (the NVIDIA driver) has no ") + name);
  return reinterpret_cast<F>(f);
}

}  // namespace

struct Kernels::Module {
  std::unique_ptr<void, LibraryCloser> library;
  decltype(&::cuModuleLoadDataEx) load_data = nullptr;
  decltype(&::cuModuleGetFunction) get_function = nullptr;
  decltype(&::cuModuleUnload) unload = nullptr;
  decltype(&::cuLaunchKernel) launch = nullptr;
  decltype(&::cuGetErrorName) error_name = nullptr;
  decltype(&::cuGetErrorString) error_string = nullptr;
  CUmodule module = nullptr;
  std::array<CUfunction, kKernelCount> functions{};

  ~Module() {
    if (module) static_cast<void>(unload(module));
  }

  LaunchStatus status(CUresult r) const {
    LaunchStatus s;
    s.code = static_cast<int>(r);
    if (r == CUDA_SUCCESS) return s;
    if (error_name(r, &s.name) != CUDA_SUCCESS || !s.name) s.name = "CUDA_ERROR_UNKNOWN";
    if (error_string(r, &s.description) != CUDA_SUCCESS || !s.description) s.description = "unknown error";
    return s;
  }

  LaunchStatus run(Function f, unsigned grid, unsigned block, cudaStream_t stream, void** args) const {
    // cudaStream_t and CUstream name the same object (CUstream_st), so the launch joins the
    // runtime's stream and its graph capture.
    return status(launch(functions[f], grid, 1, 1, block, 1, 1, 0, stream, args, nullptr));
  }
};

Kernels::Kernels() : module_(std::make_unique<Module>()) {
  Module& m = *module_;
  m.library.reset(dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL));
  if (!m.library) {
    const char* why = dlerror();
    throw GpuError(std::string("loading the GPU kernels: cannot open libcuda.so.1 (the NVIDIA driver): ") +
                   (why ? why : "dlopen failed"));
  }
  void* lib = m.library.get();
  m.load_data = symbol<decltype(m.load_data)>(lib, "cuModuleLoadDataEx");
  m.get_function = symbol<decltype(m.get_function)>(lib, "cuModuleGetFunction");
  m.unload = symbol<decltype(m.unload)>(lib, "cuModuleUnload");
  m.launch = symbol<decltype(m.launch)>(lib, "cuLaunchKernel");
  m.error_name = symbol<decltype(m.error_name)>(lib, "cuGetErrorName");
  m.error_string = symbol<decltype(m.error_string)>(lib, "cuGetErrorString");

  // The JIT compiler's messages (why a PTX is refused) go into this buffer.
  std::array<char, 4096> log{};
  std::array<CUjit_option, 2> options = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  std::array<void*, 2> values = {log.data(), reinterpret_cast<void*>(static_cast<std::uintptr_t>(log.size()))};
  const CUresult loaded =
      m.load_data(&m.module, kKernelsPtx, static_cast<unsigned>(options.size()), options.data(), values.data());
  if (loaded != CUDA_SUCCESS) {
    m.module = nullptr;
    const LaunchStatus s = m.status(loaded);
    log.back() = '\0';
    throw GpuError(std::string("loading the GPU kernels (PTX ISA 8.0 for compute_50) with cuModuleLoadDataEx: ") +
                   s.name + " (" + s.description + ")" + (log[0] ? std::string(": ") + log.data() : std::string()));
  }
  for (std::size_t i = 0; i < kFunctionNames.size(); ++i) {
    const char* ptx_name = nullptr;
    for (const KernelName& k : kKernelNames) {
      if (k.source && std::strcmp(k.source, kFunctionNames[i]) == 0) ptx_name = k.ptx;
    }
    const CUresult found = ptx_name ? m.get_function(&m.functions[i], m.module, ptx_name) : CUDA_ERROR_NOT_FOUND;
    if (found != CUDA_SUCCESS) {
      const LaunchStatus s = m.status(found);
      throw GpuError(std::string("loading the GPU kernels: cuModuleGetFunction(") + kFunctionNames[i] + "): " + s.name +
                     " (" + s.description + ")");
    }
  }
}

Kernels::~Kernels() = default;

const char* Kernels::route() { return "kernels: NVRTC 12.0 PTX ISA 8.0 compute_50, driver JIT, driver API launches"; }

LaunchStatus Kernels::float_nchw_to_half_nhwc(const float* in, void* out, int n, int c, int h, int w,
                                              cudaStream_t stream) const {
  std::size_t total = static_cast<std::size_t>(n) * c * h * w;
  void* args[] = {&in, &out, &total, &c, &h, &w};
  return module_->run(kFloatToHalf, element_blocks(total), kElementThreads, stream, args);
}

LaunchStatus Kernels::half_nhwc_to_float_nchw(const void* in, float* out, int n, int c, int h, int w,
                                              cudaStream_t stream) const {
  std::size_t total = static_cast<std::size_t>(n) * c * h * w;
  void* args[] = {&in, &out, &total, &c, &h, &w};
  return module_->run(kHalfToFloat, element_blocks(total), kElementThreads, stream, args);
}

LaunchStatus Kernels::pointwise(int op, float a, float b, const void* x, void* y, std::size_t count, bool half,
                                cudaStream_t stream) const {
  if (op < 0 || static_cast<std::size_t>(op) >= kPointwiseCount) return module_->status(CUDA_ERROR_INVALID_VALUE);
  if (count == 0) return LaunchStatus{};
  int half_flag = half ? 1 : 0;
  void* args[] = {&op, &a, &b, &x, &y, &count, &half_flag};
  return module_->run(kPointwise, element_blocks(count), kElementThreads, stream, args);
}

LaunchStatus Kernels::resize_bilinear(const void* x, void* y, int n, int c, int in_h, int in_w, int out_h, int out_w,
                                      bool align_corners, bool half, bool nhwc, cudaStream_t stream) const {
  const std::size_t total = static_cast<std::size_t>(n) * c * out_h * out_w;
  if (total == 0) return LaunchStatus{};
  // resize.cuh's flag bits (that header is device code; these are its values)
  int flags = (align_corners ? 1 : 0) | (half ? 2 : 0) | (nhwc ? 4 : 0);
  void* args[] = {&x, &y, &n, &c, &in_h, &in_w, &out_h, &out_w, &flags};
  return module_->run(kResize, element_blocks(total), kElementThreads, stream, args);
}

LaunchStatus Kernels::layernorm(const void* x, void* y, const float* weight, const float* bias, int n, int c, int plane,
                                float epsilon, bool half, bool nhwc, cudaStream_t stream) const {
  const std::size_t pixels = static_cast<std::size_t>(n) * plane;
  if (pixels == 0 || c == 0) return LaunchStatus{};
  // layernorm.cuh's flag bits (that header is device code; these are its values)
  int flags = (half ? 1 : 0) | (nhwc ? 2 : 0);
  void* args[] = {&x, &y, &weight, &bias, &n, &c, &plane, &epsilon, &flags};
  return module_->run(kLayerNorm, element_blocks(pixels), kElementThreads, stream, args);
}

LaunchStatus Kernels::top_k(const float* scores_in, int n, int classes, int k, int* classes_out, float* scores_out,
                            cudaStream_t stream) const {
  void* args[] = {&scores_in, &classes, &k, &classes_out, &scores_out};
  return module_->run(kTopK, static_cast<unsigned>(n), kTopKThreads, stream, args);
}

LaunchStatus Kernels::softmax_top_k(const void* logits, bool half, int n, int classes, int k, int* classes_out,
                                    float* scores_out, cudaStream_t stream) const {
  int half_flag = half ? 1 : 0;
  void* args[] = {&logits, &half_flag, &classes, &k, &classes_out, &scores_out};
  return module_->run(kSoftmaxTopK, static_cast<unsigned>(n), kTopKThreads, stream, args);
}

}  // namespace infer::cudnn
