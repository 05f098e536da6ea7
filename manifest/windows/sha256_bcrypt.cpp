// Sha256Hasher through Windows' Cryptography API: Next Generation (bcrypt.dll, a system DLL).
// mingw-w64's headers lack the pseudo-handle BCRYPT_SHA256_ALG_HANDLE (Windows 10+), so the
// algorithm provider is opened once per hasher with BCryptOpenAlgorithmProvider.
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
// windows.h first: bcrypt.h needs its types.
#include <bcrypt.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "manifest/sha256_hasher.h"

namespace infer::manifest {
namespace {

void check(NTSTATUS status, const char* call) {
  if (status < 0) {
    throw std::runtime_error(std::string("BCrypt: ") + call + " failed (NTSTATUS " + std::to_string(status) + ")");
  }
}

}  // namespace

struct Sha256Hasher::State {
  BCRYPT_ALG_HANDLE algorithm = nullptr;
  BCRYPT_HASH_HANDLE hash = nullptr;
  ~State() {
    if (hash != nullptr) BCryptDestroyHash(hash);
    if (algorithm != nullptr) BCryptCloseAlgorithmProvider(algorithm, 0);
  }
};

Sha256Hasher::Sha256Hasher() : state_(std::make_unique<State>()) {
  check(BCryptOpenAlgorithmProvider(&state_->algorithm, BCRYPT_SHA256_ALGORITHM, nullptr, 0),
        "BCryptOpenAlgorithmProvider(SHA256)");
  check(BCryptCreateHash(state_->algorithm, &state_->hash, nullptr, 0, nullptr, 0, 0), "BCryptCreateHash");
}

Sha256Hasher::~Sha256Hasher() = default;

void Sha256Hasher::update(const unsigned char* data, std::size_t size) {
  while (size > 0) {
    const ULONG n = static_cast<ULONG>(std::min<std::size_t>(size, 1u << 30));
    check(BCryptHashData(state_->hash, const_cast<PUCHAR>(data), n, 0), "BCryptHashData");
    data += n;
    size -= n;
  }
}

std::array<unsigned char, 32> Sha256Hasher::finish() {
  std::array<unsigned char, 32> out{};
  check(BCryptFinishHash(state_->hash, out.data(), static_cast<ULONG>(out.size()), 0), "BCryptFinishHash");
  return out;
}

}  // namespace infer::manifest
