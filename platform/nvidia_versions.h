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

// The cuDNN major a cudnnGetVersion() value stands for, read with the encoding its size implies
// (as cudnn_version_string does: below 90000 it is cuDNN 8's or older, 8200 = 8.2.0); 0 when it is
// no cuDNN version at all (0, negative, or past any major's range).
inline int cudnn_version_major(long long encoded) {
  if (encoded >= 1000 && encoded < 90000) return static_cast<int>(encoded / 1000);
  if (encoded >= 90000 && encoded < 1000000) return static_cast<int>(encoded / 10000);
  return 0;
}

// The inverse: 9.19.0 -> 91900, 8.9.6 -> 8906.
inline long cudnn_version_code(long major, long minor, long patch) {
  return major * (major >= 9 ? 10000 : 1000) + minor * 100 + patch;
}

// The driver release in the file name of one of the NVIDIA driver's libraries, which the driver
// and the cuda-compat packages install as <name>.so.<release> behind the soname link
// (libcuda.so.1 -> libcuda.so.580.65.06): "580.65.06"; "" when the name carries none.
inline std::string driver_release_in_file_name(const std::string& name) {
  const std::size_t so = name.rfind(".so.");
  if (so == std::string::npos) return "";
  const std::string release = name.substr(so + 4);
  // A release is <branch>.<minor>[.<patch>], the branch of three or more digits: not a soname's "1".
  std::size_t digits = 0, dots = 0;
  for (const char c : release) {
    if (c == '.') {
      if (digits == 0) return "";
      ++dots;
      digits = 0;
    } else if (c >= '0' && c <= '9') {
      ++digits;
    } else {
      return "";
    }
  }
  const std::size_t branch = release.find('.');
  return dots >= 1 && dots <= 2 && digits > 0 && branch >= 3 ? release : "";
}

}  // namespace infer
