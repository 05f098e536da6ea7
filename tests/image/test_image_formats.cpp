// The Netpbm decoder (image/pnm.h) and the EXIF orientation of JPEGs (image/exif.h).
//
// Files are written here by small writers that follow the format specifications and share no code
// with the decoders; pictures are fresh random data (the seed is in every failure message).
#include <gtest/gtest.h>
#include <stb_image.h>
#include <stb_image_write.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "infer/errors.h"
#include "image/exif.h"
#include "image/load_image.h"
#include "image/pnm.h"
#include "tests/support/test_util.h"

// The largest single allocation since the last reset, for "refused before allocation" tests: a
// decoder that allocated the header's pixels first would show a request of gigabytes here.
namespace {
std::atomic<std::size_t> g_largest_allocation{0};
}  // namespace

// Not inlined: GCC would then see free() of a pointer that came from operator new, and warn.
[[gnu::noinline]] void* operator new(std::size_t n) {
  std::size_t seen = g_largest_allocation.load();
  while (n > seen && !g_largest_allocation.compare_exchange_weak(seen, n)) {
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace infer::test {
namespace {

using Bytes = std::vector<unsigned char>;

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }
Bytes operator+(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The data in a heap block of exactly its size, so that AddressSanitizer reports a read one byte
// past the end (a std::vector may have spare capacity there).
struct Exact {
  explicit Exact(const Bytes& b) : size(b.size()), data(new unsigned char[b.size() == 0 ? 1 : b.size()]) {
    if (!b.empty()) std::memcpy(data.get(), b.data(), b.size());
  }
  std::size_t size;
  std::unique_ptr<unsigned char[]> data;
};

Image decode(const Bytes& file, int channels, long long max_pixels = kMaxImagePixels) {
  const Exact e(file);
  return decode_pnm("t.pnm", e.data.get(), e.size, channels, max_pixels);
}

// The problem decode_pnm reports for `file`, or a failure when it decodes.
std::string problem(const Bytes& file, int channels = 1, long long max_pixels = kMaxImagePixels) {
  try {
    decode(file, channels, max_pixels);
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "t.pnm");
    return e.problem();
  }
  ADD_FAILURE() << "decoded without an error";
  return "";
}

// ---- Netpbm writers --------------------------------------------------------------------------

std::string pnm_header(char magic, int w, int h, int maxval) {
  std::string s = std::string("P") + magic + "\n" + std::to_string(w) + " " + std::to_string(h) + "\n";
  if (magic != '1' && magic != '4') s += std::to_string(maxval) + "\n";
  return s;
}

// Raw raster (P5, P6): one byte per sample below maxval 256, else two, most significant first.
Bytes raw_raster(const std::vector<int>& samples, int maxval) {
  Bytes out;
  for (int s : samples) {
    if (maxval > 255) out.push_back(static_cast<unsigned char>(s >> 8));
    out.push_back(static_cast<unsigned char>(s & 0xFF));
  }
  return out;
}

// Plain raster (P2, P3): decimal numbers, each followed by a random run of whitespace.
Bytes plain_raster(const std::vector<int>& samples, Random& rng) {
  static const char kSpace[] = {' ', '\t', '\n', '\r', '\v', '\f'};
  std::string out;
  for (int s : samples) {
    out += std::to_string(s);
    const int n = rng.integer(1, 3);
    for (int i = 0; i < n; ++i) out += kSpace[rng.integer(0, 5)];
  }
  return bytes_of(out);
}

Bytes pnm_file(char magic, int w, int h, int maxval, const std::vector<int>& samples, Random& rng) {
  const bool plain = magic == '2' || magic == '3';
  return bytes_of(pnm_header(magic, w, h, maxval)) + (plain ? plain_raster(samples, rng) : raw_raster(samples, maxval));
}

std::vector<int> random_samples(Random& rng, std::size_t n, int maxval) {
  std::vector<int> v(n);
  for (int& s : v) s = rng.integer(0, maxval);
  return v;
}

// A file, and the pixels it must decode to, for each of the six formats (used by the cut tests).
Bytes any_format_file(char magic, Random& rng) {
  const int w = rng.integer(2, 9), h = rng.integer(2, 9);
  if (magic == '1' || magic == '4') {
    std::string s = pnm_header(magic, w, h, 1);
    Bytes f = bytes_of(s);
    for (int y = 0; y < h; ++y) {
      if (magic == '1') {
        for (int x = 0; x < w; ++x) f.push_back(rng.integer(0, 1) ? '1' : '0');
        f.push_back('\n');
      } else {
        for (int b = 0; b < (w + 7) / 8; ++b) f.push_back(static_cast<unsigned char>(rng.integer(0, 255)));
      }
    }
    return f;
  }
  const int ch = magic == '3' || magic == '6' ? 3 : 1;
  const int maxval = rng.integer(0, 1) ? 255 : 1000;
  return pnm_file(magic, w, h, maxval, random_samples(rng, static_cast<std::size_t>(w * h * ch), maxval), rng);
}

// ---- Netpbm tests ----------------------------------------------------------------------------

TEST(Pnm, IsPnmNeedsAMagicNumberAndASeparator) {
  for (const char* yes : {"P1 ", "P2\n", "P3\t", "P4\r", "P5#c", "P6\n", "P5"}) {
    EXPECT_TRUE(is_pnm(reinterpret_cast<const unsigned char*>(yes), std::strlen(yes))) << yes;
  }
  for (const char* no : {"", "P", "P0 ", "P7 ", "p5 ", "P1ease", "\x89PNG"}) {
    EXPECT_FALSE(is_pnm(reinterpret_cast<const unsigned char*>(no), std::strlen(no))) << no;
  }
}

TEST(Pnm, HeaderFields) {
  const Bytes f = bytes_of("P6 # a comment\n 640\t480 1023\n");
  const PnmHeader h = read_pnm_header("t.ppm", f.data(), f.size());
  EXPECT_EQ(h.kind, PnmKind::Pixmap);
  EXPECT_FALSE(h.plain);
  EXPECT_EQ(h.width, 640);
  EXPECT_EQ(h.height, 480);
  EXPECT_EQ(h.maxval, 1023);
  EXPECT_EQ(h.file_channels, 3);
  EXPECT_EQ(h.raster_offset, f.size());
  const Bytes b = bytes_of("P1\n5 7 0101");
  const PnmHeader hb = read_pnm_header("t.pbm", b.data(), b.size());
  EXPECT_EQ(hb.kind, PnmKind::Bitmap);
  EXPECT_TRUE(hb.plain);
  EXPECT_EQ(hb.maxval, 1);
  EXPECT_EQ(hb.raster_offset, 6u);  // plain: right after the height's digits
}

// Every maxval scales by 1/maxval: decoded values are exactly sample/maxval (one float division of
// exact integers: within half an ulp), and agree with an 8-bit reference of the same picture
// within the quantisation step, 0.5/maxval, plus that rounding.
TEST(Pnm, EachMaxvalScalesToTheUnitRange) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  for (int maxval : {1, 15, 255, 1023, 65535}) {
    for (char magic : {'5', '2'}) {
      SCOPED_TRACE("P" + std::string(1, magic) + " maxval " + std::to_string(maxval));
      const int w = rng.integer(3, 9), h = rng.integer(2, 7);
      std::vector<int> ref8 = random_samples(rng, static_cast<std::size_t>(w * h), 255);
      ref8[0] = 255, ref8[1] = 0;  // both ends of the range
      std::vector<int> samples;
      for (int v : ref8) samples.push_back(static_cast<int>(std::lround(v * static_cast<double>(maxval) / 255.0)));
      const Image img = decode(pnm_file(magic, w, h, maxval, samples, rng), 1);
      ASSERT_EQ(img.width, w);
      ASSERT_EQ(img.height, h);
      ASSERT_EQ(img.channels, 1);
      std::vector<double> exact, from8, tol_exact, tol8;
      for (std::size_t i = 0; i < samples.size(); ++i) {
        exact.push_back(static_cast<double>(samples[i]) / maxval);
        tol_exact.push_back(exact.back() * kFloatEps);
        from8.push_back(ref8[i] / 255.0);
        tol8.push_back(0.5 / maxval + 2 * kFloatEps);
      }
      expect_close(img.pixels, exact, tol_exact, "sample/maxval");
      expect_close(img.pixels, from8, tol8, "8-bit reference");
      EXPECT_EQ(img.pixels[0], 1.0f);
      EXPECT_EQ(img.pixels[1], 0.0f);
    }
  }
}

TEST(Pnm, SixteenBitSamplesAreBigEndian) {
  // 0x1234 and 0xFF00 read little-endian would be 0x3412 and 0x00FF.
  const Image g = decode(bytes_of("P5\n2 1\n65535\n") + Bytes{0x12, 0x34, 0xFF, 0x00}, 1);
  EXPECT_EQ(g.pixels, (std::vector<float>{0x1234 / 65535.0f, 0xFF00 / 65535.0f}));
  const Image c = decode(bytes_of("P6\n1 1\n1023\n") + Bytes{0x03, 0xFF, 0x02, 0x00, 0x00, 0x01}, 3);
  EXPECT_EQ(c.pixels, (std::vector<float>{1.0f, 512 / 1023.0f, 1 / 1023.0f}));
}

TEST(Pnm, MaxvalOutOfRangeIsRefused) {
  EXPECT_EQ(problem(bytes_of("P5\n2 2\n0\nabcd")), "PGM maxval 0 is invalid (must be 1 to 65535)");
  EXPECT_EQ(problem(bytes_of("P6\n1 1\n65536\nabcdef")), "PPM maxval 65536 is invalid (must be 1 to 65535)");
  EXPECT_EQ(problem(bytes_of("P2\n1 1\n0\n0\n")), "PGM maxval 0 is invalid (must be 1 to 65535)");
  EXPECT_EQ(problem(bytes_of("P5\n1 1\n123456789012345678901234567890\nx")),
            "PGM maxval 123456789012345678901234... is invalid (must be 1 to 65535)");
}

TEST(Pnm, SampleOverMaxvalIsRefusedWithItsPixel) {
  // 3x2, the over-range sample last, at (2, 1).
  EXPECT_EQ(problem(bytes_of("P5\n3 2\n200\n") + Bytes{1, 2, 3, 4, 5, 201}),
            "PGM sample 201 at pixel (2, 1) is over maxval 200");
  EXPECT_EQ(problem(bytes_of("P5\n3 2\n1000\n") + Bytes{0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0x03, 0xE9}),
            "PGM sample 1001 at pixel (2, 1) is over maxval 1000");
  EXPECT_EQ(problem(bytes_of("P2\n3 2\n255\n1 2 3\n4 5 300\n")), "PGM sample 300 at pixel (2, 1) is over maxval 255");
  EXPECT_EQ(problem(bytes_of("P6\n2 1\n15\n") + Bytes{1, 2, 3, 4, 16, 6}, 3),
            "PPM green sample 16 at pixel (1, 0) is over maxval 15");
  EXPECT_EQ(problem(bytes_of("P3\n2 1\n15\n1 2 3  4 5 99999999999999\n"), 3),
            "PPM blue sample 99999999999999 at pixel (1, 0) is over maxval 15");
}

TEST(Pnm, CommentsAnywhereInTheHeader) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const std::vector<int> samples = random_samples(rng, 12, 255);
  const Bytes raster = raw_raster(samples, 255);
  const Image want = decode(bytes_of(pnm_header('5', 4, 3, 255)) + raster, 1);
  // A comment runs through the next LF or CR and separates tokens; after the maxval, comments may
  // come before the single whitespace byte that ends the header.
  for (const char* header : {"P5#magic\n4 3 255\n", "P5\n# a line\n#another\r4#w\n3 # h\n255\n",
                             "P5 4\n#\n3\n255#m\n\n", "P5 4 3 255#one\n#two\r ", "P5\n4\n3\n255\t"}) {
    SCOPED_TRACE(header);
    EXPECT_EQ(decode(bytes_of(header) + raster, 1).pixels, want.pixels);
  }
  // Plain rasters: comments between samples are skipped too.
  std::string plain = "P2 4 3 # size\n255\n";
  for (int s : samples) plain += std::to_string(s) + (s % 2 ? " # odd\n" : "\t");
  EXPECT_EQ(decode(bytes_of(plain), 1).pixels, want.pixels);
}

TEST(Pnm, RawHeaderEndsWithExactlyOneWhitespaceByte) {
  // The samples 32 and 10 are a space and an LF: raster data, not more header whitespace.
  EXPECT_EQ(decode(bytes_of("P5\n2 1\n255\n \n"), 1).pixels, (std::vector<float>{32 / 255.0f, 10 / 255.0f}));
  // CR LF after the maxval: the CR ends the header, the LF is the first sample.
  EXPECT_EQ(decode(bytes_of("P5 1 1 255\r\n"), 1).pixels, (std::vector<float>{10 / 255.0f}));
  EXPECT_EQ(problem(bytes_of("P5 1 1 255x")),
            "PGM header: expected one whitespace byte after the maxval, found byte 'x'");
  EXPECT_EQ(problem(bytes_of("P4 8 1")),
            "PBM header truncated: the file ends after the height (one whitespace byte and the raster must follow)");
}

TEST(Pnm, PlainDecodesLikeRaw) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  for (int maxval : {255, 1000}) {
    for (int file_ch : {1, 3}) {
      const int w = rng.integer(3, 12), h = rng.integer(3, 12);
      const std::vector<int> s = random_samples(rng, static_cast<std::size_t>(w * h * file_ch), maxval);
      const char raw = file_ch == 3 ? '6' : '5', plain = file_ch == 3 ? '3' : '2';
      for (int out_ch : {1, 3}) {
        SCOPED_TRACE("maxval " + std::to_string(maxval) + ", P" + plain + " vs P" + raw + ", channels " +
                     std::to_string(out_ch));
        const Image a = decode(pnm_file(raw, w, h, maxval, s, rng), out_ch);
        const Image b = decode(pnm_file(plain, w, h, maxval, s, rng), out_ch);
        EXPECT_EQ(a.width, b.width);
        EXPECT_EQ(a.height, b.height);
        EXPECT_EQ(a.pixels, b.pixels);
        EXPECT_EQ(a.pixels.size(), static_cast<std::size_t>(w * h * out_ch));
      }
    }
  }
}

