// Hostile input files end to end (issue 11): special files, files too large to read, decompression
// bombs and truncated files that claim large pictures, format variants (interlaced PNG, top-down
// BMP, run-length TGA, JPEG variants), and names that would break a line. Each case is run through
// the infer executable as a user runs it: one clear line, exit 3, the other images still classified,
// and memory bounded by what the header's dimensions need, not by what the file claims.
#include <gtest/gtest.h>
#include <stb_image_write.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include <nlohmann/json.hpp>

#include "image/load_image.h"
#include "tests/support/model_cases.h"
#include "tests/support/png_writer.h"
#include "tests/support/process.h"
#include "tests/support/sanitizer.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

namespace fs = std::filesystem;

const std::string kSamples = test_file("samples");
const std::string kBag = kSamples + "/bag.png";

ProcessResult infer(std::vector<std::string> args) {
  args.insert(args.begin(), {"--device", "cpu"});
  return run_process(infer_exe(), args);
}

// Runs infer on `bad` followed by bag.png: exit 3, the first stderr line names `bad` and contains
// `message`, the bag is still classified.
ProcessResult expect_refused(const std::string& bad, const std::string& message) {
  const ProcessResult r = infer({bad, kBag});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const std::vector<std::string> lines = ProcessResult::lines(r.err);
  EXPECT_EQ(lines.size(), 2u) << r.err;
  if (!lines.empty()) {
    EXPECT_EQ(lines[0].rfind("infer: " + bad + ": ", 0), 0u) << lines[0];
    EXPECT_NE(lines[0].find(message), std::string::npos) << lines[0];
  }
  EXPECT_NE(r.out.find("bag.png: Bag"), std::string::npos) << r.out;
  return r;
}

// The top class and its probability, from one --json line.
std::pair<std::string, double> top1(const std::string& json_line) {
  const nlohmann::json j = nlohmann::json::parse(json_line);
  return {j["top"][0]["label"].get<std::string>(), j["top"][0]["prob"].get<double>()};
}

// The picture of a 28x28 grey sample as 8-bit rows, decoded by infer's own reader.
std::vector<std::string> sample_rows(const std::string& name) {
  const Image img = load_image(kSamples + "/" + name, 1);
  std::vector<std::string> rows(static_cast<std::size_t>(img.height));
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      rows[static_cast<std::size_t>(y)] +=
          static_cast<char>(std::lround(img.pixels[static_cast<std::size_t>(y * img.width + x)] * 255.0f));
    }
  }
  return rows;
}

std::string joined(const std::vector<std::string>& rows) {
  std::string all;
  for (const std::string& r : rows) all += r;
  return all;
}

// stb_image_write's output, in memory.
using Writer = int (*)(stbi_write_func*, void*, int, int, int, const void*);
std::string written(Writer write, int w, int h, int channels, const std::string& pixels) {
  std::string out;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
  };
  write(append, &out, w, h, channels, pixels.data());
  return out;
}

std::string write(const TempDir& dir, const std::string& name, const std::string& bytes) {
  write_file(dir / name, bytes);
  return (dir / name).string();
}

// --- special files and sizes (item 3) ------------------------------------------------------------

TEST(HostileFiles, SpecialFilesAreRefusedWithoutBlockingOrReadingThem) {
  TempDir dir;
  const std::string fifo = (dir / "x.png").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  expect_refused(fifo, "is a FIFO, not a regular file");  // blocked forever in open() before

  fs::create_symlink("/dev/zero", dir / "zero.png");
  const ProcessResult zero = expect_refused((dir / "zero.png").string(), "is a character device, not a regular file");

  // 600 MB that read as zeros: refused from its size, not read (1 GB resident before).
  const std::string sparse = (dir / "sparse.png").string();
  write_file(sparse, "");
  fs::resize_file(sparse, 600ull << 20);
  const ProcessResult big = expect_refused(sparse, "file is 600 MiB, over the limit of 256 MiB for an image");
  const ProcessResult baseline = infer({kBag});
  EXPECT_LT(big.max_rss_kib, baseline.max_rss_kib + 32 * 1024) << "peak RSS in KiB, baseline " << baseline.max_rss_kib;
}

