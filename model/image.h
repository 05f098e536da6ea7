// Image input: decode any supported file and turn it into the network's input tensor.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "network.h"

namespace infer {

// Images with more pixels than this are refused before any pixel is decoded (the header is read
// first), so a small file that claims 100000x100000 pixels cannot make us allocate 40 GB.
constexpr long long kMaxImagePixels = 50'000'000;

// An image may not claim more pixels per byte of file than this. No supported format packs more
// than about 8,300 (a 1-bit PNG of one colour, deflate at its 1032:1 limit); a tiny file claiming
// millions of pixels is a truncated or forged one, whose missing data some decoders (TGA) read as 0.
constexpr long long kMaxPixelsPerByte = 16'384;

// File extensions (lower case) that a directory argument picks up.
const std::vector<std::string>& image_extensions();

// A decoded image: pixels in [0,1], interleaved, `channels` = 1 (grey) or 3 (RGB). Alpha has been
// composited over white; palette, 16-bit and grey+alpha images are converted.
struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<float> pixels;
};

// Decodes PNG, JPEG, BMP, PGM/PPM, GIF (first frame) or TGA, detected by content. channels is the
// number wanted (1 or 3). Throws InputError naming the file and the problem.
Image load_image(const std::filesystem::path& path, int channels);
Image decode_image(const std::string& name, const unsigned char* bytes, std::size_t size, int channels);

enum class InvertMode { Auto, Yes, No };

struct PreprocessResult {
  bool inverted = false;
};

// Writes the network input (C x H x W floats, normalised with the model's mean and std) for one
// image. The model was trained on light objects on a dark background:
//  - invert: Auto inverts when the image border is mostly light (mean > 0.5);
//  - an image of exactly the input size is used as it is; any other size is trimmed to the
//    bounding box of its foreground, scaled so its longer side fills the input (aspect kept) and
//    centred on the background, which is how Fashion-MNIST itself was made.
PreprocessResult preprocess(const Image& image, const InputSpec& spec, InvertMode invert, float* out);

}  // namespace infer
