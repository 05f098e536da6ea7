// Sha256Hasher through OpenSSL's EVP interface (libcrypto, Debian's libssl-dev).
#include <openssl/evp.h>

#include <algorithm>
#include <stdexcept>

#include "manifest/sha256_hasher.h"

namespace infer::manifest {

struct Sha256Hasher::State {
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx{EVP_MD_CTX_new(), EVP_MD_CTX_free};
};

Sha256Hasher::Sha256Hasher() : state_(std::make_unique<State>()) {
  if (!state_->ctx || EVP_DigestInit_ex(state_->ctx.get(), EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("OpenSSL: cannot initialise SHA-256");
  }
}

Sha256Hasher::~Sha256Hasher() = default;

void Sha256Hasher::update(const unsigned char* data, std::size_t size) {
  if (EVP_DigestUpdate(state_->ctx.get(), data, size) != 1) throw std::runtime_error("OpenSSL: SHA-256 update failed");
}

std::array<unsigned char, 32> Sha256Hasher::finish() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(state_->ctx.get(), digest.data(), &size) != 1 || size != 32) {
    throw std::runtime_error("OpenSSL: SHA-256 final failed");
  }
  std::array<unsigned char, 32> out{};
  std::copy(digest.begin(), digest.begin() + 32, out.begin());
  return out;
}

}  // namespace infer::manifest