TEST(HostileFiles, ASymbolicLinkLoopIsNamedAsOne) {
  TempDir dir;
  fs::create_symlink(dir / "b.png", dir / "a.png");
  fs::create_symlink(dir / "a.png", dir / "b.png");
  expect_refused((dir / "a.png").string(), "symbolic link loop");
}

TEST(HostileFiles, AFolderWithoutSearchPermissionIsNamedAsThat) {
  TempDir dir;
  fs::create_directories(dir / "locked");
  fs::copy_file(kBag, dir / "locked" / "bag.png");
  fs::permissions(dir / "locked", fs::perms::none);
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  const std::string bad = (dir / "locked" / "bag.png").string();
  ProcessResult r;
  if (geteuid() == 0) {
    // Root reads through any permission: as root, run infer as nobody. The build may sit under a
    // folder that nobody cannot enter (/root, a 0700 CI work folder), so nobody runs a copy of what
    // infer needs, laid out as it is installed (bin/infer, share/infer/), in this 0755 folder.
    const fs::path prefix = dir / "prefix";
    fs::create_directories(prefix / "bin");
    fs::copy_file(infer_exe(), prefix / "bin" / "infer");
    fs::copy(fs::path(infer_exe()).parent_path().parent_path() / "share", prefix / "share",
             fs::copy_options::recursive);
    fs::copy_file(kBag, dir / "bag.png");
    const std::vector<std::string> args = {"--reuid=65534",
                                           "--regid=65534",
                                           "--clear-groups",
                                           (prefix / "bin" / "infer").string(),
                                           "--device",
                                           "cpu",
                                           bad,
                                           (dir / "bag.png").string()};
    // The same for the sanitizer build's suppressions file (LSAN_OPTIONS=suppressions=...): LeakSanitizer
    // reads it at exit and ends the process (exit 1) when it cannot.
    std::vector<std::string> env;
    if (const char* lsan = std::getenv("LSAN_OPTIONS")) {
      std::string options = lsan;
      const std::string key = "suppressions=";
      const std::size_t at = options.find(key);
      if (at != std::string::npos) {
        const std::size_t end = options.find(':', at);
        const std::string file =
            options.substr(at + key.size(), end == std::string::npos ? end : end - at - key.size());
        fs::copy_file(file, dir / "lsan.supp");
        options.replace(at, (end == std::string::npos ? options.size() : end) - at, key + (dir / "lsan.supp").string());
      }
      env.push_back("LSAN_OPTIONS=" + options);
    }
    r = run_process("/usr/bin/setpriv", args, env);
  } else {
    r = infer({bad, kBag});
  }
  fs::permissions(dir / "locked", fs::perms::owner_all);  // so that TempDir can remove it
  EXPECT_EQ(r.exit_code, 3) << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(ProcessResult::lines(r.err).at(0),
            "infer: " + bad + ": permission denied (a folder on the path cannot be searched)");
  EXPECT_NE(r.out.find("bag.png: Bag"), std::string::npos) << r.out;
}

