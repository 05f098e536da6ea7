#include "image.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>

#include <stb_image.h>
#include <stb_image_resize.h>

#include "errors.h"
#include "printable.h"

namespace infer {
namespace {

// stb's failure reason, made safe for a one-line message: stb copies bytes of the file into some
// reasons (an unknown PNG chunk's type, "\x18\x06\xe0\xf7 PNG chunk not known").
std::string printable_reason() {
  const char* reason = stbi_failure_reason();
  return printable_ascii(reason ? reason : "");
}

// Pixels darker or lighter than the background by this much (in [0,1]) count as foreground when
// trimming. Lower and JPEG noise on a plain background becomes foreground.
constexpr float kForegroundThreshold = 0.12f;

struct StbPixels {
  unsigned char* data = nullptr;
  ~StbPixels() { stbi_image_free(data); }
};

float border_mean(const std::vector<float>& grey, int w, int h) {
  double sum = 0.0;
  int count = 0;
  for (int x = 0; x < w; ++x) {
    sum += grey[static_cast<std::size_t>(x)] + grey[static_cast<std::size_t>(h - 1) * w + x];
    count += 2;
  }
  for (int y = 1; y + 1 < h; ++y) {
    sum += grey[static_cast<std::size_t>(y) * w] + grey[static_cast<std::size_t>(y) * w + w - 1];
    count += 2;
  }
  return static_cast<float>(sum / count);
}

// Width and height from a PNG's IHDR chunk (signature, then length 13, "IHDR", big-endian width
// and height: PNG specification, 5.2 and 11.2.2).
bool png_header_size(const unsigned char* p, std::size_t size, long long& width, long long& height) {
  static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size < 24 || std::memcmp(p, signature, 8) != 0 || std::memcmp(p + 12, "IHDR", 4) != 0) return false;
  auto be32 = [](const unsigned char* q) {
    return static_cast<long long>(std::uint32_t(q[0]) << 24 | std::uint32_t(q[1]) << 16 | std::uint32_t(q[2]) << 8 | q[3]);
  };
  width = be32(p + 16);
  height = be32(p + 20);
  return true;
}

}  // namespace

const std::vector<std::string>& image_extensions() {
  static const std::vector<std::string> exts = {".png", ".jpg", ".jpeg", ".bmp", ".pgm", ".ppm",
                                                ".pnm", ".gif", ".tga"};
  return exts;
}

Image load_image(const std::filesystem::path& path, int channels) {
  const std::string name = path.string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(name, "no such file");
  if (std::filesystem::is_directory(path, ec)) throw InputError(name, "is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(name, std::string("cannot open: ") + std::strerror(errno));
  const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw InputError(name, "read error");
  return decode_image(name, bytes.data(), bytes.size(), channels);
}

Image decode_image(const std::string& name, const unsigned char* bytes, std::size_t size, int channels) {
  if (channels != 1 && channels != 3) throw InputError(name, "only 1- and 3-channel models are supported");
  if (size == 0) throw InputError(name, "empty file");
  if (size > static_cast<std::size_t>(std::numeric_limits<int>::max())) throw InputError(name, "file too large");
  const int len = static_cast<int>(size);

  int w = 0, h = 0, file_channels = 0;
  // stb refuses very large PNGs in stbi_info already, but then reports "unknown image type"; read
  // the PNG header's size ourselves so that the message says what is wrong.
  long long png_w = 0, png_h = 0;
  // A side over the limit is refused before multiplying: two 32-bit sides would overflow the product.
  if (png_header_size(bytes, size, png_w, png_h) &&
      (png_w > kMaxImagePixels || png_h > kMaxImagePixels || png_w * png_h > kMaxImagePixels)) {
    throw InputError(name, "image is " + std::to_string(png_w) + "x" + std::to_string(png_h) +
                               " pixels, over the limit of " + std::to_string(kMaxImagePixels) + " pixels");
  }
  if (!stbi_info_from_memory(bytes, len, &w, &h, &file_channels)) {
    throw InputError(name, std::string("not a supported image (") + printable_reason() +
                               "); supported: PNG, JPEG, BMP, PGM/PPM, GIF, TGA");
  }
  // stb's PNM reader accepts a 0 height or width (also after a number too large to parse);
  // everything after assumes at least one pixel.
  if (w <= 0 || h <= 0) {
    throw InputError(name, "the image header gives an invalid size (" + std::to_string(w) + "x" + std::to_string(h) +
                               " pixels)");
  }
  if (static_cast<long long>(w) * h > kMaxImagePixels) {
    throw InputError(name, "image is " + std::to_string(w) + "x" + std::to_string(h) + " pixels, over the limit of " +
                               std::to_string(kMaxImagePixels) + " pixels");
  }
  if (static_cast<long long>(w) * h > kMaxPixelsPerByte * static_cast<long long>(size)) {
    throw InputError(name, "image claims " + std::to_string(w) + "x" + std::to_string(h) + " pixels but the file has only " +
                               std::to_string(size) + " bytes: it is truncated or corrupt");
  }
  StbPixels decoded;
  decoded.data = stbi_load_from_memory(bytes, len, &w, &h, &file_channels, 0);
  if (!decoded.data) throw InputError(name, std::string("cannot decode image: ") + printable_reason());

  Image img;
  img.width = w;
  img.height = h;
  img.channels = channels;
  img.pixels.resize(static_cast<std::size_t>(w) * h * channels);
  const bool has_alpha = file_channels == 2 || file_channels == 4;
  const int colour = has_alpha ? file_channels - 1 : file_channels;
  for (std::size_t i = 0; i < static_cast<std::size_t>(w) * h; ++i) {
    const unsigned char* p = decoded.data + i * file_channels;
    float rgb[3];
    for (int c = 0; c < 3; ++c) rgb[c] = p[colour == 1 ? 0 : c] / 255.0f;
    if (has_alpha) {
      const float a = p[file_channels - 1] / 255.0f;
      for (float& v : rgb) v = v * a + (1.0f - a);  // over white
    }
    if (channels == 1) {
      // ITU-R BT.601 luma, as most image tools use for greyscale.
      img.pixels[i] = colour == 1 ? rgb[0] : 0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2];
    } else {
      std::copy(rgb, rgb + 3, img.pixels.begin() + static_cast<std::ptrdiff_t>(i * 3));
    }
  }
  return img;
}

