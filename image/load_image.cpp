#include "image/load_image.h"

#include <algorithm>
#include <limits>

#include <stb_image.h>

#include "infer/errors.h"
#include "image/exif.h"
#include "image/image_checks.h"
#include "platform/input_file.h"
#include "image/pnm.h"
#include "platform/printable.h"

namespace infer {
namespace {

// stb's failure reason, made safe for a one-line message: stb copies bytes of the file into some
// reasons (an unknown PNG chunk's type, "\x18\x06\xe0\xf7 PNG chunk not known").
std::string printable_reason() {
  const char* reason = stbi_failure_reason();
  return printable_ascii(reason ? reason : "");
}

struct StbPixels {
  unsigned char* data = nullptr;
  ~StbPixels() { stbi_image_free(data); }
};

// stb's interleaved 8-bit pixels (1 to 4 channels) as an Image of `channels` floats in [0, 1], alpha
// composited over white or dropped.
Image to_image(const unsigned char* data, int w, int h, int file_channels, int channels, AlphaMode alpha) {
  Image img;
  img.width = w;
  img.height = h;
  img.channels = channels;
  img.pixels.resize(static_cast<std::size_t>(w) * h * channels);
  const bool has_alpha = file_channels == 2 || file_channels == 4;
  const bool over_white = has_alpha && alpha == AlphaMode::White;
  const int colour = has_alpha ? file_channels - 1 : file_channels;
  for (std::size_t i = 0; i < static_cast<std::size_t>(w) * h; ++i) {
    const unsigned char* p = data + i * file_channels;
    float rgb[3];
    for (int c = 0; c < 3; ++c) rgb[c] = p[colour == 1 ? 0 : c] / 255.0f;
    if (over_white) {
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

}  // namespace

const std::vector<std::string>& image_extensions() {
  static const std::vector<std::string> exts = {".png", ".jpg", ".jpeg", ".bmp", ".pgm",
                                                ".ppm", ".pnm", ".gif",  ".tga"};
  return exts;
}

Image load_image(const std::filesystem::path& path, int channels, AlphaMode alpha) {
  const std::vector<unsigned char> bytes = read_input_file(path, kMaxImageFileBytes, "an image");
  return decode_image(path.u8string(), bytes.data(), bytes.size(), channels, alpha);
}

Image decode_image(const std::string& name, const unsigned char* bytes, std::size_t size, int channels,
                   AlphaMode alpha) {
  if (channels != 1 && channels != 3) throw InputError(name, "only 1- and 3-channel models are supported");
  if (size == 0) throw InputError(name, "empty file");
  if (size > static_cast<std::size_t>(std::numeric_limits<int>::max())) throw InputError(name, "file too large");
  const int len = static_cast<int>(size);
  const ImageFormat format = sniff_image_format(bytes, size);
  // Netpbm has a decoder of its own: stb's ignores maxval and reads no plain (text) variant.
  if (format == ImageFormat::Pnm && is_pnm(bytes, size))
    return decode_pnm(name, bytes, size, channels, kMaxImagePixels);
  // stb refuses very large PNGs in stbi_info already, but then says "unknown image type": the PNG
  // check names the size, and bounds what the image data may inflate to.
  if (format == ImageFormat::Png) check_png(name, bytes, size, kMaxImagePixels);

  int w = 0, h = 0, file_channels = 0;
  if (!stbi_info_from_memory(bytes, len, &w, &h, &file_channels)) {
    const std::string variant = format == ImageFormat::Jpeg ? unsupported_jpeg_variant(bytes, size) : "";
    if (!variant.empty()) {
      throw InputError(
          name, "unsupported JPEG variant (" + variant + "): only baseline and progressive 8-bit JPEGs are supported");
    }
    throw InputError(name, std::string("not a supported image (") + printable_reason() +
                               "); supported: PNG, JPEG, BMP, PGM/PPM, GIF, TGA");
  }
  if (format == ImageFormat::Bmp) h = check_bmp(name, bytes, size, h);
  // stb's PNM reader accepts a 0 height or width (also after a number too large to parse);
  // everything after assumes at least one pixel.
  if (w <= 0 || h <= 0) {
    throw InputError(
        name, "the image header gives an invalid size (" + std::to_string(w) + "x" + std::to_string(h) + " pixels)");
  }
  if (static_cast<long long>(w) * h > kMaxImagePixels) {
    throw InputError(name, "image is " + std::to_string(w) + "x" + std::to_string(h) + " pixels, over the limit of " +
                               std::to_string(kMaxImagePixels) + " pixels");
  }
  if (format == ImageFormat::Other) check_tga(name, bytes, size);  // the one format without a signature
  const long long per_byte = max_pixels_per_byte(format);
  if (static_cast<long long>(w) * h > per_byte * static_cast<long long>(size)) {
    throw InputError(name, "image claims " + std::to_string(w) + "x" + std::to_string(h) +
                               " pixels but the file has only " + std::to_string(size) +
                               " bytes (this format packs at most " + std::to_string(per_byte) +
                               " pixels per byte): it is truncated or corrupt");
  }
  StbPixels decoded;
  decoded.data = stbi_load_from_memory(bytes, len, &w, &h, &file_channels, 0);
  if (!decoded.data) {
    std::string reason = printable_reason();
    // stb's GIF reader returns no image and no reason for a file whose data ends before any frame.
    if (reason.empty())
      reason = format == ImageFormat::Gif ? "the GIF has no image frame" : "the decoder gave no reason";
    throw InputError(name, "cannot decode image: " + reason);
  }
  Image image = to_image(decoded.data, w, h, file_channels, channels, alpha);
  // A JPEG shows as its EXIF orientation says (a phone's photo is often stored on its side).
  if (format == ImageFormat::Jpeg) image = apply_orientation(std::move(image), jpeg_orientation(bytes, size));
  return image;
}

}  // namespace infer
