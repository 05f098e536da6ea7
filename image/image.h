// The decoded image type (load_image.h reads one from a file; preprocess.h makes it the network's input).
#pragma once

#include <vector>

namespace infer {

// A decoded image: pixels in [0,1], interleaved, `channels` = 1 (grey) or 3 (RGB). Alpha has been
// composited over white or dropped (load_image.h); palette, 16-bit and grey+alpha images are
// converted (PNG, JPEG, BMP, GIF and TGA are read at 8 bits, a 16-bit PNG at its high byte: each
// value is k/255; Netpbm keeps its maxval's steps).
struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<float> pixels;
};

}  // namespace infer
