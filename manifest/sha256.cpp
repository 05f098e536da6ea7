#include "manifest/sha256.h"

#include <algorithm>
#include <vector>

#include "platform/input_file.h"
#include "manifest/sha256_hasher.h"

namespace infer::manifest {

std::string sha256_file(const std::filesystem::path& file) {
  const InputFile in(file);  // regular files only: a FIFO or a device could block or never end
  Sha256Hasher hasher;
  std::vector<unsigned char> buf(std::size_t{1} << 16);
  // The bytes the file had when it was opened, as InputFile::read_all reads them.
  for (std::uint64_t offset = 0; offset < in.size();) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), in.size() - offset));
    in.read_at(offset, buf.data(), n);
    hasher.update(buf.data(), n);
    offset += n;
  }
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (const unsigned char byte : hasher.finish()) {
    out += kHex[byte >> 4];
    out += kHex[byte & 15];
  }
  return out;
}

}  // namespace infer::manifest
