// Turning a decoded image into the network's input tensor.
#pragma once

#include "image/image.h"
#include "graph/network.h"

namespace infer {

struct PreprocessResult {
  bool inverted = false;
};

// Writes the network input (C x H x W floats, normalised with the model's mean and std) for one
// image, as spec.preprocessing says (network.h):
//  - invert: Yes inverts, Auto inverts when the image border is mostly light (mean > 0.5);
//  - an image of exactly the input size is used as it is; any other size is
//    - TrimFit: trimmed to the bounding box of its foreground, scaled so its longer side fills the
//      input (aspect kept) and centred on the background, which is how Fashion-MNIST was made;
//    - Stretch: resized to the input size;
//    - Crop: resized so its shorter side is resize_size (torchvision's Resize(size): the longer side
//      is truncated to a whole pixel), then the input's size is cut from its centre (CenterCrop:
//      the top-left corner at round((resized - input) / 2));
//  - channel_order Bgr feeds a three-channel model blue first.
// Resampling is stb_image_resize's (Mitchell filter when shrinking, Catmull-Rom when enlarging).
PreprocessResult preprocess(const Image& image, const InputSpec& spec, float* out);

}  // namespace infer
