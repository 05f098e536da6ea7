#include "install_layout.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <system_error>

#include "errors.h"

namespace infer {
namespace {

namespace fs = std::filesystem;

fs::path executable() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe;
}

}  // namespace

CodeLocation code_location() {
  Dl_info info{};
  link_map* map = nullptr;
  const auto self = reinterpret_cast<void*>(&code_location);
  // The main program's link map has an empty name; a shared library's names the file it was
  // loaded from, as the loader found it: /lib/x86_64-linux-gnu/libinfer.so.0.1 on a merged-/usr
  // system, where /lib links to /usr/lib. The real path, /usr/lib/x86_64-linux-gnu/..., is the one
  // the install layout is relative to (/lib/x86_64-linux-gnu/../../share is /share).
  if (dladdr1(self, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) != 0 && map && map->l_name &&
      map->l_name[0] != '\0') {
    std::error_code ec;
    const fs::path file = fs::canonical(map->l_name, ec);
    return {ec ? fs::absolute(map->l_name, ec) : file, false};
  }
  return {executable(), true};
}

fs::path shipped_file(const fs::path& relative) {
  const CodeLocation code = code_location();
  if (code.file.empty()) {
    throw InputError("/proc/self/exe",
                     "cannot be read, so the files installed with infer cannot be found "
                     "(is /proc mounted?)");
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
  if (!code.file.empty()) out.push_back((code.file.parent_path() / module_dir).lexically_normal());
  const fs::path exe = executable();
  if (exe.empty()) return out;  // no /proc: nothing relative to the working directory
  const fs::path exe_dir = exe.parent_path();
  for (const fs::path& dir : {exe_dir, exe_dir / ".." / "lib", exe_dir / ".." / "lib" / "infer"}) {
    const fs::path normal = dir.lexically_normal();
    if (std::find(out.begin(), out.end(), normal) == out.end()) out.push_back(normal);
  }
  return out;
}

}  // namespace infer