TEST(HostileFiles, WhenEveryInputFailsTheSummarySaysNoneWasClassified) {
  TempDir dir;
  const ProcessResult r = infer({write(dir, "a.png", "not an image"), (dir / "missing.png").string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(ProcessResult::lines(r.err).back(), "infer: 2 of 2 inputs failed; none was classified");
}

// --- PNG decompression bombs (item 4) --------------------------------------------------------------

TEST(HostileFiles, APngBombIsRefusedBeforeItInflates) {
  TempDir dir;
  // 1x1 pixels, about 1 MB of file, 1 GiB of image data: classified at 1.06 GB resident before.
  const std::string bomb = write(dir, "bomb.png", png_bomb(1, 1, 1ull << 30));
  const ProcessResult r =
      expect_refused(bomb, "PNG image data inflates to more than the 2 bytes that its 1x1 pixels need");
  const ProcessResult baseline = infer({kBag});
  // The bomb's file is read (1 MB) and inflated through a 64 KiB buffer.
  EXPECT_LT(r.max_rss_kib, baseline.max_rss_kib + 16 * 1024) << "peak RSS in KiB, baseline " << baseline.max_rss_kib;
}

TEST(HostileFiles, PngDataOneByteLongerThanItsRowsIsRefused) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  TempDir dir;
  std::string raw;
  for (int y = 0; y < 28; ++y) {
    raw += '\0';
    for (int x = 0; x < 28; ++x) raw += static_cast<char>(rng.integer(0, 255));
  }
  const std::string exact = write(dir, "exact.png", png_from_raw(28, 28, 8, 0, false, raw));
  EXPECT_EQ(infer({exact}).exit_code, 0);
  expect_refused(write(dir, "longer.png", png_from_raw(28, 28, 8, 0, false, raw + '\0')),
                 "inflates to more than the 812 bytes that its 28x28 pixels need");
}

// The bound for interlaced images counts Adam7's seven reduced images, each row with a filter byte.
TEST(HostileFiles, InterlacedPngsDecodeLikeTheSamePictureNotInterlaced) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  TempDir dir;
  for (const auto& [w, h] : std::vector<std::pair<std::uint32_t, std::uint32_t>>{{28, 28}, {37, 23}, {5, 3}, {1, 9}}) {
    for (const int channels : {1, 3}) {
      std::vector<std::string> rows(h);
      for (std::string& row : rows) {
        for (std::uint32_t x = 0; x < w * static_cast<std::uint32_t>(channels); ++x) {
          row += static_cast<char>(rng.integer(0, 255));
        }
      }
      const int colour = channels == 1 ? 0 : 2;
      const std::string plain = write(dir, "plain.png", encode_png(w, h, 8, colour, rows));
      const std::string adam7 =
          write(dir, "adam7.png", encode_png_interlaced(w, h, 8, colour, rows, static_cast<std::size_t>(channels)));
      const ProcessResult a = infer({"--json", plain}), b = infer({"--json", adam7});
      ASSERT_EQ(a.exit_code, 0) << a.err;
      ASSERT_EQ(b.exit_code, 0) << w << "x" << h << " channels " << channels << ": " << b.err;
      EXPECT_EQ(top1(a.out), top1(b.out)) << w << "x" << h << " channels " << channels;
    }
  }
}

// --- truncated files that claim large pictures (item 5) --------------------------------------------

TEST(HostileFiles, RunLengthTgaCutShortIsRefused) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  TempDir dir;
  // A 3 KB file claiming 7000x7000 grey pixels in run-length packets: decoded as zeros at 588 MB before.
  std::string tga("\0\0\x0b\0\0\0\0\0\0\0\0\0", 12);
  tga += std::string("\x58\x1b\x58\x1b\x08\0", 6);  // 7000 x 7000, 8 bits per pixel, descriptor 0
  for (int i = 0; i < 1500; ++i)
    tga += {static_cast<char>(0x80 | rng.integer(0, 127)), static_cast<char>(rng.integer(0, 255))};
  const ProcessResult r =
      expect_refused(write(dir, "claims.tga", tga), "run-length TGA data truncated: the header's 7000x7000 pixels");
  const ProcessResult baseline = infer({kBag});
  // Under AddressSanitizer freed memory is held in its quarantine (256 MB by default) instead of
  // being reused, so a run's peak RSS adds up every buffer it ever freed (the decoders' legitimate
  // ones for up to 32 files): it measures the quarantine, not the decoders. The release build
  // (CI stage 1) checks the bound; the sanitizer build checks everything else here.
  if (!INFER_TEST_ASAN) {
    EXPECT_LT(r.max_rss_kib, baseline.max_rss_kib + 16 * 1024) << "peak RSS in KiB, baseline " << baseline.max_rss_kib;
  }

  // A real run-length TGA of a sample classifies as the PNG does; cut short, it is refused.
  const std::string trouser = joined(sample_rows("trouser.png"));
  stbi_write_tga_with_rle = 1;
  const std::string rle = written(stbi_write_tga_to_func, 28, 28, 1, trouser);
  EXPECT_EQ(rle[2], '\x0b');  // run-length grey
  EXPECT_EQ(top1(infer({"--json", write(dir, "t.tga", rle)}).out),
            top1(infer({"--json", kSamples + "/trouser.png"}).out));
  expect_refused(write(dir, "cut.tga", rle.substr(0, rle.size() / 2)), "run-length TGA data truncated");
  stbi_write_tga_with_rle = 0;
  const std::string raw = written(stbi_write_tga_to_func, 28, 28, 1, trouser);
  expect_refused(write(dir, "cut-raw.tga", raw.substr(0, raw.size() - 28)),
                 "TGA data truncated: the header's 28x28 pixels need 784 bytes");
  stbi_write_tga_with_rle = 1;
}

