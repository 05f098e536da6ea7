// The stand-in's libcuda.so.1: the driver API calls the environment probe makes (manifest/probe.cpp)
// and those the CUDA 12 backend loads and launches its kernels with (backends/cudnn/kernels.h), for
// the driver and device of emulated_driver.h (by default CUDA 13.0, compute capability 9.0) with one
// device, hidden (like the real driver) when CUDA_VISIBLE_DEVICES is empty or starts with -1.
// Test infrastructure: never installed.
//
// Modules: cuModuleLoadDataEx reads what a driver checks before it JIT-compiles PTX: `.version` (the
// ISA, refused above the emulated driver's with CUDA_ERROR_UNSUPPORTED_PTX_VERSION, and the JIT log
// saying so) and `.target sm_NN` (refused above the device's compute capability with
// CUDA_ERROR_NO_BINARY_FOR_GPU), and it lists the `.entry` names. The stand-in cannot run PTX:
// cuLaunchKernel hands the function's name and arguments to the stand-in libcudart of the process
// (infer_standin_launch_kernel, kernels.cpp), which runs the host implementation of that kernel's
// contract on its stream.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "tests/standin/call_count.h"
#include "tests/standin/emulated_driver.h"
#include "tests/standin/visible_devices.h"

namespace {

struct Function {
  std::string name;
};

struct Module {
  std::vector<Function> functions;  // never resized after loading: cuModuleGetFunction hands out pointers
};

void write_log(unsigned count, const CUjit_option* options, void** values, const std::string& text) {
  char* buffer = nullptr;
  std::size_t size = 0;
  for (unsigned i = 0; options && values && i < count; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER) buffer = static_cast<char*>(values[i]);
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) size = reinterpret_cast<std::uintptr_t>(values[i]);
  }
  if (buffer && size > 0) std::snprintf(buffer, size, "%s", text.c_str());
}

// The stand-in libcudart's launcher, in whichever of its builds this process loaded.
using Launcher = int (*)(const char* name, const unsigned* grid, const unsigned* block, void** args, size_t shared,
                         void* stream);
Launcher find_launcher() {
  for (const char* soname : {"libcudart.so.12", "libcudart.so.13"}) {
    if (void* h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD)) {
      auto f = reinterpret_cast<Launcher>(dlsym(h, "infer_standin_launch_kernel"));
      dlclose(h);  // drops the reference RTLD_NOLOAD took; the library stays loaded
      if (f) return f;
    }
  }
  return nullptr;
}

}  // namespace

// This library's call counts (call_count.h).
STANDIN_DEFINE_CALL_COUNTS(infer_standin_driver_calls)

