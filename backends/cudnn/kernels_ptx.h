// The CUDA 12 backend's kernels as PTX, generated at build time by cmake/ptxgen.py (NVRTC 12.0:
// PTX ISA 8.0 for compute_50) into the build tree's kernels_ptx.cpp. kernels_driver.cpp loads it.
#pragma once

namespace infer::cudnn {

// A kernel's C++ name (as kernels_driver.cpp asks for it) and its name in the PTX.
struct KernelName {
  const char* source;
  const char* ptx;
};

constexpr int kKernelCount = 7;  // the --kernel list of backends/cudnn/CMakeLists.txt

extern const char kKernelsPtx[];
extern const KernelName kKernelNames[kKernelCount];

}  // namespace infer::cudnn
