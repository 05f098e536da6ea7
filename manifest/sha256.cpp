#include "sha256.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "file_kind.h"
#include "model/errors.h"

namespace infer::manifest {
namespace {

[[noreturn]] void not_regular(const std::filesystem::path& file, mode_t mode) {
  throw InputError(file.string(), std::string("not a regular file (") + file_kind(mode) + ")");
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd& operator=(Fd&&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Opens a regular file for reading. stat() first, so that a device is never opened (opening one
// can have effects); O_NONBLOCK and fstat() after, so that a FIFO swapped in between cannot block
// the open and is still refused.
Fd open_regular(const std::filesystem::path& file) {
  struct stat st {};
  if (stat(file.c_str(), &st) != 0) throw InputError(file.string(), std::string("cannot read: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) not_regular(file, st.st_mode);
  Fd fd(open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) throw InputError(file.string(), std::string("cannot read: ") + std::strerror(errno));
  if (fstat(fd.get(), &st) != 0) throw InputError(file.string(), std::string("cannot read: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) not_regular(file, st.st_mode);
  return fd;
}

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
  const Fd fd = open_regular(file);
  const std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("OpenSSL: cannot initialise SHA-256");
  }
  std::array<char, 1 << 16> buf{};
  for (;;) {
    const ssize_t n = read(fd.get(), buf.data(), buf.size());
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
  if (EVP_DigestFinal_ex(ctx.get(), digest.data(), &size) != 1) throw std::runtime_error("OpenSSL: SHA-256 final failed");
  return hex(digest.data(), size);
}

}  // namespace infer::manifest
