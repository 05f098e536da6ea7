#include "install_layout.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <system_error>

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
  // loaded from (through the soname link, which lies in the same folder).
  if (dladdr1(self, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) != 0 && map && map->l_name &&
      map->l_name[0] != '\0') {
    std::error_code ec;
    const fs::path file = fs::absolute(map->l_name, ec);
    return {ec ? fs::path(map->l_name) : file, false};
  }
  return {executable(), true};
}

fs::path shipped_file(const fs::path& relative) {
  const CodeLocation code = code_location();
  const fs::path data = code.is_executable ? INFER_BINDIR_TO_DATADIR : INFER_LIBDIR_TO_DATADIR;
  return (code.file.parent_path() / data / relative).lexically_normal();
}

std::vector<fs::path> gpu_module_folders() {
  const CodeLocation code = code_location();
  const fs::path module_dir = code.is_executable ? INFER_BINDIR_TO_GPU_MODULE_DIR : INFER_LIBDIR_TO_GPU_MODULE_DIR;
  std::vector<fs::path> out{(code.file.parent_path() / module_dir).lexically_normal()};
  const fs::path exe_dir = executable().parent_path();
  for (const fs::path& dir : {exe_dir, exe_dir / ".." / "lib", exe_dir / ".." / "lib" / "infer"}) {
    const fs::path normal = dir.lexically_normal();
    if (std::find(out.begin(), out.end(), normal) == out.end()) out.push_back(normal);
  }
  return out;
}

}  // namespace infer
