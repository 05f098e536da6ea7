#include "image/exif.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace infer {
namespace {

constexpr unsigned kOrientationTag = 0x0112;
constexpr unsigned kTypeShort = 3;

// Reads of the TIFF structure inside one Exif segment. Offsets come from the file, so each read
// checks that it lies inside the segment (written as `size - offset < n` so nothing can overflow)
// and reports failure instead of reading.
class TiffBytes {
 public:
  TiffBytes(const unsigned char* data, std::size_t size, bool big_endian)
      : data_(data), size_(size), big_endian_(big_endian) {}
  bool u16(std::size_t offset, unsigned& value) const {
    if (offset > size_ || size_ - offset < 2) return false;
    const unsigned char* p = data_ + offset;
    value = big_endian_ ? (unsigned{p[0]} << 8 | p[1]) : (unsigned{p[1]} << 8 | p[0]);
    return true;
  }
  bool u32(std::size_t offset, std::uint32_t& value) const {
    unsigned a = 0, b = 0;
    if (!u16(offset, a) || !u16(offset + 2, b)) return false;
    value = big_endian_ ? (std::uint32_t{a} << 16 | b) : (std::uint32_t{b} << 16 | a);
    return true;
  }
  std::size_t size() const { return size_; }

 private:
  const unsigned char* data_;
  std::size_t size_;
  bool big_endian_;
};

// The orientation in IFD0 of a TIFF structure (TIFF 6.0, section 2: an 8-byte header with the byte
// order, 42 and the offset of IFD0; an IFD is a 2-byte entry count, then 12-byte entries of tag,
// type, count and value). IFD0 describes the main image (IFD1 the thumbnail), so it is the only
// one read.
int tiff_orientation(const unsigned char* tiff, std::size_t size) {
  if (size < 8) return 1;
  bool big_endian = false;
  if (tiff[0] == 'M' && tiff[1] == 'M') {
    big_endian = true;
  } else if (!(tiff[0] == 'I' && tiff[1] == 'I')) {
    return 1;
  }
  const TiffBytes t(tiff, size, big_endian);
  unsigned magic = 0, count = 0;
  std::uint32_t ifd = 0;
  if (!t.u16(2, magic) || magic != 42 || !t.u32(4, ifd) || !t.u16(ifd, count)) return 1;
  // An IFD that claims more entries than the segment holds is corrupt; trust none of it.
  if ((t.size() - ifd - 2) / 12 < count) return 1;
  for (unsigned i = 0; i < count; ++i) {
    const std::size_t entry = ifd + 2 + 12 * std::size_t{i};
    unsigned tag = 0, type = 0, value = 0;
    std::uint32_t n = 0;
    if (!t.u16(entry, tag) || !t.u16(entry + 2, type) || !t.u32(entry + 4, n)) return 1;
    if (tag != kOrientationTag) continue;
    // One SHORT, stored in the first two bytes of the 4-byte value field.
    if (type != kTypeShort || n != 1 || !t.u16(entry + 8, value)) return 1;
    return value >= 1 && value <= 8 ? static_cast<int>(value) : 1;
  }
  return 1;
}

}  // namespace

int jpeg_orientation(const unsigned char* bytes, std::size_t size) {
  if (size < 2 || bytes[0] != 0xFF || bytes[1] != 0xD8) return 1;  // SOI
  std::size_t pos = 2;
  while (pos < size) {
    if (bytes[pos] != 0xFF) return 1;                // a segment must start with a marker
    while (pos < size && bytes[pos] == 0xFF) ++pos;  // any number of fill bytes (ITU T.81, B.1.1.2)
    if (pos >= size) return 1;
    const unsigned char marker = bytes[pos++];
    if (marker == 0xDA || marker == 0xD9) return 1;                      // SOS: entropy-coded data follows; EOI
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;  // TEM, RSTn: no length
    if (marker == 0x00) return 1;  // 0xFF00 is byte stuffing inside entropy-coded data only
    if (size - pos < 2) return 1;
    // The length counts its own two bytes and the segment's data.
    const std::size_t length = std::size_t{bytes[pos]} << 8 | bytes[pos + 1];
    if (length < 2 || length > size - pos) return 1;
    static const unsigned char kExif[6] = {'E', 'x', 'i', 'f', 0, 0};
    if (marker == 0xE1 && length >= 2 + 6 && std::memcmp(bytes + pos + 2, kExif, 6) == 0) {
      // Offsets inside the TIFF structure count from its header, right after "Exif\0\0".
      return tiff_orientation(bytes + pos + 8, length - 8);
    }
    pos += length;
  }
  return 1;
}

Image apply_orientation(Image img, int orientation) {
  if (orientation < 1 || orientation > 8) {
    throw std::invalid_argument("apply_orientation: orientation " + std::to_string(orientation) + " is not 1 to 8");
  }
  if (img.width < 0 || img.height < 0 || img.channels < 1 ||
      img.pixels.size() != static_cast<std::size_t>(img.width) * img.height * img.channels) {
    throw std::invalid_argument("apply_orientation: pixels do not match width x height x channels");
  }
  if (orientation == 1) return img;

  // The table in exif.h, as three facts: whether stored rows become display columns (5 to 8), and
  // whether stored row 0 / column 0 land on the far edge of their display axis (bottom or right)
  // rather than the near one (top or left).
  const bool transposed = orientation >= 5;
  const bool row0_far = orientation == 3 || orientation == 4 || orientation == 6 || orientation == 7;
  const bool col0_far = orientation == 2 || orientation == 3 || orientation == 7 || orientation == 8;

  const int w = img.width, h = img.height, ch = img.channels;
  Image out;
  out.width = transposed ? h : w;
  out.height = transposed ? w : h;
  out.channels = ch;
  out.pixels.resize(img.pixels.size());
  for (int sy = 0; sy < h; ++sy) {
    for (int sx = 0; sx < w; ++sx) {
      // Along the display axis a stored row index runs on: vertical, or horizontal when transposed.
      const int row_pos = row0_far ? h - 1 - sy : sy;
      const int col_pos = col0_far ? w - 1 - sx : sx;
      const int dx = transposed ? row_pos : col_pos;
      const int dy = transposed ? col_pos : row_pos;
      const float* src = img.pixels.data() + (static_cast<std::size_t>(sy) * w + sx) * ch;
      float* dst = out.pixels.data() + (static_cast<std::size_t>(dy) * out.width + dx) * ch;
      std::memcpy(dst, src, sizeof(float) * static_cast<std::size_t>(ch));
    }
  }
  return out;
}

}  // namespace infer