TEST(Pnm, BitmapsOneIsBlack) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const int w = 13, h = rng.integer(2, 6);  // 13: two bytes per P4 row, three padding bits
  std::vector<int> bits = random_samples(rng, static_cast<std::size_t>(w * h), 1);
  bits[0] = 1, bits[1] = 0;
  std::vector<double> want;
  for (int b : bits) want.push_back(b ? 0.0 : 1.0);
  const std::vector<double> zero_tol(want.size(), 0.0);

  Bytes p4 = bytes_of(pnm_header('4', w, h, 1));
  for (int y = 0; y < h; ++y) {
    for (int byte = 0; byte < 2; ++byte) {
      unsigned v = 0;
      for (int k = 0; k < 8; ++k) {
        const int x = byte * 8 + k;
        const unsigned bit = x < w ? static_cast<unsigned>(bits[static_cast<std::size_t>(y * w + x)])
                                   : static_cast<unsigned>(rng.integer(0, 1));  // padding: don't care
        v |= bit << (7 - k);
      }
      p4.push_back(static_cast<unsigned char>(v));
    }
  }
  expect_close(decode(p4, 1).pixels, want, zero_tol, "P4");

  // Plain: pixels need no separator; rows alternate run together and spaced out.
  std::string p1 = pnm_header('1', w, h, 1);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x)
      p1 += (bits[static_cast<std::size_t>(y * w + x)] ? "1" : "0") + std::string(y % 2 ? " " : "");
    p1 += "\n";
  }
  expect_close(decode(bytes_of(p1), 1).pixels, want, zero_tol, "P1");

  const Image rgb = decode(p4, 3);
  for (std::size_t i = 0; i < bits.size(); ++i) {
    for (int c = 0; c < 3; ++c) ASSERT_EQ(rgb.pixels[i * 3 + c], static_cast<float>(want[i])) << "pixel " << i;
  }
  EXPECT_EQ(problem(bytes_of("P1 2 1 0 2")), "PBM data: expected 0 or 1 at pixel (1, 0), found byte '2'");
}

