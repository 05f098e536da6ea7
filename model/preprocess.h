// Turning a decoded image into the network's input tensor.
#pragma once

#include "image.h"
#include "network.h"

namespace infer {

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
