// Readable forms of the version numbers NVIDIA's libraries report as integers. One definition for
// the GPU backend, its loader and the manifest probe.
#pragma once

#include <string>

namespace infer {

// "13.0" from 13000: the CUDA encoding major*1000 + minor*10 (cudaRuntimeGetVersion,
// cuDriverGetVersion, cudnnGetCudartVersion).
inline std::string cuda_version_string(long long encoded) {
  return std::to_string(encoded / 1000) + "." + std::to_string(encoded % 1000 / 10);
}

// "9.19.0" from 91900: cuDNN 9 encodes major*10000 + minor*100 + patch, cuDNN 8 and older
// major*1000 + minor*100 + patch (cudnnGetVersion, CUDNN_VERSION). long long: cudnnGetVersion()
// returns size_t, which a Windows long (32 bits) would narrow.
inline std::string cudnn_version_string(long long encoded) {
  if (encoded >= 90000) {
    return std::to_string(encoded / 10000) + "." + std::to_string(encoded % 10000 / 100) + "." +
           std::to_string(encoded % 100);
  }
  return std::to_string(encoded / 1000) + "." + std::to_string(encoded % 1000 / 100) + "." +
         std::to_string(encoded % 100);
}

// The inverse: 9.19.0 -> 91900, 8.9.6 -> 8906.
inline long cudnn_version_code(long major, long minor, long patch) {
  return major * (major >= 9 ? 10000 : 1000) + minor * 100 + patch;
}

}  // namespace infer