// --- BMP (item 6) ----------------------------------------------------------------------------------

TEST(HostileFiles, TopDownBmpClassifiesAsTheBottomUpOne) {
  TempDir dir;
  const std::vector<std::string> rows = sample_rows("ankle-boot.png");
  std::string rgb;
  for (char v : joined(rows)) rgb += std::string(3, v);
  const std::string bottom_up = written(stbi_write_bmp_to_func, 28, 28, 3, rgb);
  // stb writes BITMAPINFOHEADER (40 bytes), 24 bits, rows of 84 bytes from the bottom, at offset 54.
  ASSERT_EQ(bottom_up.size(), 54u + 28u * 84u);
  std::string top_down = bottom_up.substr(0, 54);
  for (int y = 27; y >= 0; --y) top_down += bottom_up.substr(54 + static_cast<std::size_t>(y) * 84, 84);
  const std::int32_t negative = -28;
  std::memcpy(top_down.data() + 22, &negative, 4);  // little-endian, as this machine
  const ProcessResult a = infer({"--json", write(dir, "up.bmp", bottom_up)});
  const ProcessResult b = infer({"--json", write(dir, "down.bmp", top_down)});
  ASSERT_EQ(b.exit_code, 0) << b.err;  // refused as "28x-28 pixels" before
  EXPECT_EQ(top1(a.out).first, "Ankle boot");
  EXPECT_EQ(top1(a.out), top1(b.out));
  expect_refused(write(dir, "cut.bmp", top_down.substr(0, 54 + 84 * 10)),
                 "BMP data truncated: the header's 28x28 pixels");
}

// --- messages (item 8) -----------------------------------------------------------------------------

TEST(HostileFiles, AGifWithoutAFrameSaysSo) {
  TempDir dir;
  // Header, logical screen 4x4 without a colour table, then the trailer: no image at all.
  const std::string gif = std::string("GIF89a\x04\0\x04\0\0\0\0", 13) + ";";
  expect_refused(write(dir, "empty.gif", gif), "cannot decode image: the GIF has no image frame");
}

TEST(HostileFiles, UnsupportedJpegVariantsAreNamed) {
  TempDir dir;
  const std::string jpeg = slurp(kSamples + "/photo-sneaker.jpg");
  const std::size_t sof = jpeg.find("\xff\xc0");
  ASSERT_NE(sof, std::string::npos);
  auto variant = [&](char marker, char precision) {
    std::string v = jpeg;
    v[sof + 1] = marker;
    v[sof + 4] = precision;
    return v;
  };
  expect_refused(write(dir, "arith.jpg", variant('\xc9', 8)), "unsupported JPEG variant (arithmetic-coded)");
  expect_refused(write(dir, "deep.jpg", variant('\xc1', 12)), "unsupported JPEG variant (12-bit)");
  expect_refused(write(dir, "lossless.jpg", variant('\xc3', 8)), "unsupported JPEG variant (lossless)");
}

// --- names that would break a line (item 9) --------------------------------------------------------

TEST(HostileFiles, ControlCharactersInNamesAreEscapedOnEveryLine) {
  TempDir dir;
  const std::string good = (dir / "a\nb\x1b[31m.png").string();
  fs::copy_file(kBag, good);
  const std::string bad = write(dir, "c\rd\x1b]0;title\x07.png", "not an image");
  const ProcessResult r = infer({good, bad});
  EXPECT_EQ(r.exit_code, 3);
  const std::vector<std::string> out = r.out_lines(), err = ProcessResult::lines(r.err);
  ASSERT_EQ(out.size(), 1u) << r.out;
  EXPECT_EQ(out[0].rfind((dir / "a\\x0ab\\x1b[31m.png: Bag").string(), 0), 0u) << out[0];
  ASSERT_EQ(err.size(), 2u) << r.err;
  EXPECT_EQ(err[0].rfind("infer: " + (dir / "c\\x0dd\\x1b]0;title\\x07.png: not a supported image").string(), 0), 0u)
      << err[0];
  for (const std::string& text : {r.out, r.err}) {
    EXPECT_EQ(text.find_first_of("\r\x1b\x07"), std::string::npos) << text;
  }
}

