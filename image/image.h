// The decoded image type (load_image.h reads one from a file; preprocess.h makes it the network's input).
#pragma once

#include <vector>

namespace infer {

// A decoded image: pixels in [0,1], interleaved, `channels` = 1 (grey) or 3 (RGB). Alpha has been
// composited over white; palette, 16-bit and grey+alpha images are converted.
struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<float> pixels;
};

}  // namespace infer