extern "C" {

__attribute__((visibility("default"))) const char* infer_standin_identity(void) {
  return "infer CPU stand-in for the NVIDIA driver's libcuda.so.1 (test infrastructure, not NVIDIA's library)";
}

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* version) {
  STANDIN_COUNT_CALL();
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = standin::driver_cuda_version();
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuInit(unsigned int flags) {
  STANDIN_COUNT_CALL();
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return standin::cuda_devices_hidden() ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetCount(int* count) {
  STANDIN_COUNT_CALL();
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = standin::cuda_devices_hidden() ? 0 : 1;
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuGetErrorName(CUresult code, const char** name) {
  STANDIN_COUNT_CALL();
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  switch (code) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; break;
    case CUDA_ERROR_INVALID_HANDLE: *name = "CUDA_ERROR_INVALID_HANDLE"; break;
    case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; break;
    case CUDA_ERROR_INVALID_PTX: *name = "CUDA_ERROR_INVALID_PTX"; break;
    case CUDA_ERROR_NO_BINARY_FOR_GPU: *name = "CUDA_ERROR_NO_BINARY_FOR_GPU"; break;
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION: *name = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"; break;
    case CUDA_ERROR_NOT_INITIALIZED: *name = "CUDA_ERROR_NOT_INITIALIZED"; break;
    default: *name = "CUDA_ERROR_UNKNOWN"; break;
  }
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuGetErrorString(CUresult code, const char** text) {
  STANDIN_COUNT_CALL();
  if (!text) return CUDA_ERROR_INVALID_VALUE;
  switch (code) {
    case CUDA_SUCCESS: *text = "no error"; break;
    case CUDA_ERROR_INVALID_VALUE: *text = "invalid argument"; break;
    case CUDA_ERROR_NO_DEVICE: *text = "no CUDA-capable device is detected"; break;
    case CUDA_ERROR_INVALID_HANDLE: *text = "invalid resource handle"; break;
    case CUDA_ERROR_NOT_FOUND: *text = "named symbol not found"; break;
    case CUDA_ERROR_INVALID_PTX: *text = "a PTX JIT compilation failed"; break;
    case CUDA_ERROR_NO_BINARY_FOR_GPU: *text = "no kernel image is available for execution on the device"; break;
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
      *text = "the provided PTX was compiled with an unsupported toolchain.";
      break;
    case CUDA_ERROR_NOT_INITIALIZED: *text = "initialization error"; break;
    default: *text = "unknown error"; break;
  }
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuModuleLoadDataEx(CUmodule* module, const void* image,
                                                                   unsigned int count, CUjit_option* options,
                                                                   void** values) {
  STANDIN_COUNT_CALL();
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  if (standin::cuda_devices_hidden()) return CUDA_ERROR_NO_DEVICE;
  const std::string ptx(static_cast<const char*>(image));
  std::smatch m;
  if (!std::regex_search(ptx, m, std::regex(R"(\n\.version\s+(\d+)\.(\d+))"))) {
    write_log(count, options, values, "ptxas fatal   : no .version directive (infer CPU stand-in)");
    return CUDA_ERROR_INVALID_PTX;
  }
  const int isa = std::stoi(m[1]) * 10 + std::stoi(m[2]);
  if (isa > standin::driver_max_ptx_isa()) {
    write_log(count, options, values,
              "ptxas application ptx input, line 1; fatal   : Unsupported .version " + m[1].str() + "." + m[2].str() +
                  "; current version is '" + std::to_string(standin::driver_max_ptx_isa() / 10) + "." +
                  std::to_string(standin::driver_max_ptx_isa() % 10) + "' (infer CPU stand-in)");
    return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  }
  if (!std::regex_search(ptx, m, std::regex(R"(\n\.target\s+sm_(\d+))")) || std::stoi(m[1]) > standin::device_cc()) {
    write_log(count, options, values,
              "ptxas fatal   : the .target is above the device's sm_" + std::to_string(standin::device_cc()) +
                  " (infer CPU stand-in)");
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  auto* loaded = new Module;
  const std::regex entry(R"(\.entry\s+([A-Za-z_$][A-Za-z0-9_$]*)\s*\()");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), entry); it != std::sregex_iterator(); ++it) {
    loaded->functions.push_back(Function{(*it)[1].str()});
  }
  *module = reinterpret_cast<CUmodule>(loaded);
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  STANDIN_COUNT_CALL();
  return cuModuleLoadDataEx(module, image, 0, nullptr, nullptr);
}

__attribute__((visibility("default"))) CUresult cuModuleGetFunction(CUfunction* function, CUmodule module,
                                                                    const char* name) {
  STANDIN_COUNT_CALL();
  if (!function || !module || !name) return CUDA_ERROR_INVALID_VALUE;
  for (Function& f : reinterpret_cast<Module*>(module)->functions) {
    if (f.name == name) {
      *function = reinterpret_cast<CUfunction>(&f);
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}

__attribute__((visibility("default"))) CUresult cuModuleUnload(CUmodule module) {
  STANDIN_COUNT_CALL();
  if (!module) return CUDA_ERROR_INVALID_HANDLE;
  delete reinterpret_cast<Module*>(module);
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuLaunchKernel(CUfunction f, unsigned int grid_x, unsigned int grid_y,
                                                               unsigned int grid_z, unsigned int block_x,
                                                               unsigned int block_y, unsigned int block_z,
                                                               unsigned int shared, CUstream stream, void** params,
                                                               void** extra) {
  STANDIN_COUNT_CALL();
  if (!f || extra) return CUDA_ERROR_INVALID_VALUE;  // the stand-in takes arguments as kernelParams only
  static const Launcher launch = find_launcher();
  if (!launch) return CUDA_ERROR_NOT_INITIALIZED;  // no stand-in runtime in the process
  const unsigned grid[3] = {grid_x, grid_y, grid_z}, block[3] = {block_x, block_y, block_z};
  switch (launch(reinterpret_cast<Function*>(f)->name.c_str(), grid, block, params, shared, stream)) {
    case 0: return CUDA_SUCCESS;
    case 400: return CUDA_ERROR_INVALID_HANDLE;  // cudaErrorInvalidResourceHandle: an unknown stream
    default: return CUDA_ERROR_INVALID_VALUE;    // a bad configuration or argument
  }
}

}  // extern "C"