// RFC 4648 base64, decoded independently of infer's encoder.
std::string from_base64(const std::string& text) {
  const std::string digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    if (c == '=') break;
    bits = bits << 6 | static_cast<std::uint32_t>(digits.find(c));
    if ((count += 6) >= 8) out += static_cast<char>(bits >> (count -= 8) & 0xff);
  }
  return out;
}

TEST(HostileFiles, ANameThatIsNotUtf8IsCarriedWholeInJson) {
  TempDir dir;
  const std::string good = (dir / "caf\xe9.png").string();  // Latin-1, not UTF-8
  fs::copy_file(kBag, good);
  const std::string bad = write(dir, "\xff\xfe.png", "not an image");
  const ProcessResult r = infer({"--json", good, bad, kBag});
  const std::vector<std::string> lines = r.out_lines();
  ASSERT_EQ(lines.size(), 3u) << r.out;
  for (const auto& [line, name] : std::vector<std::pair<std::string, std::string>>{{lines[0], good}, {lines[1], bad}}) {
    const nlohmann::json j = nlohmann::json::parse(line);
    ASSERT_TRUE(j.contains("file_bytes")) << line;
    EXPECT_EQ(from_base64(j["file_bytes"].get<std::string>()), name);
  }
  EXPECT_FALSE(nlohmann::json::parse(lines[2]).contains("file_bytes"));  // a UTF-8 name needs none
}

// --- Netpbm maxval and plain files (item 7) ---------------------------------------------------------

std::string netpbm(const char* magic, int maxval, const std::vector<std::string>& rows, bool plain) {
  std::string out = std::string(magic) + "\n# made by test_hostile_files\n28 28\n" + std::to_string(maxval) + "\n";
  for (const std::string& row : rows) {
    for (const char v : row) {
      const long sample = std::lround(static_cast<unsigned char>(v) * maxval / 255.0);
      if (plain) {
        out += std::to_string(sample) + (&v == &row.back() ? "\n" : " ");
      } else if (maxval > 255) {
        out += {static_cast<char>(sample >> 8), static_cast<char>(sample & 0xff)};
      } else {
        out += static_cast<char>(sample);
      }
    }
  }
  return out;
}

TEST(HostileFiles, NetpbmSamplesAreScaledByMaxvalAndPlainFilesAreRead) {
  TempDir dir;
  const std::vector<std::string> rows = sample_rows("trouser.png");
  const auto reference = top1(infer({"--json", kSamples + "/trouser.png"}).out);
  ASSERT_EQ(reference.first, "Trouser");
  // The same samples as text (P2): the same pixels, so the same probability.
  EXPECT_EQ(top1(infer({"--json", write(dir, "plain.pgm", netpbm("P2", 255, rows, true))}).out), reference);
  // Other maxvals: the picture quantised to maxval + 1 levels; read unscaled (as 1/65535 or 1/255
  // steps) it was nearly black before.
  for (const int maxval : {15, 1023, 65535}) {
    for (const bool plain : {false, true}) {
      const ProcessResult r = infer({"--json", write(dir, "m.pgm", netpbm(plain ? "P2" : "P5", maxval, rows, plain))});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(top1(r.out).first, "Trouser") << "maxval " << maxval << (plain ? " plain" : " raw");
    }
  }
  // Colour, as text (P3): each grey sample three times.
  std::vector<std::string> rgb_rows;
  for (const std::string& row : rows) {
    std::string rgb;
    for (const char v : row) rgb += std::string(3, v);
    rgb_rows.push_back(rgb);
  }
  // Grey from three equal samples is 0.299 v + 0.587 v + 0.114 v: v within a few float roundings.
  const auto colour = top1(infer({"--json", write(dir, "plain.ppm", netpbm("P3", 255, rgb_rows, true))}).out);
  EXPECT_EQ(colour.first, reference.first);
  EXPECT_NEAR(colour.second, reference.second, 1e-4);
  std::string zero = netpbm("P5", 255, rows, false);
  zero.replace(zero.find("\n255\n"), 5, "\n0\n");
  expect_refused(write(dir, "zero.pgm", zero), "PGM maxval 0 is invalid");
}

