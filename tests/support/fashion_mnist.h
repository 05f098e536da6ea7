// Reads the Fashion-MNIST test set from Debian's dataset-fashion-mnist package (gzip'd IDX files).
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace infer::test {

// $FASHION_MNIST_DIR, else where Debian's dataset-fashion-mnist package puts the files.
constexpr const char* kDebianFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline std::string fashion_mnist_dir() {
  const char* env = std::getenv("FASHION_MNIST_DIR");
  return env && *env ? env : kDebianFashionMnistDir;
}

inline std::vector<std::uint8_t> read_gzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(path + ": cannot open (install dataset-fashion-mnist: tools/dev/install-deps.sh)");
  std::vector<std::uint8_t> out;
  std::uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  gzclose(f);
  if (n < 0) throw std::runtime_error(path + ": gzip read error");
  return out;
}

struct FashionMnist {
  int count = 0;
  std::vector<std::uint8_t> images;  // count x 28 x 28
  std::vector<std::uint8_t> labels;  // count
};

// The 10k test images and labels from dir (t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz).
// IDX: big-endian magic (0x803 images, 0x801 labels), sizes, data. A missing file throws one line
// naming its path.
inline FashionMnist load_fashion_mnist_test(const std::string& dir = fashion_mnist_dir()) {
  for (const char* name : {"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
    const std::string path = dir + "/" + name;
    if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
      std::fclose(f);
    } else {
      throw std::runtime_error("Fashion-MNIST test set not found: " + path +
                               " is missing (point FASHION_MNIST_DIR, or infer-bench --data, at the folder with the "
                               "t10k-*.gz files, or install dataset-fashion-mnist: tools/dev/install-deps.sh)");
    }
  }
  const std::vector<std::uint8_t> img = read_gzip(dir + "/t10k-images-idx3-ubyte.gz");
  const std::vector<std::uint8_t> lab = read_gzip(dir + "/t10k-labels-idx1-ubyte.gz");
  auto be32 = [](const std::vector<std::uint8_t>& v, std::size_t at) {
    return static_cast<int>(std::uint32_t(v.at(at)) << 24 | std::uint32_t(v.at(at + 1)) << 16 |
                            std::uint32_t(v.at(at + 2)) << 8 | v.at(at + 3));
  };
  if (be32(img, 0) != 0x803 || be32(lab, 0) != 0x801) throw std::runtime_error("not IDX files");
  FashionMnist d;
  d.count = be32(img, 4);
  if (be32(lab, 4) != d.count || be32(img, 8) != 28 || be32(img, 12) != 28 ||
      img.size() != 16 + static_cast<std::size_t>(d.count) * 784 ||
      lab.size() != 8 + static_cast<std::size_t>(d.count)) {
    throw std::runtime_error("unexpected IDX sizes");
  }
  d.images.assign(img.begin() + 16, img.end());
  d.labels.assign(lab.begin() + 8, lab.end());
  return d;
}

}  // namespace infer::test