TEST(Pnm, GreyToRgbAndRgbToGrey) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const int w = rng.integer(3, 10), h = rng.integer(3, 10), maxval = 1000;
  const std::vector<int> grey = random_samples(rng, static_cast<std::size_t>(w * h), maxval);
  const Image g1 = decode(pnm_file('5', w, h, maxval, grey, rng), 1);
  const Image g3 = decode(pnm_file('5', w, h, maxval, grey, rng), 3);
  ASSERT_EQ(g3.pixels.size(), g1.pixels.size() * 3);
  for (std::size_t i = 0; i < g1.pixels.size(); ++i) {
    for (int c = 0; c < 3; ++c) ASSERT_EQ(g3.pixels[i * 3 + c], g1.pixels[i]) << "pixel " << i;
  }

  // BT.601 luma in double from the integer samples. The float result has the three scaled
  // samples, three products and two sums rounded once each, all of magnitude <= 1: within 8 units
  // of float roundoff (the coefficients' own float rounding is within that too).
  const std::vector<int> rgb = random_samples(rng, static_cast<std::size_t>(w * h * 3), maxval);
  const Image luma = decode(pnm_file('6', w, h, maxval, rgb, rng), 1);
  std::vector<double> want, tol;
  for (std::size_t i = 0; i < static_cast<std::size_t>(w * h); ++i) {
    want.push_back((0.299 * rgb[i * 3] + 0.587 * rgb[i * 3 + 1] + 0.114 * rgb[i * 3 + 2]) / maxval);
    tol.push_back(8 * kFloatEps);
  }
  expect_close(luma.pixels, want, tol, "BT.601 luma");
}

