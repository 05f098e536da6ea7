// What a MachineProbe's types compute themselves (probe.h), shared by both systems' probes and by
// the check, which runs on a probe from either.
#include "manifest/probe.h"

namespace infer::manifest {

std::vector<std::string> MachineProbe::standins() const {
  std::vector<std::string> out;
  for (const LibraryProbe* lib : {&libcuda, &libnvml, &cudart, &cudnn}) {
    if (!lib->standin.empty()) out.push_back(lib->path + ": " + lib->standin);
  }
  return out;
}

std::vector<std::string> LibraryProbe::other_copies() const {
  std::vector<std::string> out;
  for (const LibraryCopy& c : copies) {
    if (c.on_loader_path) out.push_back(c.path);
  }
  return out;
}

}  // namespace infer::manifest
