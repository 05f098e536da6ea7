// Where the files installed with infer are: found relative to the binary that holds this code (the
// infer executable, or libinfer.so for a program using the API), never through a path of the build
// machine. The relative paths come from GNUInstallDirs at configure time (CMakeLists.txt,
// INFER_*_TO_*), so every standard layout works: <prefix>/bin + <prefix>/share/infer, and
// <prefix>/lib or <prefix>/lib/x86_64-linux-gnu with the GPU module in its infer/ folder. The build
// tree mirrors the install layout (build/bin, build/share/infer, build/<libdir>).
#pragma once

#include <filesystem>
#include <vector>

namespace infer {

// The binary holding this code: the executable or the shared library's file (code_location_posix.cpp:
// the loader's link map and /proc/self/exe; code_location_windows.cpp: GetModuleHandleExW and
// GetModuleFileNameW).
struct CodeLocation {
  std::filesystem::path file;
  bool is_executable = true;
};
CodeLocation code_location();
// An environment variable's value as a path; empty when unset or empty. On Windows read as UTF-16
// (GetEnvironmentVariableW), never through the ANSI code page.
std::filesystem::path path_from_environment(const char* name);

// The running executable's path; empty when it cannot be read. kExecutablePathSource names where
// it comes from, for the message when it cannot.
std::filesystem::path executable_path();
extern const char* const kExecutablePathSource;

// A file shipped with infer, by its path relative to the source root ("weights/fashion.toml",
// "VERSIONS.toml"): <data dir>/<relative>, data dir = share/infer beside the binary's install
// folder. The file need not exist: the caller reports a missing one, naming this path. Throws
// InputError when the running executable's path cannot be read (Linux: /proc not mounted): there
// is no fallback to a folder relative to the working directory. On Windows the data folder is the
// executable's own (CMakeLists.txt: a flat install, bin\infer.exe beside VERSIONS.toml, weights\).
std::filesystem::path shipped_file(const std::filesystem::path& relative);
// The model and the manifest used when none is named: shipped_file("weights/fashion.toml") and
// shipped_file("VERSIONS.toml").
std::filesystem::path default_model_path();
std::filesystem::path default_manifest_path();

// Folders where the GPU module (libinfer_cudnn.so) may be, first to last: the install layout's
// <libdir>/infer relative to the binary holding this code; then, relative to the running
// executable, its own folder (the build tree, a bundle), ../lib and ../lib/infer. On Windows
// the executable's folder alone (infer_cudnn.dll beside infer.exe): nothing outside the install.
std::vector<std::filesystem::path> gpu_module_folders();

}  // namespace infer
