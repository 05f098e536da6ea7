// Facts about NVIDIA releases (driver floors, cuDNN <-> CUDA support, compute-capability floors,
// library file names), read from manifest/facts.toml, which is compiled into the binary.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "manifest/constraint.h"

namespace infer::manifest {

struct DriverFloor {
  std::string os;      // "linux" or "windows": their drivers are numbered apart
  Version cuda;        // runtime major.minor this row starts at
  Version min_driver;  // e.g. 580.65.06
  std::string source;
  bool verified = false;
};

struct CudnnFiles {
  int major = 0;
  std::string os;  // "linux" or "windows"
  std::string main;
  std::vector<std::string> sublibraries;
  std::map<std::string, std::string> version_checks;  // sub-library -> libcudnn function
  // sub-library -> its own version, a 32-bit data symbol (major << 16 | minor << 8 | patch)
  std::map<std::string, std::string> version_symbols;
  std::string version_from;  // the sub-library whose cudnnGetVersion the front library forwards to
  std::map<std::string, std::vector<std::string>> needs;  // sub-library -> the sub-libraries it links
};

// A range of cuDNN releases built for one CUDA major, and the lowest compute capability they serve.
struct CudnnBuild {
  int cuda_major = 0;
  Constraint versions;
  Version min_compute_capability;
  std::string source;
};

struct Facts {
  std::vector<DriverFloor> driver_floors;                   // sorted by cuda, newest first (both systems)
  std::map<int, std::pair<Version, std::string>> cc_floor;  // CUDA major -> (min compute capability, source)
  std::map<int, std::vector<int>> cudnn_cuda_majors;        // cuDNN major -> CUDA majors it is built for
  std::vector<CudnnFiles> cudnn_files;
  std::vector<CudnnBuild> cudnn_builds;

  // The row for this cuDNN release built for this CUDA major, if one covers it.
  const CudnnBuild* cudnn_build_for(int cuda_major, const Version& cudnn) const;

  // The minimum driver on `os` for a CUDA runtime version (the newest row at or below it), if known.
  const DriverFloor* driver_floor_for(const Version& cuda_runtime, const std::string& os = "linux") const;
  const CudnnFiles* cudnn_files_for(int major, const std::string& os) const;
};

// The compiled-in facts, parsed once. Throws std::logic_error if facts.toml is malformed (a build bug).
const Facts& facts();

}  // namespace infer::manifest
