// Kernel registration and launches in the stand-in's CUDA runtime.
//
// nvcc's host code registers each __global__ function of a module with __cudaRegisterFunction
// (host stub address -> mangled device name), and a launch (kernel<<<grid, block, shmem, stream>>>)
// becomes __cudaPushCallConfiguration, then in the stub __cudaPopCallConfiguration, __cudaGetKernel
// and __cudaLaunchKernel(kernel, grid, block, args, shmem, stream), args[i] pointing at argument i
// (crt/host_runtime.h and crt/device_functions.h of CUDA 13). The stand-in runs the project's own
// kernels (backends/cudnn/kernels/*.cuh) by their registered names: their device code, compiled
// for the host, over an emulated grid (emulated_kernels.h, device_emulation.h). The CUDA 12 backend
// loads the same kernels as PTX through the driver API: the stand-in's libcuda.so.1 passes those
// launches here by name (infer_standin_launch_kernel). The match is on the name and the mangled
// parameter list, so a kernel whose signature changes is refused (cudaErrorInvalidDeviceFunction,
// and the process ends naming it) rather than run with arguments read as the wrong types. Each
// launch checks its configuration against the device limits and every pointer against its
// allocation, for the extent the contract implies.
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "tests/standin/call_count.h"
#include "tests/standin/emulated_kernels.h"
#include "tests/standin/state.h"

