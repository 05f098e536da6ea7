// SHA-256 of a file: OpenSSL on Linux, BCrypt on Windows (sha256_hasher.h).
#pragma once

#include <filesystem>
#include <string>

namespace infer::manifest {

// 64 lowercase hex digits. Symlinks are followed; the file they end at must be a regular file.
// Throws InputError naming the file when it cannot be read, and "is a FIFO, not a regular file"
// (character device, directory, ...) without reading it: a FIFO would block on open and a device
// such as /dev/zero never ends.
std::string sha256_file(const std::filesystem::path& file);

}  // namespace infer::manifest
