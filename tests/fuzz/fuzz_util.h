// Helpers shared by the fuzz targets.
#pragma once

#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace infer::fuzz {

// A private folder for the target's files, created once per process and never removed (libFuzzer
// ends the process with _exit); it lives in $TMPDIR and is a few KB.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "infer-fuzz-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

// Writes the input to `name` in the scratch folder (the readers under test take paths).
inline std::filesystem::path write_input(const std::string& name, const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path p = scratch_dir() / name;
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return p;
}

// A broken invariant: abort, so that libFuzzer saves the input as a crash.
#define FUZZ_CHECK(cond)                                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "FUZZ_CHECK failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

}  // namespace infer::fuzz
