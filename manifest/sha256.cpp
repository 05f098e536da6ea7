#include "sha256.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "model/errors.h"
#include "model/input_file.h"

namespace infer::manifest {
namespace {

std::string hex(const unsigned char* digest, unsigned int size) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

}  // namespace

std::string sha256_file(const std::filesystem::path& file) {
  const InputFile in(file);  // regular files only: a FIFO or a device could block or never end
  const std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("OpenSSL: cannot initialise SHA-256");
  }
  std::array<char, 1 << 16> buf{};
  for (;;) {
    const ssize_t n = read(in.fd(), buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(file.string(), std::string("read error while computing its SHA-256: ") + std::strerror(errno));
    }
    if (EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(n)) != 1) {
      throw std::runtime_error("OpenSSL: SHA-256 update failed");
    }
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest.data(), &size) != 1)
    throw std::runtime_error("OpenSSL: SHA-256 final failed");
  return hex(digest.data(), size);
}

}  // namespace infer::manifest
