// Names of the status codes of NVIDIA's driver API (CUresult) and NVML (nvmlReturn_t), so that a
// failure is reported by name even when the library that would name it is missing or broken.
#pragma once

#include <string>

namespace infer::manifest {

// "CUDA_ERROR_STUB_LIBRARY (34)"; "CUresult 12345" for a code not in the table.
std::string cuda_result_name(int code);
// "NVML_ERROR_LIB_RM_VERSION_MISMATCH (18)"; "nvmlReturn_t 12345" for a code not in the table.
std::string nvml_return_name(int code);

}  // namespace infer::manifest