TEST(Pnm, TruncatedFilesAreRefusedBeforeAllocating) {
  const std::string header = "P6\n28 28\n255\n";  // 13 bytes, then 28 x 28 x 3 = 2352
  EXPECT_EQ(problem(bytes_of(header) + Bytes(100, 7), 3),
            "PPM data truncated: the header's 28x28 pixels need 2365 bytes, the file has 113");
  EXPECT_EQ(problem(bytes_of("P5\n4 4\n1000\n") + Bytes(31, 0)),  // 16 two-byte samples
            "PGM data truncated: the header's 4x4 pixels need 44 bytes, the file has 43");
  EXPECT_EQ(problem(bytes_of("P4\n9 3\n") + Bytes(5, 0)),
            "PBM data truncated: the header's 9x3 pixels need 13 bytes, the file has 12");
  // Plain: at least a separator and a digit per sample (PBM: a separator, then a digit per pixel).
  EXPECT_EQ(problem(bytes_of("P2 4 4 255\n1 2 3")),
            "PGM data truncated: the header's 4x4 pixels need at least 42 bytes, the file has 16");
  EXPECT_EQ(problem(bytes_of("P1 3 3\n0101")),
            "PBM data truncated: the header's 3x3 pixels need at least 16 bytes, the file has 11");
  // Long enough for that bound, but the samples stop early.
  EXPECT_EQ(problem(bytes_of("P2 2 2 255\n1     2     3      ")),
            "PGM data truncated: the file ends at pixel (1, 1) of 2x2");

  // 20000 x 20000 RGB would be 4.8 GB of floats: nothing near that may be asked for.
  g_largest_allocation = 0;
  EXPECT_EQ(problem(bytes_of("P6\n20000 20000\n255\n") + Bytes(100, 7), 3, 1'000'000'000),
            "PPM data truncated: the header's 20000x20000 pixels need 1200000019 bytes, the file has 119");
  EXPECT_LT(g_largest_allocation.load(), std::size_t{1} << 20);
}

// Every cut of a valid file in each format is refused with an InputError (and reads nothing past
// the cut: run under AddressSanitizer), and the whole file decodes. A plain file cut inside or
// after its last sample may still be valid (a shorter last number, less trailing whitespace).
TEST(Pnm, EveryCutIsRefusedCleanly) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  for (char magic : {'1', '2', '3', '4', '5', '6'}) {
    const Bytes f = any_format_file(magic, rng);
    SCOPED_TRACE(std::string("P") + magic);
    EXPECT_NO_THROW(decode(f, 3));
    std::size_t must_fail = f.size();  // cuts shorter than this are refused
    if (magic <= '3') {
      while (std::isspace(f[must_fail - 1]) != 0) --must_fail;
      while (std::isdigit(f[must_fail - 1]) != 0) --must_fail;
      ++must_fail;  // the first digit of the last sample must be there
    }
    for (std::size_t n = 0; n < f.size(); ++n) {
      const Bytes cut(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(n));
      if (n < must_fail) {
        EXPECT_THROW(decode(cut, 3), InputError) << "cut at " << n;
      } else {
        try {
          decode(cut, 3);
        } catch (const InputError&) {
        }
      }
    }
  }
}

