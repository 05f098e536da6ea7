// The parts of probe_machine() on Windows (probe_windows.cpp) that run in the probe's children:
// the jobs that load NVIDIA's DLLs and call them (probe_windows_jobs.cpp). Internal to manifest/.
#pragma once

#include <windows.h>

#include <filesystem>
#include <string>

#include "platform/isolated.h"
#include "platform/windows_message.h"

namespace infer::manifest::detail {

inline std::string utf8(const std::filesystem::path& p) { return utf8_from_utf16(p.native()); }
inline std::filesystem::path wide(const std::string& s) { return std::filesystem::u8path(s); }

// The path of a loaded module, UTF-8.
std::string module_path(HMODULE h);

template <typename F>
F symbol(HMODULE h, const char* name) {
  return reinterpret_cast<F>(reinterpret_cast<void*>(GetProcAddress(h, name)));
}

}  // namespace infer::manifest::detail
