// Where this machine's dynamic loader takes a library from: the manifest tests hide or compare
// against that folder (tests/manifest/test_manifest_scenarios.cpp, test_manifest_backends.cpp).
#pragma once

#include <dlfcn.h>
#include <link.h>

#include <filesystem>

namespace infer::test {

// The folder of the file dlopen(soname) loads on this machine, or empty when it loads none.
inline std::filesystem::path loader_dir(const char* soname) {
  void* h = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
  if (!h) return {};
  link_map* map = nullptr;
  std::filesystem::path dir;
  if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map) {
    dir = std::filesystem::canonical(std::filesystem::path(map->l_name)).parent_path();
  }
  dlclose(h);
  return dir;
}

}  // namespace infer::test