// --- EXIF orientation (item 12) ---------------------------------------------------------------------

// APP1 with an EXIF IFD0 holding one entry, Orientation (0x0112, SHORT) = `orientation`, little-endian.
std::string exif_segment(int orientation) {
  std::string tiff("II*\0\x08\0\0\0", 8);                                              // header, IFD0 at 8
  tiff += std::string("\x01\0\x12\x01\x03\0\x01\0\0\0", 10);                           // 1 entry: tag, type, count
  tiff += {static_cast<char>(orientation), '\0', '\0', '\0', '\0', '\0', '\0', '\0'};  // value, no next IFD
  const std::string payload = std::string("Exif\0\0", 6) + tiff;
  const std::size_t length = payload.size() + 2;
  return std::string("\xff\xe1", 2) + static_cast<char>(length >> 8) + static_cast<char>(length & 0xff) + payload;
}

TEST(HostileFiles, AJpegIsTurnedAsItsExifOrientationSays) {
  TempDir dir;
  // The trouser stored on its side, as a phone stores a portrait photo: orientation 6 says "turn the
  // stored picture 90 degrees clockwise to show it", so displayed (x, y) = stored (y, 27 - x), and
  // stored (sx, sy) = displayed (27 - sy, sx).
  const std::vector<std::string> rows = sample_rows("trouser.png");
  std::string stored(28 * 28, '\0');
  for (int sy = 0; sy < 28; ++sy) {
    for (int sx = 0; sx < 28; ++sx)
      stored[static_cast<std::size_t>(sy * 28 + sx)] =
          rows[static_cast<std::size_t>(sx)][static_cast<std::size_t>(27 - sy)];
  }
  const std::string jpeg = written([](stbi_write_func* f, void* c, int w, int h, int n,
                                      const void* d) { return stbi_write_jpg_to_func(f, c, w, h, n, d, 95); },
                                   28, 28, 1, stored);
  const std::string turned = jpeg.substr(0, 2) + exif_segment(6) + jpeg.substr(2);
  const ProcessResult sideways = infer({"--json", write(dir, "sideways.jpg", jpeg)});
  const ProcessResult upright = infer({"--json", write(dir, "phone.jpg", turned)});
  ASSERT_EQ(upright.exit_code, 0) << upright.err;
  EXPECT_EQ(top1(upright.out).first, "Trouser");
  EXPECT_NE(top1(sideways.out).first, "Trouser");  // what it got before: the picture on its side
}

// --- labels (item 9) --------------------------------------------------------------------------------

TEST(HostileFiles, ALabelWithControlCharactersStaysOnItsLine) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  TempDir dir;
  std::string toml = kTinyToml;
  toml.replace(toml.find("\"a\", \"b\""), 8, "\"a\\nx\\u001b[2J\", \"b\"");
  write_file(dir / "tiny.toml", toml);
  write_file(dir / "tiny.safetensors", safetensors_bytes(tiny_tensors(rng)));
  const ProcessResult r = infer({"--model", (dir / "tiny.toml").string(), "--top-k", "3", kBag});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out_lines().size(), 1u) << r.out;
  EXPECT_NE(r.out.find("a\\x0ax\\x1b[2J "), std::string::npos) << r.out;
}

// --- a property: small files that claim large pictures (items 3 to 5) -------------------------------