namespace standin::detail {
namespace {

using Args = void* const*;

template <typename T>
T arg(Args args, int i) {
  T v;
  std::memcpy(&v, args[i], sizeof v);
  return v;
}

// A kernel's launch: checks the arguments and enqueues the work.
using HostKernel = cudaError_t (*)(dim3 grid, dim3 block, Args args, cudaStream_t stream);

// An element-wise kernel's launch shape (kernels.h): a 1-D grid of 256-thread blocks; anything else
// ends the process naming the kernel.
void require_element_launch(const char* kernel, dim3 grid, dim3 block) {
  if (block.x != 256 || block.y != 1 || block.z != 1 || grid.y != 1 || grid.z != 1) {
    standin::fail(kernel, "launched with block (" + std::to_string(block.x) + ", " + std::to_string(block.y) + ", " +
                              std::to_string(block.z) + "), grid (" + std::to_string(grid.x) + ", " +
                              std::to_string(grid.y) + ", " + std::to_string(grid.z) +
                              "); kernels.h: a 1-D grid of 256-thread blocks");
  }
}

// The checks of a launch come from the kernels' contracts (kernels.h, top_k.h): the launch shape,
// the argument values, and every pointer against its allocation for the extent the contract
// implies. The work enqueued is the kernel's own code (emulated_kernels.h).

// out[n][h][w][c] = half(in[n][c][h][w]), total = n*c*h*w. Parameters (const float* in, __half* out,
// size_t total, int c, int h, int w).
cudaError_t float_nchw_to_half_nhwc(dim3 grid, dim3 block, Args args, cudaStream_t stream) {
  const auto* in = arg<const float*>(args, 0);
  auto* out = arg<void*>(args, 1);
  const auto total = arg<std::size_t>(args, 2);
  const int c = arg<int>(args, 3), h = arg<int>(args, 4), w = arg<int>(args, 5);
  if (c < 1 || h < 1 || w < 1) return cudaErrorInvalidValue;
  return static_cast<cudaError_t>(
      enqueue(stream, "float_nchw_to_half_nhwc", {{in, total * 4, "in"}, {out, total * 2, "out"}},
              [=] { emulated::float_nchw_to_half_nhwc(grid, block, in, out, total, c, h, w); }));
}

// out[n][c][h][w] = float(in[n][h][w][c]). Parameters (const __half* in, float* out, size_t total,
// int c, int h, int w).
cudaError_t half_nhwc_to_float_nchw(dim3 grid, dim3 block, Args args, cudaStream_t stream) {
  const auto* in = arg<const void*>(args, 0);
  auto* out = arg<float*>(args, 1);
  const auto total = arg<std::size_t>(args, 2);
  const int c = arg<int>(args, 3), h = arg<int>(args, 4), w = arg<int>(args, 5);
  if (c < 1 || h < 1 || w < 1) return cudaErrorInvalidValue;
  return static_cast<cudaError_t>(
      enqueue(stream, "half_nhwc_to_float_nchw", {{in, total * 2, "in"}, {out, total * 4, "out"}},
              [=] { emulated::half_nhwc_to_float_nchw(grid, block, in, out, total, c, h, w); }));
}

// top_k.h: one block of 256 threads per sample (grid.x = n).
void require_top_k_launch(const char* kernel, dim3 grid, dim3 block) {
  if (block.x != 256 || block.y != 1 || block.z != 1 || grid.y != 1 || grid.z != 1) {
    standin::fail(kernel, "launched with block (" + std::to_string(block.x) + ", " + std::to_string(block.y) + ", " +
                              std::to_string(block.z) + "); top_k.h: one block of 256 threads per sample");
  }
}

// For each sample the k best of `classes` scores. Parameters (const float* scores_in, int classes,
// int k, int* classes_out, float* scores_out).
cudaError_t top_k_kernel(dim3 grid, dim3 block, Args args, cudaStream_t stream) {
  const auto* in = arg<const float*>(args, 0);
  const int classes = arg<int>(args, 1), k = arg<int>(args, 2);
  auto* classes_out = arg<int*>(args, 3);
  auto* scores_out = arg<float*>(args, 4);
  require_top_k_launch("top_k_kernel", grid, block);
  if (classes < 1 || k < 1 || k > classes) return cudaErrorInvalidValue;
  const std::size_t n = grid.x;
  return static_cast<cudaError_t>(
      enqueue(stream, "top_k_kernel",
              {{in, n * classes * 4, "scores_in"},
               {classes_out, n * k * 4, "classes_out"},
               {scores_out, n * k * 4, "scores_out"}},
              [=] { emulated::top_k_kernel(grid, block, in, classes, k, classes_out, scores_out); }));
}

// kernels.h (softmax_top_k): for each sample the softmax of its `classes` logits (floats, or half
// values when `half` is 1) and the k best probabilities. Parameters (const void* logits, int half,
// int classes, int k, int* classes_out, float* scores_out).
cudaError_t softmax_top_k_kernel(dim3 grid, dim3 block, Args args, cudaStream_t stream) {
  const auto* logits = arg<const void*>(args, 0);
  const int half = arg<int>(args, 1), classes = arg<int>(args, 2), k = arg<int>(args, 3);
  auto* classes_out = arg<int*>(args, 4);
  auto* scores_out = arg<float*>(args, 5);
  require_top_k_launch("softmax_top_k_kernel", grid, block);
  if ((half != 0 && half != 1) || classes < 1 || k < 1 || k > classes) return cudaErrorInvalidValue;
  const std::size_t n = grid.x;
  return static_cast<cudaError_t>(
      enqueue(stream, "softmax_top_k_kernel",
              {{logits, n * classes * (half ? 2 : 4), "logits"},
               {classes_out, n * k * 4, "classes_out"},
               {scores_out, n * k * 4, "scores_out"}},
              [=] { emulated::softmax_top_k_kernel(grid, block, logits, half, classes, k, classes_out, scores_out); }));
}

// kernels.h (pointwise): y[i] = f(x[i]) for i < count (x == y allowed), count floats (half == 0) or
// count IEEE binary16 values (half == 1). A 1-D grid of 256-thread blocks, grid-stride loop.
// Parameters (int op, float a, float b, const void* x, void* y, size_t count, int half); another
// op (graph/ops.h), or a half flag other than 0 and 1: cudaErrorInvalidValue.
cudaError_t pointwise_kernel(dim3 grid, dim3 block, Args args, cudaStream_t stream) {
  const int op = arg<int>(args, 0);
  const float a = arg<float>(args, 1), b = arg<float>(args, 2);
  const auto* x = arg<const void*>(args, 3);
  auto* y = arg<void*>(args, 4);
  const auto count = arg<std::size_t>(args, 5);
  const int half = arg<int>(args, 6);
  require_element_launch("pointwise_kernel", grid, block);
  if (op < 0 || static_cast<std::size_t>(op) >= infer::kPointwiseCount || (half != 0 && half != 1)) {
    return cudaErrorInvalidValue;
  }
  const std::size_t bytes = count * (half ? 2 : 4);
  return static_cast<cudaError_t>(enqueue(stream, "pointwise_kernel", {{x, bytes, "x"}, {y, bytes, "y"}}, [=] {
    emulated::pointwise_kernel(grid, block, op, a, b, x, y, count, half);
  }));
}

// kernels.h (resize_bilinear): n x c planes of in_h x in_w resized to out_h x out_w; flags: 1
// align_corners, 2 half values (else floats), 4 NHWC (else NCHW). A 1-D grid of 256-thread blocks,
// grid-stride loop. Parameters (const void* x, void* y, int n, int c, int in_h, int in_w, int out_h,
// int out_w, int flags); a size below 1 or another flag bit: cudaErrorInvalidValue.
cudaError_t resize_bilinear_kernel(dim3 grid, dim3 block, Args args, cudaStream_t stream) {
  const auto* x = arg<const void*>(args, 0);
  auto* y = arg<void*>(args, 1);
  const int n = arg<int>(args, 2), c = arg<int>(args, 3), in_h = arg<int>(args, 4), in_w = arg<int>(args, 5);
  const int out_h = arg<int>(args, 6), out_w = arg<int>(args, 7), flags = arg<int>(args, 8);
  require_element_launch("resize_bilinear_kernel", grid, block);
  if (n < 1 || c < 1 || in_h < 1 || in_w < 1 || out_h < 1 || out_w < 1 || (flags & ~7) != 0) {
    return cudaErrorInvalidValue;
  }
  const std::size_t element = (flags & 2) ? 2 : 4, planes = static_cast<std::size_t>(n) * c;
  const std::size_t in_bytes = planes * in_h * in_w * element, out_bytes = planes * out_h * out_w * element;
  return static_cast<cudaError_t>(
      enqueue(stream, "resize_bilinear_kernel", {{x, in_bytes, "x"}, {y, out_bytes, "y"}},
              [=] { emulated::resize_bilinear_kernel(grid, block, x, y, n, c, in_h, in_w, out_h, out_w, flags); }));
}

// kernels.h (layernorm): n samples of c channels of `plane` pixels normalised over the channels;
// weight and bias c floats each; flags: 1 half values (else floats), 2 NHWC (else NCHW). A 1-D grid
// of 256-thread blocks, grid-stride loop. Parameters (const void* x, void* y, const float* weight,
// const float* bias, int n, int c, int plane, float eps, int flags); a size below 1, an epsilon
// that is not positive and finite, or another flag bit: cudaErrorInvalidValue.
cudaError_t layernorm_kernel(dim3 grid, dim3 block, Args args, cudaStream_t stream) {
  const auto* x = arg<const void*>(args, 0);
  auto* y = arg<void*>(args, 1);
  const auto* weight = arg<const float*>(args, 2);
  const auto* bias = arg<const float*>(args, 3);
  const int n = arg<int>(args, 4), c = arg<int>(args, 5), plane = arg<int>(args, 6);
  const float eps = arg<float>(args, 7);
  const int flags = arg<int>(args, 8);
  require_element_launch("layernorm_kernel", grid, block);
  if (n < 1 || c < 1 || plane < 1 || !(eps > 0.0f && eps <= 3.4e38f) || (flags & ~3) != 0) {
    return cudaErrorInvalidValue;
  }
  const std::size_t bytes = static_cast<std::size_t>(n) * c * plane * ((flags & 1) ? 2 : 4);
  const std::size_t params = static_cast<std::size_t>(c) * sizeof(float);
  return static_cast<cudaError_t>(
      enqueue(stream, "layernorm_kernel",
              {{x, bytes, "x"}, {y, bytes, "y"}, {weight, params, "weight"}, {bias, params, "bias"}},
              [=] { emulated::layernorm_kernel(grid, block, x, y, weight, bias, n, c, plane, eps, flags); }));
}

struct Known {
  const char* suffix;  // the end of the mangled device name: name length, name, parameter list
  HostKernel run;
};
constexpr Known kKnown[] = {
    {"23float_nchw_to_half_nhwcEPKfP6__halfmiii", float_nchw_to_half_nhwc},
    {"23half_nhwc_to_float_nchwEPK6__halfPfmiii", half_nhwc_to_float_nchw},
    {"12top_k_kernelEPKfiiPiPf", top_k_kernel},
    {"20softmax_top_k_kernelEPKviiiPiPf", softmax_top_k_kernel},
    {"16pointwise_kernelEiffPKvPvmi", pointwise_kernel},
    {"22resize_bilinear_kernelEPKvPviiiiiii", resize_bilinear_kernel},
    // the second const float* is the substitution S6_ (S_ to S5_: infer, infer::cudnn,
    // infer::cudnn::kernels, const void, const void*, void*, const float)
    {"16layernorm_kernelEPKvPvPKfS6_iiifi", layernorm_kernel},
};

struct Kernel {
  std::string name;
  HostKernel run = nullptr;  // nullptr: a kernel the stand-in does not run
};

std::map<const void*, Kernel>& kernels() {
  static auto* m = new std::map<const void*, Kernel>;
  return *m;
}

struct Configuration {
  dim3 grid, block;
  std::size_t shared = 0;
  cudaStream_t stream = nullptr;
};
thread_local std::vector<Configuration> configurations;

bool ends_with(const std::string& s, const char* suffix) {
  const std::size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// The kernel of this device name: its launch, or none (nullptr) for a kernel the stand-in does not know.
Kernel known_kernel(const std::string& device_name) {
  Kernel k{device_name, nullptr};
  for (const Known& known : kKnown) {
    if (ends_with(k.name, known.suffix)) k.run = known.run;
  }
  return k;
}

// Checks the configuration against the device limits and the stream, then the kernel's launch.
// The caller holds big_lock().
cudaError_t launch(const Kernel& kernel, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream) {
  if (!kernel.run) {
    standin::fail("cudaLaunchKernel",
                  "kernel " + kernel.name + " is not one the stand-in runs (tests/standin/kernels.cpp)");
  }
  const unsigned long long threads = static_cast<unsigned long long>(block.x) * block.y * block.z;
  if (threads == 0 || threads > 1024 || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
      grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535 || shared > (48u << 10)) {
    return cudaErrorInvalidConfiguration;
  }
  if (!find_stream(stream)) return cudaErrorInvalidResourceHandle;
  return kernel.run(grid, block, args, stream);
}

}  // namespace
}  // namespace standin::detail

using namespace standin::detail;

extern "C" {

void** __cudaRegisterFatBinary(void* fat_cubin) {
  return new void*(fat_cubin);  // an opaque handle; the module keeps it until __cudaUnregisterFatBinary
}

void __cudaRegisterFatBinaryEnd(void**) {}

void __cudaUnregisterFatBinary(void** handle) {
  const Guard guard(big_lock());
  drain_all();  // a module unloads after its last kernel ran
  delete handle;
}

void __cudaRegisterFunction(void**, const char* host_fun, char*, const char* device_name, int, uint3*, uint3*, dim3*,
                            dim3*, int*) {
  const Guard guard(big_lock());
  kernels()[host_fun] = known_kernel(device_name);
}

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, struct CUstream_st* stream) {
  configurations.push_back(Configuration{grid, block, shared, stream});
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared, void* stream) {
  if (configurations.empty()) return record(cudaErrorInvalidConfiguration);
  const Configuration c = configurations.back();
  configurations.pop_back();
  *grid = c.grid;
  *block = c.block;
  *shared = c.shared;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

#if STANDIN_CUDART_VERSION >= 13000  // how CUDA 13's nvcc launches (CUDA 12's headers have no cudaKernel_t)
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* host_fun) {
  const Guard guard(big_lock());
  auto it = kernels().find(host_fun);
  if (!kernel || it == kernels().end()) return record(cudaErrorInvalidDeviceFunction);
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(host_fun));
  return cudaSuccess;
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared,
                               cudaStream_t stream) {
  const Guard guard(big_lock());
  auto it = kernels().find(reinterpret_cast<const void*>(kernel));
  if (it == kernels().end()) return record(cudaErrorInvalidDeviceFunction);
  return record(launch(it->second, grid, block, args, shared, stream));
}
#endif

// The stand-in driver's cuLaunchKernel (driver.cpp) for a function of a module loaded from PTX: the
// same kernels by the same names (the PTX's mangled names end like the registered ones), the same checks.
__attribute__((visibility("default"))) int infer_standin_launch_kernel(const char* name, const unsigned* grid,
                                                                       const unsigned* block, void** args,
                                                                       size_t shared, void* stream) {
  const Guard guard(big_lock());
  return record(launch(known_kernel(name), dim3(grid[0], grid[1], grid[2]), dim3(block[0], block[1], block[2]), args,
                       shared, static_cast<cudaStream_t>(stream)));
}

cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  auto it = kernels().find(func);
  if (it == kernels().end()) return record(cudaErrorInvalidDeviceFunction);
  return record(launch(it->second, grid, block, args, shared, stream));
}

}  // extern "C"
