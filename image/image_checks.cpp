#include "image/image_checks.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "infer/errors.h"
#include "platform/input_file.h"

namespace infer {
namespace {

std::uint32_t be32(const unsigned char* p) {
  return std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 | p[3];
}
std::uint32_t le16(const unsigned char* p) { return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8; }
std::uint32_t le32(const unsigned char* p) { return le16(p) | le16(p + 2) << 16; }

std::string dims(long long w, long long h) { return std::to_string(w) + "x" + std::to_string(h); }

[[noreturn]] void truncated(const std::string& name, const char* format, long long w, long long h, std::uint64_t need,
                            std::size_t have) {
  throw InputError(name, std::string(format) + " data truncated: the header's " + dims(w, h) + " pixels need " +
                             format_bytes(need) + " of pixel data, the file has " + format_bytes(have));
}

// The bytes of filtered scanlines a PNG's image data must inflate to (PNG specification, 7.2 and
// 8.2): each row is a filter-type byte and ceil(width * bits per pixel / 8) bytes; an interlaced
// image is seven reduced images (Adam7), each with its own rows. 0 for an invalid colour type.
std::uint64_t png_raw_bytes(std::uint64_t w, std::uint64_t h, unsigned depth, unsigned colour, bool interlaced) {
  unsigned samples = 0;
  switch (colour) {
    case 0: samples = 1; break;  // grey
    case 2: samples = 3; break;  // RGB
    case 3: samples = 1; break;  // palette index
    case 4: samples = 2; break;  // grey + alpha
    case 6: samples = 4; break;  // RGBA
    default: return 0;
  }
  const std::uint64_t bits = std::uint64_t{samples} * depth;
  auto image_bytes = [&](std::uint64_t pw, std::uint64_t ph) { return pw && ph ? ph * (1 + (pw * bits + 7) / 8) : 0; };
  if (!interlaced) return image_bytes(w, h);
  // Adam7 passes: first column, first row, column step, row step.
  static const unsigned pass[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                      {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
  std::uint64_t total = 0;
  for (const auto& p : pass) {
    const std::uint64_t pw = w > p[0] ? (w - p[0] + p[2] - 1) / p[2] : 0;
    const std::uint64_t ph = h > p[1] ? (h - p[1] + p[3] - 1) / p[3] : 0;
    total += image_bytes(pw, ph);
  }
  return total;
}

// Inflates the concatenated IDAT data of a PNG into a scratch buffer, counting, and stops as soon as
// the count passes `limit`. Returns the count (limit + 1 when it stopped early); throws on a zlib
// error. `raw` is set for Apple's CgBI PNGs, whose data is a raw deflate stream without the zlib wrapper.
class IdatInflater {
 public:
  IdatInflater(const std::string& name, bool raw) : name_(name) {
    if (inflateInit2(&z_, raw ? -MAX_WBITS : MAX_WBITS) != Z_OK) throw InputError(name, "cannot start zlib");
  }
  ~IdatInflater() { inflateEnd(&z_); }
  IdatInflater(const IdatInflater&) = delete;
  IdatInflater& operator=(const IdatInflater&) = delete;

  // Feeds one IDAT chunk's data; false once the stream has ended or the limit is passed.
  bool feed(const unsigned char* data, std::size_t size, std::uint64_t limit) {
    z_.next_in = const_cast<unsigned char*>(data);  // zlib's API is not const-correct
    z_.avail_in = static_cast<uInt>(size);
    while (!ended_ && inflated_ <= limit) {
      z_.next_out = scratch_.data();
      z_.avail_out = static_cast<uInt>(scratch_.size());
      const int rc = inflate(&z_, Z_NO_FLUSH);
      inflated_ += scratch_.size() - z_.avail_out;
      if (rc == Z_STREAM_END) ended_ = true;
      if (rc == Z_STREAM_END || rc == Z_BUF_ERROR) break;  // Z_BUF_ERROR: the next chunk is needed
      if (rc != Z_OK) {
        throw InputError(name_, std::string("corrupt PNG image data (zlib: ") + (z_.msg ? z_.msg : "error") + ")");
      }
      if (z_.avail_in == 0 && z_.avail_out != 0) break;  // this chunk is used up
    }
    return !ended_ && inflated_ <= limit;
  }
  std::uint64_t inflated() const { return inflated_; }

 private:
  const std::string& name_;
  z_stream z_{};
  std::array<unsigned char, 1 << 16> scratch_{};
  std::uint64_t inflated_ = 0;
  bool ended_ = false;
};

}  // namespace

ImageFormat sniff_image_format(const unsigned char* b, std::size_t size) {
  static const unsigned char png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size >= 8 && std::memcmp(b, png, 8) == 0) return ImageFormat::Png;
  if (size >= 2 && b[0] == 0xff && b[1] == 0xd8) return ImageFormat::Jpeg;
  if (size >= 2 && b[0] == 'B' && b[1] == 'M') return ImageFormat::Bmp;
  if (size >= 4 && std::memcmp(b, "GIF8", 4) == 0) return ImageFormat::Gif;
  if (size >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6') return ImageFormat::Pnm;
  return ImageFormat::Other;
}

long long max_pixels_per_byte(ImageFormat format) {
  switch (format) {
    case ImageFormat::Jpeg: return 512;
    case ImageFormat::Gif: return 2'731;
    case ImageFormat::Png: return 8'256;
    default: return 16'384;
  }
}

void check_png(const std::string& name, const unsigned char* bytes, std::size_t size, long long max_pixels) {
  // Chunks: length (4, big-endian), type (4), data, CRC (4); IHDR first, or second after Apple's CgBI.
  std::size_t at = 8;
  bool cgbi = false;
  std::uint64_t w = 0, h = 0, need = 0;
  bool have_header = false;
  std::uint64_t inflated_limit = 0;
  std::unique_ptr<IdatInflater> inflater;
  while (at + 8 <= size) {
    const std::uint64_t length = be32(bytes + at);
    const unsigned char* type = bytes + at + 4;
    const unsigned char* data = bytes + at + 8;
    if (length > size - at - 8) return;  // cut short: the decoder says so
    if (std::memcmp(type, "CgBI", 4) == 0) cgbi = true;
    if (std::memcmp(type, "IHDR", 4) == 0 && length >= 13 && !have_header) {
      have_header = true;
      w = be32(data);
      h = be32(data + 4);
      // A side over the limit is refused before multiplying: two 32-bit sides can overflow 64 bits.
      const auto max = static_cast<std::uint64_t>(max_pixels);
      if (w > max || h > max || w * h > max) {
        throw InputError(name, "image is " + dims(static_cast<long long>(w), static_cast<long long>(h)) +
                                   " pixels, over the limit of " + std::to_string(max_pixels) + " pixels");
      }
      need = png_raw_bytes(w, h, data[8], data[9], data[12] == 1);
      if (need == 0) return;  // an invalid header: the decoder names it
      inflated_limit = need;
    }
    if (std::memcmp(type, "IDAT", 4) == 0 && have_header) {
      if (!inflater) inflater = std::make_unique<IdatInflater>(name, cgbi);
      if (!inflater->feed(data, static_cast<std::size_t>(length), inflated_limit)) break;
    }
    if (std::memcmp(type, "IEND", 4) == 0) break;
    at += 12 + static_cast<std::size_t>(length);
  }
  if (inflater && inflater->inflated() > inflated_limit) {
    throw InputError(name, "PNG image data inflates to more than the " + format_bytes(need) + " that its " +
                               dims(static_cast<long long>(w), static_cast<long long>(h)) +
                               " pixels need (a decompression bomb?); refused before decoding");
  }
}

void check_tga(const std::string& name, const unsigned char* b, std::size_t size) {
  // Header (Truevision TGA 2.0, "Image File Format" table): ID length, colour map type, image type,
  // colour map first index / length / entry bits, origin, width, height, bits per pixel, descriptor.
  if (size < 18) return;
  const unsigned image_type = b[2];
  const std::uint64_t w = le16(b + 12), h = le16(b + 14);
  const std::uint64_t pixel_bytes = (b[16] + 7u) / 8u;
  if (pixel_bytes == 0 || w == 0 || h == 0) return;  // the decoder refuses these
  const std::uint64_t map_bytes = b[1] == 1 ? le16(b + 5) * ((b[7] + 7u) / 8u) : 0;
  const std::uint64_t start = 18 + std::uint64_t{b[0]} + map_bytes;
  const std::uint64_t pixels = w * h;
  const std::size_t have = start < size ? size - static_cast<std::size_t>(start) : 0;
  if (image_type == 1 || image_type == 2 || image_type == 3) {
    if (pixels * pixel_bytes > have)
      truncated(name, "TGA", static_cast<long long>(w), static_cast<long long>(h), pixels * pixel_bytes, have);
    return;
  }
  if (image_type != 9 && image_type != 10 && image_type != 11) return;
  // Run-length encoded: packets of a count byte (high bit: a run of one pixel value; else raw pixels).
  std::uint64_t at = start, covered = 0, need = 0;
  while (covered < pixels) {
    if (at >= size) break;
    const unsigned packet = b[at];
    const std::uint64_t count = (packet & 0x7fu) + 1;
    const std::uint64_t payload = (packet & 0x80u) ? pixel_bytes : count * pixel_bytes;
    need = at - start + 1 + payload;
    if (at + 1 + payload > size) break;
    at += 1 + payload;
    covered += count;
  }
  if (covered < pixels) {
    // What the rest needs at best: runs of 128 pixels, each a count byte and one pixel value.
    const std::uint64_t rest = pixels - covered;
    need = std::max(need, at - start + (rest + 127) / 128 * (1 + pixel_bytes));
    truncated(name, "run-length TGA", static_cast<long long>(w), static_cast<long long>(h), need, have);
  }
}

int check_bmp(const std::string& name, const unsigned char* b, std::size_t size, int height) {
  // File header (14 bytes), then the DIB header, whose first field is its size: 12 for the OS/2
  // BITMAPCOREHEADER (16-bit sides), 40 or more for BITMAPINFOHEADER and its successors (signed
  // 32-bit sides; a negative height means the rows are stored top-down).
  if (size < 18) return std::abs(height);
  const std::uint32_t header = le32(b + 14);
  std::uint64_t w = 0, h = 0, bpp = 0, compression = 0;
  if (header == 12 && size >= 26) {
    w = le16(b + 18), h = le16(b + 20), bpp = le16(b + 24);
  } else if (header >= 40 && size >= 34) {
    const auto sw = static_cast<std::int32_t>(le32(b + 18)), sh = static_cast<std::int32_t>(le32(b + 22));
    w = static_cast<std::uint64_t>(std::abs(static_cast<long long>(sw)));
    h = static_cast<std::uint64_t>(std::abs(static_cast<long long>(sh)));
    bpp = le16(b + 28), compression = le32(b + 30);
  } else {
    return std::abs(height);
  }
  // Uncompressed rows (BI_RGB, BI_BITFIELDS, BI_ALPHABITFIELDS) are padded to 4 bytes; the
  // run-length encodings (1, 2) are refused by the decoder.
  if (compression == 0 || compression == 3 || compression == 6) {
    const std::uint64_t row = (w * bpp + 31) / 32 * 4;
    const std::uint64_t first = 14 + std::uint64_t{header};  // the pixels come after the headers at least
    const std::size_t have = first < size ? size - static_cast<std::size_t>(first) : 0;
    if (row * h > have) truncated(name, "BMP", static_cast<long long>(w), static_cast<long long>(h), row * h, have);
  }
  return std::abs(height);
}

std::string unsupported_jpeg_variant(const unsigned char* b, std::size_t size) {
  // Marker segments from SOI up to the first frame header (SOFn), which says how the image is coded
  // (ITU-T T.81, B.1.1.3 and Table B.1). stb_image decodes SOF0-SOF2 at 8-bit precision.
  std::size_t at = 2;
  while (at + 4 <= size) {
    if (b[at] != 0xff) return "";
    const unsigned marker = b[at + 1];
    if (marker == 0xff) {  // fill byte
      ++at;
      continue;
    }
    if (marker == 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {  // no length
      at += 2;
      continue;
    }
    if (marker == 0xda || marker == 0xd9) return "";  // scan or end before a frame header
    const std::size_t length = std::size_t{b[at + 2]} << 8 | b[at + 3];
    const bool frame = marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc;
    if (frame) {
      if (marker == 0xc3 || marker == 0xcb) return "lossless";
      if (marker >= 0xc9) return "arithmetic-coded";
      if (marker >= 0xc5) return "hierarchical";
      if (at + 4 < size && b[at + 4] != 8) return std::to_string(b[at + 4]) + "-bit";
      return "";
    }
    at += 2 + length;
  }
  return "";
}

}  // namespace infer