TEST(Pnm, SizeLimitsAndBadNumbers) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Bytes f = pnm_file('5', 100, 100, 255, random_samples(rng, 10000, 255), rng);
  EXPECT_EQ(problem(f, 1, 9999), "PGM image is 100x100 pixels, over the limit of 9999 pixels");
  EXPECT_EQ(decode(f, 1, 10000).pixels.size(), 10000u);
  // Sides over INT_MAX and products over any limit are refused without overflowing.
  EXPECT_EQ(problem(bytes_of("P5\n4294967295 4294967295\n255\n")), "PGM width 4294967295 is too large");
  EXPECT_EQ(problem(bytes_of("P5\n2147483647 2147483647\n255\n"), 1, kMaxPnmPixelLimit),
            "PGM image is 2147483647x2147483647 pixels, over the limit of 1099511627776 pixels");
  EXPECT_EQ(problem(bytes_of("P5\n0 4\n255\n")), "PGM width 0 is invalid (must be at least 1)");
  EXPECT_EQ(problem(bytes_of("P3 4 0 255\n")), "PPM height 0 is invalid (must be at least 1)");
  EXPECT_EQ(problem(bytes_of("P5\n-4 4\n255\n")), "PGM header: expected the width as a decimal number, found byte '-'");
  EXPECT_EQ(problem(bytes_of("P5 4 4")), "PGM header truncated: the file ends before the maxval");
  EXPECT_EQ(problem(bytes_of("P2 2 1 255\n12 x4")),
            "PGM data: expected a decimal sample at pixel (1, 0), found byte 'x'");
  EXPECT_EQ(problem(bytes_of("P2 1 1 255 \xff\xfe")),
            "PGM data: expected a decimal sample at pixel (0, 0), found byte '\\xff'");
  EXPECT_EQ(problem(bytes_of("P7 1 1")), "not a Netpbm image (no magic number P1 to P6)");
  EXPECT_THROW(decode(f, 2), std::invalid_argument);
  EXPECT_THROW(decode(f, 1, 0), std::invalid_argument);
}

TEST(Pnm, OnlyTheFirstImageIsRead) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const std::vector<int> a = random_samples(rng, 6, 255), b = random_samples(rng, 20, 255);
  const Bytes first = pnm_file('5', 3, 2, 255, a, rng);
  const Image alone = decode(first, 1);
  const Image both = decode(first + pnm_file('5', 5, 4, 255, b, rng), 1);
  EXPECT_EQ(both.width, 3);
  EXPECT_EQ(both.height, 2);
  EXPECT_EQ(both.pixels, alone.pixels);
  const Bytes plain = pnm_file('2', 3, 2, 255, a, rng);
  EXPECT_EQ(decode(plain + bytes_of("trailing text"), 1).pixels, alone.pixels);
}

// ---- EXIF ------------------------------------------------------------------------------------

// One IFD entry; `value` is the 4-byte value field's first two bytes (a SHORT) unless `value32`.
struct IfdEntry {
  unsigned tag, type;
  std::uint32_t count, value;
  bool value32 = false;
};

void put16(Bytes& b, unsigned v, bool be) {
  if (be) {
    b.push_back(static_cast<unsigned char>(v >> 8)), b.push_back(static_cast<unsigned char>(v));
  } else {
    b.push_back(static_cast<unsigned char>(v)), b.push_back(static_cast<unsigned char>(v >> 8));
  }
}
void put32(Bytes& b, std::uint32_t v, bool be) {
  put16(b, be ? v >> 16 : v & 0xFFFF, be);
  put16(b, be ? v & 0xFFFF : v >> 16, be);
}

// A TIFF structure as EXIF stores it (TIFF 6.0 section 2): byte order, 42, IFD0 at offset 8 with
// the entries, the next-IFD offset 0, then `tail` (data entries may point at).
Bytes tiff_block(bool be, const std::vector<IfdEntry>& entries, const Bytes& tail = {}) {
  Bytes b = bytes_of(be ? "MM" : "II");
  put16(b, 42, be);
  put32(b, 8, be);
  put16(b, static_cast<unsigned>(entries.size()), be);
  for (const IfdEntry& e : entries) {
    put16(b, e.tag, be);
    put16(b, e.type, be);
    put32(b, e.count, be);
    if (e.value32) {
      put32(b, e.value, be);
    } else {
      put16(b, e.value, be);
      put16(b, 0, be);
    }
  }
  put32(b, 0, be);
  return b + tail;
}

// The usual IFD0 of a camera: Make (ASCII, 6 bytes at an offset), Orientation, XResolution
// (RATIONAL at an offset). Offsets point into the tail after the IFD.
Bytes camera_tiff(bool be, unsigned orientation) {
  const std::uint32_t tail_at = 8 + 2 + 3 * 12 + 4;
  Bytes tail = bytes_of(std::string("Canon\0", 6));
  put32(tail, 72, be);
  put32(tail, 1, be);
  return tiff_block(be, {{0x010F, 2, 6, tail_at, true}, {0x0112, 3, 1, orientation}, {0x011A, 5, 1, tail_at + 6, true}},
                    tail);
}

// An APP1 segment: marker, big-endian length (counting itself), "Exif\0\0", the TIFF structure.
Bytes exif_segment(const Bytes& tiff) {
  const std::size_t length = 2 + 6 + tiff.size();
  Bytes s = {0xFF, 0xE1, static_cast<unsigned char>(length >> 8), static_cast<unsigned char>(length & 0xFF)};
  return s + bytes_of(std::string("Exif\0\0", 6)) + tiff;
}

