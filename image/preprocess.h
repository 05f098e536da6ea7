// Turning a decoded image into the network's input tensor.
#pragma once

#include "graph/network.h"
#include "image/image.h"

namespace infer {

struct PreprocessResult {
  bool inverted = false;
};

// Writes the network input (C x H x W floats, normalised with the model's mean and std) for one
// image, as spec.preprocessing says (network.h):
//  - invert: Yes inverts, Auto inverts when the image border is mostly light (mean > 0.5);
//  - TrimFit and Stretch use an image of exactly the input size as it is; any other size is
//    - TrimFit: trimmed to the bounding box of its foreground, scaled so its longer side fills the
//      input (aspect kept) and centred on the background, which is how Fashion-MNIST was made;
//    - Stretch: resized to the input size;
//    both with stb_image_resize (Mitchell filter when shrinking, Catmull-Rom when enlarging);
//  - Crop is torchvision's Resize(resize_size) + CenterCrop((height, width)) + ToTensor on a PIL
//    image, to the bit for a colour model, whatever the image's size (a one-channel model's grey,
//    BT.601 in float, may differ from PIL's convert("L") by one 8-bit step): the pixels are taken as 8-bit values (rounded to
//    k/255), resized so the shorter side is resize_size (the longer int(resize_size * long / short))
//    by PIL's antialiased bilinear filter with its 8-bit rounding (pil_resize.h), the input's size
//    cut from the centre (the top-left corner at round((resized - input) / 2), half to even as
//    Python rounds), and divided by 255;
//  - channel_order Bgr feeds a three-channel model blue first.
// Alpha is not seen here: load_image.h applies the model's AlphaMode when it decodes.
PreprocessResult preprocess(const Image& image, const InputSpec& spec, float* out);

}  // namespace infer
