// The NVIDIA driver and device the stand-in emulates, read from the environment so that one build
// of the stand-in plays every machine of the backend-choice scenarios (tests/backends/
// test_gpu_choice.cpp, docs/gpu.md). Test infrastructure: never installed.
//   INFER_STANDIN_DRIVER_CUDA  the newest CUDA the driver supports, as cuDriverGetVersion encodes it
//                              (1000 * major + 10 * minor: 12040 is 12.4); default 13000
//   INFER_STANDIN_CC           the device's compute capability, 10 * major + minor (75 is 7.5);
//                              default 90
#pragma once

#include <cstdlib>

namespace standin {

namespace detail {
inline int positive_env(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return (*end == '\0' && n > 0 && n < 1000000) ? static_cast<int>(n) : fallback;
}
}  // namespace detail

inline int driver_cuda_version() { return detail::positive_env("INFER_STANDIN_DRIVER_CUDA", 13000); }
inline int device_cc() { return detail::positive_env("INFER_STANDIN_CC", 90); }

// The driver release NVML reports: a real release of the branch that supports that CUDA version
// (the CUDA toolkit release notes' driver table), so that the release and the CUDA version agree.
inline const char* driver_release() {
  const int v = driver_cuda_version();
  if (v >= 13000) return "580.95.05";
  if (v >= 12090) return "575.57.08";
  if (v >= 12080) return "570.124.06";
  if (v >= 12040) return "550.54.15";
  if (v >= 12020) return "535.104.05";
  if (v >= 12000) return "525.60.13";
  return "520.61.05";  // CUDA 11.8
}

// The newest PTX ISA the emulated driver compiles, 10 * major + minor (80 is ISA 8.0): a driver
// reads the PTX of its own CUDA release and older (NVIDIA's PTX ISA release history: 8.0 came
// with CUDA 12.0, 8.1-8.5 with 12.1-12.5, 8.5 stayed for 12.6, 8.6 with 12.7, 8.7 with 12.8,
// 8.8 with 12.9, 9.0 with 13.0).
inline int driver_max_ptx_isa() {
  const int v = driver_cuda_version();
  const int major = v / 1000, minor = v % 1000 / 10;
  if (major >= 13) return 90;
  if (major < 12) return 78;  // CUDA 11.8's ISA 7.8: the newest a CUDA 11 driver reads
  static constexpr int kCuda12[] = {80, 81, 82, 83, 84, 85, 85, 86, 87, 88};
  return kCuda12[minor < 10 ? minor : 9];
}

}  // namespace standin