PreprocessResult preprocess(const Image& image, const InputSpec& spec, InvertMode invert, float* out) {
  const int w = image.width, h = image.height, ch = image.channels;
  const int out_w = spec.dims.w, out_h = spec.dims.h;
  if (ch != spec.dims.c) throw std::invalid_argument("image channels do not match the model input");

  // Grey view for the decisions (border brightness, foreground box).
  std::vector<float> grey(static_cast<std::size_t>(w) * h);
  for (std::size_t i = 0; i < grey.size(); ++i) {
    float s = 0.0f;
    for (int c = 0; c < ch; ++c) s += image.pixels[i * ch + c];
    grey[i] = s / static_cast<float>(ch);
  }
  const float border = border_mean(grey, w, h);
  PreprocessResult result;
  result.inverted = invert == InvertMode::Yes || (invert == InvertMode::Auto && border > 0.5f);
  const float background = result.inverted ? 1.0f - border : border;

  std::vector<float> pixels = image.pixels;
  if (result.inverted) {
    for (float& v : pixels) v = 1.0f - v;
  }

  std::vector<float> fitted;  // out_h x out_w x ch, interleaved
  if (w == out_w && h == out_h) {
    fitted = std::move(pixels);
  } else {
    // Bounding box of the foreground; the whole image if nothing stands out.
    int x0 = w, y0 = h, x1 = -1, y1 = -1;
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        float v = grey[static_cast<std::size_t>(y) * w + x];
        if (result.inverted) v = 1.0f - v;
        if (std::fabs(v - background) > kForegroundThreshold) {
          x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
        }
      }
    }
    if (x1 < 0) x0 = 0, y0 = 0, x1 = w - 1, y1 = h - 1;
    const int box_w = x1 - x0 + 1, box_h = y1 - y0 + 1;
    const double scale = std::min(static_cast<double>(out_w) / box_w, static_cast<double>(out_h) / box_h);
    const int fit_w = std::clamp(static_cast<int>(std::lround(box_w * scale)), 1, out_w);
    const int fit_h = std::clamp(static_cast<int>(std::lround(box_h * scale)), 1, out_h);

    std::vector<float> scaled(static_cast<std::size_t>(fit_w) * fit_h * ch);
    const float* src = pixels.data() + (static_cast<std::size_t>(y0) * w + x0) * ch;
    const int src_stride = w * ch * static_cast<int>(sizeof(float));
    if (!stbir_resize_float(src, box_w, box_h, src_stride, scaled.data(), fit_w, fit_h, 0, ch)) {
      throw std::runtime_error("stbir_resize_float failed");
    }
    fitted.assign(static_cast<std::size_t>(out_w) * out_h * ch, background);
    const int off_x = (out_w - fit_w) / 2, off_y = (out_h - fit_h) / 2;
    for (int y = 0; y < fit_h; ++y) {
      std::copy_n(scaled.begin() + static_cast<std::ptrdiff_t>(y) * fit_w * ch, fit_w * ch,
                  fitted.begin() + (static_cast<std::ptrdiff_t>(y + off_y) * out_w + off_x) * ch);
    }
    for (float& v : fitted) v = std::clamp(v, 0.0f, 1.0f);  // the resampling filter can overshoot
  }

  // Interleaved HWC in [0,1] -> normalised CHW.
  const std::size_t plane = static_cast<std::size_t>(out_w) * out_h;
  for (int c = 0; c < ch; ++c) {
    const float mean = spec.mean[static_cast<std::size_t>(c)];
    const float std = spec.std[static_cast<std::size_t>(c)];
    for (std::size_t i = 0; i < plane; ++i) out[c * plane + i] = (fitted[i * ch + c] - mean) / std;
  }
  return result;
}

}  // namespace infer
