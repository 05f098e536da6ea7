// The words a report uses for one operating system's loader: where it searches (LD_LIBRARY_PATH
// or PATH), what loads a library (dlopen or LoadLibraryExW), the shell line that puts a folder
// first. The check and its diagnoses are written once over a MachineProbe; the probe says which
// system it describes, so Linux tests can read the Windows wording of a synthetic probe.
#pragma once

#include <string>

namespace infer::manifest {

enum class Platform { Linux, Windows };

// The system this build probes.
#ifdef _WIN32
inline constexpr Platform kThisPlatform = Platform::Windows;
#else
inline constexpr Platform kThisPlatform = Platform::Linux;
#endif

struct PlatformWords {
  Platform platform;
  const char* name;             // "linux", "windows": facts.toml's os
  const char* path_variable;    // the variable the loader searches: "LD_LIBRARY_PATH", "PATH"
  const char* load_call;        // "dlopen", "LoadLibraryExW"
  const char* library_folder;   // where a package keeps its libraries: "lib", "bin"
  const char* search_sources;   // what the probe searched for copies
  const char* loaded_from;      // how the loaded file of a library is read
  const char* os_source;        // where system.os comes from
  const char* arch_source;      // where system.arch comes from
  const char* cudnn_packages;   // the ways to install cuDNN
  const char* cudart_packages;  // the ways to install the CUDA runtime
  const char* driver_libraries;  // how the driver's libraries are installed

  // The shell line that puts `folder` first on the search path.
  std::string prepend(const std::string& folder) const;
  // "put its lib folder on LD_LIBRARY_PATH", "put its bin folder on PATH".
  std::string put_on_path() const;
};

const PlatformWords& words(Platform p);

}  // namespace infer::manifest
