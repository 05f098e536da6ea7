// SHA-256 of a file, through OpenSSL's EVP interface (libcrypto, Debian's libssl-dev).
#pragma once

#include <filesystem>
#include <string>

namespace infer::manifest {

// 64 lowercase hex digits. Throws InputError naming the file when it cannot be read.
std::string sha256_file(const std::filesystem::path& file);

}  // namespace infer::manifest
