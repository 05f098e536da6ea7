#include "image/pnm.h"

#include <climits>
#include <stdexcept>

#include "infer/errors.h"
#include "platform/printable.h"

namespace infer {
namespace {

// Header numbers and plain samples saturate here: any value above is too large for every field
// (width and height stop at INT_MAX, maxval and samples at 65535), and the text of the number is
// what the message shows.
constexpr unsigned long long kNumberCap = 1'000'000'000'000ULL;

// The specification's whitespace: C's isspace() in the "C" locale, without depending on a locale.
bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

const char* format_name(PnmKind kind) {
  switch (kind) {
    case PnmKind::Bitmap: return "PBM";
    case PnmKind::Greymap: return "PGM";
    case PnmKind::Pixmap: return "PPM";
  }
  return "PNM";
}

std::string byte_text(unsigned char c) { return "'" + printable_ascii(std::string(1, static_cast<char>(c))) + "'"; }

// A cursor over the file that never moves past its end: every access checks at_end() first.
class Cursor {
 public:
  Cursor(const unsigned char* bytes, std::size_t size, std::size_t pos) : bytes_(bytes), size_(size), pos_(pos) {}
  bool at_end() const { return pos_ >= size_; }
  unsigned char peek() const { return bytes_[pos_]; }
  std::size_t pos() const { return pos_; }
  void advance() { ++pos_; }

  // A comment runs from '#' through the next CR or LF (the spec's wording); it separates tokens.
  void skip_comments() {
    while (!at_end() && peek() == '#') {
      while (!at_end() && peek() != '\n' && peek() != '\r') ++pos_;
      if (!at_end()) ++pos_;
    }
  }
  void skip_separators() {
    for (;;) {
      skip_comments();
      if (at_end() || !is_space(peek())) return;
      ++pos_;
    }
  }
  // Reads the digits at the cursor (there must be one); the value saturates above kNumberCap and
  // `text` keeps the first digits for messages.
  unsigned long long number(std::string& text) {
    unsigned long long value = 0;
    text.clear();
    while (!at_end() && is_digit(peek())) {
      if (value <= kNumberCap) value = value * 10 + (peek() - '0');
      if (text.size() < 24) text += static_cast<char>(peek());
      ++pos_;
    }
    if (text.size() == 24) text += "...";
    return value;
  }