// For every format, files of a few KB of random data behind a header that claims millions of
// pixels (or, for PNG, image data that inflates to hundreds of MB): all refused in one run whose
// peak memory stays near that of classifying one sample. Before, the decoders allocated the claimed
// picture first (hundreds of MB for each GIF, JPEG or TGA).
TEST(HostileFiles, SmallFilesClaimingLargePicturesAreRefusedWithBoundedMemory) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  TempDir dir;
  auto le16 = [](int v) { return std::string{static_cast<char>(v & 0xff), static_cast<char>(v >> 8 & 0xff)}; };
  auto le32 = [&](int v) { return le16(v & 0xffff) + le16(v >> 16 & 0xffff); };
  auto be16 = [](int v) { return std::string{static_cast<char>(v >> 8 & 0xff), static_cast<char>(v & 0xff)}; };
  auto noise = [&](std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += static_cast<char>(rng.integer(0, 255));
    return s;
  };
  const std::string jpeg = slurp(kSamples + "/photo-sneaker.jpg");
  const std::size_t sof = jpeg.find("\xff\xc0");
  ASSERT_NE(sof, std::string::npos);
  int files = 0;
  for (int i = 0; i < 4; ++i) {
    const int w = rng.integer(2000, 7000), h = rng.integer(2000, 7000);
    const std::string n = std::to_string(i);
    // GIF: screen and frame w x h, LZW data cut short.
    std::string gif =
        "GIF89a" + le16(w) + le16(h) + std::string("\0\0\0,\0\0\0\0", 8) + le16(w) + le16(h) + std::string("\0\x08", 2);
    for (int b = 0; b < 12; ++b) gif += '\xff' + noise(255);
    write_file(dir / ("g" + n + ".gif"), gif);
    // JPEG: the sample with its frame header's size changed.
    std::string big = jpeg;
    big.replace(sof + 5, 4, be16(h) + be16(w));
    write_file(dir / ("j" + n + ".jpg"), big);
    // TGA, run-length and plain grey.
    const std::string tga_size = le16(w) + le16(h) + std::string("\x08\0", 2);
    write_file(dir / ("r" + n + ".tga"), std::string("\0\0\x0b\0\0\0\0\0\0\0\0\0", 12) + tga_size + noise(3000));
    write_file(dir / ("t" + n + ".tga"), std::string("\0\0\x03\0\0\0\0\0\0\0\0\0", 12) + tga_size + noise(3000));
    // BMP: BITMAPINFOHEADER, 24 bits, top-down or bottom-up.
    const std::string bmp = "BM" + le32(0) + le32(0) + le32(54) + le32(40) + le32(w) + le32(i % 2 ? -h : h) + le16(1) +
                            le16(24) + le32(0) + le32(0) + le32(0) + le32(0) + le32(0) + le32(0);
    write_file(dir / ("b" + n + ".bmp"), bmp + noise(3000));
    // PGM, raw and plain.
    write_file(dir / ("p" + n + ".pgm"), "P5 " + std::to_string(w) + " " + std::to_string(h) + " 255\n" + noise(3000));
    write_file(dir / ("q" + n + ".pgm"), "P2 " + std::to_string(w) + " " + std::to_string(h) + " 255\n1 2 3 4");
    // PNG: a small picture whose data inflates to 64 to 256 MiB.
    write_file(dir / ("z" + n + ".png"),
               png_bomb(static_cast<std::uint32_t>(rng.integer(1, 64)), static_cast<std::uint32_t>(rng.integer(1, 64)),
                        static_cast<std::uint64_t>(rng.integer(64, 256)) << 20));
    files += 8;
  }
  const ProcessResult r = infer({dir.path().string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const std::vector<std::string> lines = ProcessResult::lines(r.err);
  EXPECT_EQ(lines.back(),
            "infer: " + std::to_string(files) + " of " + std::to_string(files) + " inputs failed; none was classified")
      << r.err;
  const ProcessResult baseline = infer({kBag});
  // Under AddressSanitizer freed memory is held in its quarantine (256 MB by default) instead of
  // being reused, so a run's peak RSS adds up every buffer it ever freed (the decoders' legitimate
  // ones for up to 32 files): it measures the quarantine, not the decoders. The release build
  // (CI stage 1) checks the bound; the sanitizer build checks everything else here.
  if (!INFER_TEST_ASAN) {
    EXPECT_LT(r.max_rss_kib, baseline.max_rss_kib + 16 * 1024) << "peak RSS in KiB, baseline " << baseline.max_rss_kib;
  }
  std::cout << "peak RSS: " << r.max_rss_kib << " KiB for " << files << " hostile files, " << baseline.max_rss_kib
            << " KiB classifying one sample\n";
}

}  // namespace
}  // namespace infer::test
