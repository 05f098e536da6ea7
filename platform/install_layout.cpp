#include "platform/install_layout.h"

#include <algorithm>
#include <system_error>

#include "infer/errors.h"

namespace infer {
namespace fs = std::filesystem;

namespace {

// A folder normalised without a trailing separator ("bin/." normalises to "bin/"), so that the
// same folder reached two ways compares equal.
fs::path normal_folder(const fs::path& dir) {
  const fs::path n = dir.lexically_normal();
  return n.has_filename() || !n.has_parent_path() ? n : n.parent_path();
}

}  // namespace

fs::path shipped_file(const fs::path& relative) {
  const CodeLocation code = code_location();
  if (code.file.empty()) {
    throw InputError(kExecutablePathSource, "cannot be read, so the files installed with infer cannot be found");
  }
  const fs::path data = code.is_executable ? INFER_BINDIR_TO_DATADIR : INFER_LIBDIR_TO_DATADIR;
  return (code.file.parent_path() / data / relative).lexically_normal();
}

fs::path default_model_path() { return shipped_file("weights/fashion.toml"); }
fs::path default_manifest_path() { return shipped_file("VERSIONS.toml"); }

std::vector<fs::path> gpu_module_folders() {
  const CodeLocation code = code_location();
  const fs::path module_dir = code.is_executable ? INFER_BINDIR_TO_GPU_MODULE_DIR : INFER_LIBDIR_TO_GPU_MODULE_DIR;
  std::vector<fs::path> out;
  if (!code.file.empty()) out.push_back(normal_folder(code.file.parent_path() / module_dir));
  const fs::path exe = executable_path();
  if (exe.empty()) return out;  // never relative to the working directory
  const fs::path exe_dir = exe.parent_path();
#ifdef _WIN32
  const std::vector<fs::path> beside = {exe_dir};
#else
  const std::vector<fs::path> beside = {exe_dir, exe_dir / ".." / "lib", exe_dir / ".." / "lib" / "infer"};
#endif
  for (const fs::path& dir : beside) {
    const fs::path normal = normal_folder(dir);
    if (std::find(out.begin(), out.end(), normal) == out.end()) out.push_back(normal);
  }
  return out;
}

}  // namespace infer