 private:
  const unsigned char* bytes_;
  std::size_t size_;
  std::size_t pos_;
};

// Reads one header number, after any separators.
unsigned long long header_number(Cursor& cur, const std::string& name, const char* fmt, const char* what,
                                 std::string& text) {
  cur.skip_separators();
  if (cur.at_end()) throw InputError(name, std::string(fmt) + " header truncated: the file ends before the " + what);
  if (!is_digit(cur.peek())) {
    throw InputError(name, std::string(fmt) + " header: expected the " + what + " as a decimal number, found byte " +
                               byte_text(cur.peek()));
  }
  return cur.number(text);
}

int header_side(Cursor& cur, const std::string& name, const char* fmt, const char* what) {
  std::string text;
  const unsigned long long v = header_number(cur, name, fmt, what, text);
  if (v == 0) throw InputError(name, std::string(fmt) + " " + what + " 0 is invalid (must be at least 1)");
  if (v > static_cast<unsigned long long>(INT_MAX)) {
    throw InputError(name, std::string(fmt) + " " + what + " " + text + " is too large");
  }
  return static_cast<int>(v);
}

const char* const kChannelNames[3] = {"red", "green", "blue"};

[[noreturn]] void over_maxval(const std::string& name, const PnmHeader& h, unsigned long long sample,
                              const std::string& text, long long pixel, int channel) {
  const std::string which = h.file_channels == 3 ? std::string(" ") + kChannelNames[channel] : "";
  throw InputError(name, std::string(format_name(h.kind)) + which + " sample " +
                             (text.empty() ? std::to_string(sample) : text) + " at pixel (" +
                             std::to_string(pixel % h.width) + ", " + std::to_string(pixel / h.width) +
                             ") is over maxval " + std::to_string(h.maxval));
}

// Writes one pixel's file samples (the first 1 or 3 of v, in [0,1]) as `channels` output values.
void store(Image& img, long long pixel, const float (&v)[3], int file_channels) {
  float* out = img.pixels.data() + pixel * img.channels;
  if (img.channels == file_channels) {
    for (int c = 0; c < file_channels; ++c) out[c] = v[c];
  } else if (img.channels == 3) {  // grey to RGB
    out[0] = out[1] = out[2] = v[0];
  } else {  // RGB to grey: ITU-R BT.601 luma, as load_image.cpp uses for every other format
    out[0] = 0.299f * v[0] + 0.587f * v[1] + 0.114f * v[2];
  }
}

void decode_raw(const std::string& name, const PnmHeader& h, const unsigned char* raster, Image& img) {
  const long long pixels = static_cast<long long>(h.width) * h.height;
  if (h.kind == PnmKind::Bitmap) {
    const long long row_bytes = (h.width + 7LL) / 8;
    for (long long i = 0; i < pixels; ++i) {
      const long long x = i % h.width, y = i / h.width;
      const bool black = (raster[y * row_bytes + x / 8] >> (7 - x % 8)) & 1;
      const float v = black ? 0.0f : 1.0f;
      store(img, i, {v, v, v}, 1);
    }
    return;
  }
  const int bytes_per_sample = h.maxval > 255 ? 2 : 1;
  const float scale = static_cast<float>(h.maxval);
  const unsigned char* p = raster;
  for (long long i = 0; i < pixels; ++i) {
    float v[3] = {0.0f, 0.0f, 0.0f};
    for (int c = 0; c < h.file_channels; ++c, p += bytes_per_sample) {
      const unsigned sample = bytes_per_sample == 1 ? p[0] : (unsigned{p[0]} << 8 | p[1]);
      if (sample > static_cast<unsigned>(h.maxval)) over_maxval(name, h, sample, "", i, c);
      v[c] = static_cast<float>(sample) / scale;
    }
    store(img, i, v, h.file_channels);
  }
}

void decode_plain(const std::string& name, const PnmHeader& h, const unsigned char* bytes, std::size_t size,
                  Image& img) {
  const char* fmt = format_name(h.kind);
  const long long pixels = static_cast<long long>(h.width) * h.height;
  const float scale = static_cast<float>(h.maxval);
  Cursor cur(bytes, size, h.raster_offset);
  std::string text;
  for (long long i = 0; i < pixels; ++i) {
    float v[3] = {0.0f, 0.0f, 0.0f};
    for (int c = 0; c < h.file_channels; ++c) {
      // Comments are skipped in the raster too: the original format definition allows them
      // anywhere, and a '#' can never be part of a sample.
      cur.skip_separators();
      const auto where = [&] {
        return "pixel (" + std::to_string(i % h.width) + ", " + std::to_string(i / h.width) + ")";
      };
      if (cur.at_end()) {
        throw InputError(name, std::string(fmt) + " data truncated: the file ends at " + where() + " of " +
                                   std::to_string(h.width) + "x" + std::to_string(h.height));
      }
      if (h.kind == PnmKind::Bitmap) {
        // Plain PBM pixels are single characters and need no separator between them ("0110").
        const unsigned char b = cur.peek();
        if (b != '0' && b != '1') {
          throw InputError(name,
                           std::string(fmt) + " data: expected 0 or 1 at " + where() + ", found byte " + byte_text(b));
        }
        cur.advance();
        v[c] = b == '1' ? 0.0f : 1.0f;  // 1 is black
        continue;
      }
      if (!is_digit(cur.peek())) {
        throw InputError(name, std::string(fmt) + " data: expected a decimal sample at " + where() + ", found byte " +
                                   byte_text(cur.peek()));
      }
      const unsigned long long sample = cur.number(text);
      if (sample > static_cast<unsigned long long>(h.maxval)) over_maxval(name, h, sample, text, i, c);
      v[c] = static_cast<float>(sample) / scale;
    }
    store(img, i, v, h.file_channels);
  }
}

}  // namespace

bool is_pnm(const unsigned char* bytes, std::size_t size) {
  if (size < 2 || bytes[0] != 'P' || bytes[1] < '1' || bytes[1] > '6') return false;
  return size == 2 || is_space(bytes[2]) || bytes[2] == '#';
}

PnmHeader read_pnm_header(const std::string& name, const unsigned char* bytes, std::size_t size) {
  if (!is_pnm(bytes, size)) throw InputError(name, "not a Netpbm image (no magic number P1 to P6)");
  PnmHeader h;
  const int magic = bytes[1] - '0';
  h.plain = magic <= 3;
  h.kind = magic % 3 == 1 ? PnmKind::Bitmap : magic % 3 == 2 ? PnmKind::Greymap : PnmKind::Pixmap;
  h.file_channels = h.kind == PnmKind::Pixmap ? 3 : 1;
  const char* fmt = format_name(h.kind);

  Cursor cur(bytes, size, 2);
  h.width = header_side(cur, name, fmt, "width");
  h.height = header_side(cur, name, fmt, "height");
  const char* last = "height";
  if (h.kind != PnmKind::Bitmap) {
    std::string text;
    const unsigned long long maxval = header_number(cur, name, fmt, "maxval", text);
    if (maxval < 1 || maxval > 65535) {
      throw InputError(name, std::string(fmt) + " maxval " + text + " is invalid (must be 1 to 65535)");
    }
    h.maxval = static_cast<int>(maxval);
    last = "maxval";
  }
  if (h.plain) {  // the raster's own separators follow; decode_plain reads them
    h.raster_offset = cur.pos();
    return h;
  }
  // Raw: comments may still come first ("255#c\n"), then exactly one whitespace byte. Any further
  // whitespace is raster data: a first sample of 10 or 32 is an LF or a space.
  cur.skip_comments();
  if (cur.at_end()) {
    throw InputError(name, std::string(fmt) + " header truncated: the file ends after the " + last +
                               " (one whitespace byte and the raster must follow)");
  }
  if (!is_space(cur.peek())) {
    throw InputError(name, std::string(fmt) + " header: expected one whitespace byte after the " + last +
                               ", found byte " + byte_text(cur.peek()));
  }
  h.raster_offset = cur.pos() + 1;
  return h;
}

Image decode_pnm(const std::string& name, const unsigned char* bytes, std::size_t size, int channels,
                 long long max_pixels) {
  if (channels != 1 && channels != 3) throw std::invalid_argument("decode_pnm: channels must be 1 or 3");
  if (max_pixels < 1 || max_pixels > kMaxPnmPixelLimit) {
    throw std::invalid_argument("decode_pnm: max_pixels must be 1 to kMaxPnmPixelLimit");
  }
  const PnmHeader h = read_pnm_header(name, bytes, size);
  const char* fmt = format_name(h.kind);
  const std::string dims = std::to_string(h.width) + "x" + std::to_string(h.height);
  // Both sides are at most INT_MAX, so the product fits in a long long.
  const long long pixels = static_cast<long long>(h.width) * h.height;
  if (pixels > max_pixels) {
    throw InputError(name, std::string(fmt) + " image is " + dims + " pixels, over the limit of " +
                               std::to_string(max_pixels) + " pixels");
  }
  // The bytes the raster needs at least, checked before the pixels are allocated so that a small
  // file claiming a large image costs nothing. pixels <= 2^40, so none of these overflow.
  const long long samples = pixels * h.file_channels;
  long long raster_bytes = 0;
  if (!h.plain) {
    raster_bytes = h.kind == PnmKind::Bitmap ? (h.width + 7LL) / 8 * h.height : samples * (h.maxval > 255 ? 2 : 1);
  } else {
    raster_bytes = h.kind == PnmKind::Bitmap ? pixels + 1 : 2 * samples;
  }
  const long long needed = static_cast<long long>(h.raster_offset) + raster_bytes;
  if (static_cast<unsigned long long>(needed) > size) {
    throw InputError(name, std::string(fmt) + " data truncated: the header's " + dims + " pixels need " +
                               (h.plain ? "at least " : "") + std::to_string(needed) + " bytes, the file has " +
                               std::to_string(size));
  }

  Image img;
  img.width = h.width;
  img.height = h.height;
  img.channels = channels;
  img.pixels.resize(static_cast<std::size_t>(pixels) * static_cast<std::size_t>(channels));
  if (h.plain) {
    decode_plain(name, h, bytes, size, img);
  } else {
    decode_raw(name, h, bytes + h.raster_offset, img);
  }
  return img;
}

}  // namespace infer
