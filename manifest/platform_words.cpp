#include "manifest/platform_words.h"

namespace infer::manifest {

std::string PlatformWords::prepend(const std::string& folder) const {
  if (platform == Platform::Windows) return "set PATH=" + folder + ";%PATH% (PowerShell: $env:PATH = \"" + folder + ";$env:PATH\")";
  return "export LD_LIBRARY_PATH=" + folder + "${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}";
}

std::string PlatformWords::put_on_path() const {
  return std::string("put its ") + library_folder + " folder on " + path_variable;
}

const PlatformWords& words(Platform p) {
  static const PlatformWords linux_words{
      Platform::Linux,
      "linux",
      "LD_LIBRARY_PATH",
      "dlopen",
      "lib",
      "LD_LIBRARY_PATH, ldconfig -p; Python environments listed apart",
      "dl_iterate_phdr",
      "/etc/os-release",
      "uname",
      "tarball, cudnn9-cuda-13 package or pip nvidia-cudnn-cu13",
      "CUDA toolkit, cuda-cudart package or pip nvidia-cuda-runtime",
      "part of the driver; in a container add utility to NVIDIA_DRIVER_CAPABILITIES",
  };
  // Windows: a DLL's dependents are searched in the process's order (the application's folder,
  // System32, the Windows folder, the current folder, PATH), not in the loading DLL's folder.
  static const PlatformWords windows_words{
      Platform::Windows,
      "windows",
      "PATH",
      "LoadLibraryExW",
      "bin",
      "the DLL search order (application folder, System32, Windows folder, current folder, PATH), CUDA_PATH, "
      "CUDA_PATH_V*; conda and pip folders listed apart",
      "GetModuleFileNameW",
      "RtlGetVersion",
      "GetNativeSystemInfo",
      "NVIDIA's cuDNN installer or zip, or pip nvidia-cudnn-cu13",
      "CUDA toolkit installer or pip nvidia-cuda-runtime",
      "installed by the NVIDIA driver into System32: reinstall the driver",
  };
  return p == Platform::Windows ? windows_words : linux_words;
}

}  // namespace infer::manifest