// A real JPEG of random pixels, from stb_image_write (SOI, then JFIF APP0, tables, SOS...).
Bytes random_jpeg(Random& rng, int w, int h) {
  std::vector<unsigned char> rgb(static_cast<std::size_t>(w * h * 3));
  for (unsigned char& v : rgb) v = static_cast<unsigned char>(rng.integer(0, 255));
  Bytes out;
  const auto sink = [](void* ctx, void* data, int n) {
    auto* o = static_cast<Bytes*>(ctx);
    o->insert(o->end(), static_cast<unsigned char*>(data), static_cast<unsigned char*>(data) + n);
  };
  EXPECT_NE(stbi_write_jpg_to_func(sink, &out, w, h, 3, rgb.data(), 90), 0);
  return out;
}

Bytes insert_at(const Bytes& file, std::size_t at, const Bytes& segment) {
  Bytes out(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(at));
  return out + segment + Bytes(file.begin() + static_cast<std::ptrdiff_t>(at), file.end());
}

int orientation_of(const Bytes& file) {
  const Exact e(file);
  return jpeg_orientation(e.data.get(), e.size);
}

// Decoded with stb_image: a spliced file must still be a JPEG with the same pixels.
Bytes stb_pixels(const Bytes& jpeg) {
  int w = 0, h = 0, n = 0;
  unsigned char* p = stbi_load_from_memory(jpeg.data(), static_cast<int>(jpeg.size()), &w, &h, &n, 3);
  if (p == nullptr) return {};
  Bytes out(p, p + static_cast<std::ptrdiff_t>(w) * h * 3);
  stbi_image_free(p);
  return out;
}

TEST(Exif, OrientationOfARealJpegInBothByteOrders) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Bytes jpeg = random_jpeg(rng, rng.integer(5, 20), rng.integer(5, 20));
  ASSERT_GT(jpeg.size(), 20u);
  ASSERT_EQ(jpeg[2], 0xFF);
  ASSERT_EQ(jpeg[3], 0xE0);  // stb writes JFIF APP0 first
  const std::size_t after_app0 = 4 + (std::size_t{jpeg[4]} << 8 | jpeg[5]);
  const Bytes pixels = stb_pixels(jpeg);
  ASSERT_FALSE(pixels.empty());
  EXPECT_EQ(orientation_of(jpeg), 1);
  for (bool be : {false, true}) {
    for (unsigned o = 1; o <= 8; ++o) {
      SCOPED_TRACE(std::string(be ? "MM" : "II") + " orientation " + std::to_string(o));
      const Bytes seg = exif_segment(camera_tiff(be, o));
      const Bytes after_soi = insert_at(jpeg, 2, seg);
      EXPECT_EQ(orientation_of(after_soi), static_cast<int>(o));
      EXPECT_EQ(stb_pixels(after_soi), pixels);
      EXPECT_EQ(orientation_of(insert_at(jpeg, after_app0, seg)), static_cast<int>(o));
    }
  }
  // Another APP1 (XMP) before the Exif one is passed over.
  const Bytes xmp_text = bytes_of(std::string("http://ns.adobe.com/xap/1.0/\0<x/>", 33));
  const Bytes xmp = Bytes{0xFF, 0xE1, 0, static_cast<unsigned char>(2 + xmp_text.size())} + xmp_text;
  EXPECT_EQ(orientation_of(insert_at(jpeg, 2, xmp + exif_segment(camera_tiff(true, 6)))), 6);
  // Fill bytes before a marker are allowed (ITU T.81, B.1.1.2).
  EXPECT_EQ(orientation_of(insert_at(jpeg, 2, Bytes{0xFF, 0xFF} + exif_segment(camera_tiff(false, 8)))), 8);
}

TEST(Exif, NothingAfterStartOfScanIsRead) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Bytes jpeg = random_jpeg(rng, 8, 8);
  const Bytes seg = exif_segment(camera_tiff(false, 6));
  EXPECT_EQ(orientation_of(jpeg + seg), 1);  // after EOI
  // Right after the SOS marker's segment: inside the scan.
  std::size_t sos = 0;
  for (std::size_t i = 2; i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA) {
      sos = i;
      break;
    }
  }
  ASSERT_NE(sos, 0u);
  const std::size_t scan = sos + 2 + (std::size_t{jpeg[sos + 2]} << 8 | jpeg[sos + 3]);
  EXPECT_EQ(orientation_of(insert_at(jpeg, scan, seg)), 1);
  EXPECT_EQ(orientation_of(bytes_of("\x89PNG\r\n\x1a\n")), 1);
  EXPECT_EQ(orientation_of({}), 1);
}

struct HostileCase {
  std::string what;
  std::function<Bytes(bool be)> file;  // a whole JPEG prefix: SOI and segments
};

Bytes soi_plus(const Bytes& rest) { return Bytes{0xFF, 0xD8} + rest + Bytes{0xFF, 0xD9}; }

void PrintTo(const HostileCase& c, std::ostream* os) { *os << c.what; }

class ExifHostile : public ::testing::TestWithParam<HostileCase> {};

TEST_P(ExifHostile, MeansNoOrientation) {
  for (bool be : {false, true}) {
    SCOPED_TRACE(be ? "MM" : "II");
    EXPECT_EQ(orientation_of(GetParam().file(be)), 1);
  }
}

