// The SHA-256 primitive behind sha256_file (sha256.cpp): OpenSSL's EVP interface on Linux
// (sha256_openssl.cpp), Windows' BCrypt (sha256_bcrypt.cpp). Throws std::runtime_error when the
// system library fails.
#pragma once

#include <array>
#include <cstddef>
#include <memory>

namespace infer::manifest {

class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;

  void update(const unsigned char* data, std::size_t size);
  std::array<unsigned char, 32> finish();  // once

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace infer::manifest
