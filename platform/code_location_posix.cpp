// Where the running code is on Linux: the dynamic loader's link map, /proc/self/exe.
#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <system_error>

#include "platform/install_layout.h"

namespace infer {

namespace fs = std::filesystem;

const char* const kExecutablePathSource = "/proc/self/exe (is /proc mounted?)";

fs::path path_from_environment(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? fs::path(value) : fs::path();
}

fs::path executable_path() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe;
}

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
  return {executable_path(), true};
}

}  // namespace infer