// IFD0's offset set to `offset`, or when `from_end` to the TIFF structure's size minus `offset`.
Bytes with_ifd_offset(bool be, std::uint32_t offset, bool from_end = false) {
  Bytes tiff = camera_tiff(be, 6);
  Bytes field;
  put32(field, from_end ? static_cast<std::uint32_t>(tiff.size()) - offset : offset, be);
  std::copy(field.begin(), field.end(), tiff.begin() + 4);
  return soi_plus(exif_segment(tiff));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ExifHostile,
    ::testing::Values(
        HostileCase{"IFD offset past the segment", [](bool be) { return with_ifd_offset(be, 0xFFFFFFF0u); }},
        HostileCase{"IFD offset at the segment end", [](bool be) { return with_ifd_offset(be, 0, true); }},
        HostileCase{"IFD count one byte short", [](bool be) { return with_ifd_offset(be, 1, true); }},
        HostileCase{"entry count 0xFFFF",
                    [](bool be) {
                      Bytes tiff = camera_tiff(be, 6);
                      tiff[8] = tiff[9] = 0xFF;
                      return soi_plus(exif_segment(tiff));
                    }},
        HostileCase{"orientation as a LONG",
                    [](bool be) {
                      return soi_plus(exif_segment(tiff_block(be, {{0x0112, 4, 1, 6, true}})));
                    }},
        HostileCase{"orientation count 2",
                    [](bool be) {
                      return soi_plus(exif_segment(tiff_block(be, {{0x0112, 3, 2, 6}})));
                    }},
        HostileCase{"orientation 0", [](bool be) { return soi_plus(exif_segment(camera_tiff(be, 0))); }},
        HostileCase{"orientation 9", [](bool be) { return soi_plus(exif_segment(camera_tiff(be, 9))); }},
        HostileCase{"TIFF magic 43",
                    [](bool be) {
                      Bytes tiff = camera_tiff(be, 6);
                      tiff[be ? 3 : 2] = 43;
                      return soi_plus(exif_segment(tiff));
                    }},
        HostileCase{"byte order IM",
                    [](bool be) {
                      Bytes tiff = camera_tiff(be, 6);
                      tiff[0] = 'I', tiff[1] = 'M';
                      return soi_plus(exif_segment(tiff));
                    }},
        HostileCase{"TIFF header cut to 7 bytes",
                    [](bool be) {
                      const Bytes tiff = camera_tiff(be, 6);
                      return soi_plus(exif_segment(Bytes(tiff.begin(), tiff.begin() + 7)));
                    }},
        HostileCase{"Exif without TIFF", [](bool) { return soi_plus(exif_segment({})); }},
        HostileCase{"Exif id cut short",
                    [](bool) {
                      return soi_plus(Bytes{0xFF, 0xE1, 0, 7, 'E', 'x', 'i', 'f', 0});
                    }},
        HostileCase{"segment length 0",
                    [](bool be) {
                      Bytes s = exif_segment(camera_tiff(be, 6));
                      s[2] = s[3] = 0;
                      return soi_plus(s);
                    }},
        HostileCase{"segment length 1",
                    [](bool be) {
                      Bytes s = exif_segment(camera_tiff(be, 6));
                      s[2] = 0, s[3] = 1;
                      return soi_plus(s);
                    }},
        HostileCase{"segment length past the file",
                    [](bool be) {
                      Bytes s = exif_segment(camera_tiff(be, 6));
                      s[2] = 0xFF, s[3] = 0xFF;
                      return Bytes{0xFF, 0xD8} + s;
                    }},
        // The file holds the whole IFD, but the segment's length ends inside the orientation
        // entry: reading by the file's size instead of the segment's would find 6.
        HostileCase{"IFD past the segment, inside the file",
                    [](bool be) {
                      Bytes s = exif_segment(camera_tiff(be, 6));
                      const std::size_t length = 2 + 6 + 8 + 2 + 12 + 9;
                      s[2] = 0, s[3] = static_cast<unsigned char>(length);
                      return Bytes{0xFF, 0xD8} + s;
                    }},
        HostileCase{"marker 0xFF00",
                    [](bool be) {
                      return Bytes{0xFF, 0xD8, 0xFF, 0x00} + exif_segment(camera_tiff(be, 6));
                    }},
        HostileCase{"not a marker",
                    [](bool be) {
                      return Bytes{0xFF, 0xD8, 0x12} + exif_segment(camera_tiff(be, 6));
                    }},
        HostileCase{"no SOI", [](bool be) { return exif_segment(camera_tiff(be, 6)); }}),
    CaseName{});

// Every prefix of a JPEG with an Exif segment: 1 until the segment is whole, then its orientation;
// nothing read past the end (run under AddressSanitizer).
TEST(Exif, EveryPrefixIsSafe) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  for (bool be : {false, true}) {
    const Bytes seg = exif_segment(camera_tiff(be, 7));
    const Bytes file = insert_at(random_jpeg(rng, 8, 8), 2, seg);
    for (std::size_t n = 0; n <= file.size(); ++n) {
      const int want = n >= 2 + seg.size() ? 7 : 1;
      ASSERT_EQ(orientation_of(Bytes(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(n))), want)
          << "prefix " << n;
    }
  }
}

