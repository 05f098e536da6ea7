// Where infer and infer-bench find the files shipped with them (the model, VERSIONS.toml).
#pragma once

#include <filesystem>
#include <system_error>

namespace infer::app {

// A file shipped with infer, by its path relative to the source root ("weights/fashion.toml"):
// <prefix>/share/infer/<relative>, where <prefix> is the folder above the running executable's
// folder (/proc/self/exe). The installed tree (<prefix>/bin, <prefix>/share/infer) and the build
// tree (build/bin, build/share/infer, copied there by the infer_shipped_files target) share this
// layout, so a build or a bundle copied to any path finds its files; no source path is compiled
// in. The file need not exist: the caller reports a missing one, with this path.
inline std::filesystem::path shipped_file(const std::filesystem::path& relative) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return exe.parent_path().parent_path() / "share" / "infer" / relative;
}

}  // namespace infer::app
