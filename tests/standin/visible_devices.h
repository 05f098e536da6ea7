// CUDA_VISIBLE_DEVICES as the driver reads it, for the stand-in and the fake driver libraries of
// the manifest tests: empty, or starting with -1, hides every device (CUDA C programming guide,
// "CUDA Environment Variables").
#pragma once

#include <cstdlib>
#include <cstring>

namespace standin {

inline bool cuda_devices_hidden() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v && (*v == '\0' || std::strncmp(v, "-1", 2) == 0);
}

}  // namespace standin