// Random corruption of the first bytes: any answer is in 1..8 and nothing is read out of bounds.
TEST(Exif, CorruptedSegmentsAreSafe) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Bytes file = insert_at(random_jpeg(rng, 8, 8), 2, exif_segment(camera_tiff(rng.integer(0, 1) == 1, 3)));
  for (int i = 0; i < 3000; ++i) {
    Bytes f = file;
    const int flips = rng.integer(1, 4);
    for (int k = 0; k < flips; ++k)
      f[static_cast<std::size_t>(rng.integer(0, 100))] = static_cast<unsigned char>(rng.integer(0, 255));
    const int o = orientation_of(f);
    ASSERT_GE(o, 1);
    ASSERT_LE(o, 8);
  }
}

// ---- apply_orientation -----------------------------------------------------------------------

// Where displayed pixel (dx, dy) comes from in the stored W x H image, written from the TIFF 6.0
// definitions ("the 0th row represents the visual ..., the 0th column represents the visual ...").
// Orientation 6 as the worked case: stored row 0 is the displayed right-hand side, so stored row
// sy is displayed column H-1-sy, i.e. sy = H-1-dx; stored column 0 is the displayed top, so stored
// column sx is displayed row sx, i.e. sx = dy. Displayed (dx, dy) = stored (dy, H-1-dx), and the
// display is H wide and W high: a 90 degree clockwise rotation. The others follow the same way.
void stored_source(int orientation, int W, int H, int dx, int dy, int& sx, int& sy) {
  switch (orientation) {
    case 1: sx = dx, sy = dy; break;                  // row 0 top,    column 0 left
    case 2: sx = W - 1 - dx, sy = dy; break;          // row 0 top,    column 0 right
    case 3: sx = W - 1 - dx, sy = H - 1 - dy; break;  // row 0 bottom, column 0 right
    case 4: sx = dx, sy = H - 1 - dy; break;          // row 0 bottom, column 0 left
    case 5: sx = dy, sy = dx; break;                  // row 0 left,   column 0 top
    case 6: sx = dy, sy = H - 1 - dx; break;          // row 0 right,  column 0 top
    case 7: sx = W - 1 - dy, sy = H - 1 - dx; break;  // row 0 right,  column 0 bottom
    case 8: sx = W - 1 - dy, sy = dx; break;          // row 0 left,   column 0 bottom
    default: FAIL() << "orientation " << orientation;
  }
}

TEST(Orientation, EachMatchesTheSpecOnANonSquareImage) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  for (int ch : {1, 3}) {
    Image img;
    img.width = rng.integer(4, 9);
    img.height = img.width + rng.integer(1, 5);
    img.channels = ch;
    img.pixels = rng.vector(static_cast<std::size_t>(img.width * img.height * ch), 0.01f, 1.0f);
    for (int o = 1; o <= 8; ++o) {
      SCOPED_TRACE("orientation " + std::to_string(o) + ", channels " + std::to_string(ch));
      const Image out = apply_orientation(img, o);
      const bool swapped = o >= 5;
      ASSERT_EQ(out.width, swapped ? img.height : img.width);
      ASSERT_EQ(out.height, swapped ? img.width : img.height);
      ASSERT_EQ(out.channels, ch);
      ASSERT_EQ(out.pixels.size(), img.pixels.size());
      for (int dy = 0; dy < out.height; ++dy) {
        for (int dx = 0; dx < out.width; ++dx) {
          int sx = -1, sy = -1;
          stored_source(o, img.width, img.height, dx, dy, sx, sy);
          for (int c = 0; c < ch; ++c) {
            ASSERT_EQ(out.pixels[static_cast<std::size_t>((dy * out.width + dx) * ch + c)],
                      img.pixels[static_cast<std::size_t>((sy * img.width + sx) * ch + c)])
                << "displayed (" << dx << ", " << dy << ")";
          }
        }
      }
    }
  }
}

TEST(Orientation, HandWorkedGoldens) {
  // Stored 3 x 2:   1 2 3      6 (90 CW):  4 1      8 (90 CCW):  3 6      5 (transpose):  1 4
  //                 4 5 6                  5 2                   2 5                      2 5
  //                                        6 3                   1 4                      3 6
  Image img{3, 2, 1, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}};
  const Image r6 = apply_orientation(img, 6), r8 = apply_orientation(img, 8), r5 = apply_orientation(img, 5);
  EXPECT_EQ(r6.pixels, (std::vector<float>{0.4f, 0.1f, 0.5f, 0.2f, 0.6f, 0.3f}));
  EXPECT_EQ(r8.pixels, (std::vector<float>{0.3f, 0.6f, 0.2f, 0.5f, 0.1f, 0.4f}));
  EXPECT_EQ(r5.pixels, (std::vector<float>{0.1f, 0.4f, 0.2f, 0.5f, 0.3f, 0.6f}));
  EXPECT_EQ(r6.width, 2);
  EXPECT_EQ(r6.height, 3);
  // 2 (mirror) then 4 (flip) is 3 (rotate 180); 6 then 8 is the identity.
  EXPECT_EQ(apply_orientation(apply_orientation(img, 2), 4).pixels, apply_orientation(img, 3).pixels);
  EXPECT_EQ(apply_orientation(r6, 8).pixels, img.pixels);
  EXPECT_THROW(apply_orientation(img, 0), std::invalid_argument);
  EXPECT_THROW(apply_orientation(img, 9), std::invalid_argument);
  img.pixels.pop_back();
  EXPECT_THROW(apply_orientation(img, 2), std::invalid_argument);
}

}  // namespace
}  // namespace infer::test
