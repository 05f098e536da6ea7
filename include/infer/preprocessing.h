// How an image becomes the network's input: the modes a model declares in its [input] table
// (docs/model-format.md) and that ClassifierOptions::preprocessing may override.
#pragma once

#include <optional>
#include <vector>

namespace infer {

enum class InvertMode { Auto, Yes, No };  // Auto: when the image border is mostly light
enum class ResizeMode {
  TrimFit,  // trim to the foreground's bounding box, fit its longer side, centre (Fashion-MNIST)
  Stretch,  // resize to the input size, aspect ratio not kept
  Crop,     // resize the shorter side to resize_size (aspect kept), then crop the centre
};
enum class ChannelOrder { Rgb, Bgr };
// What becomes of an image's alpha channel (PNG, GIF, TGA, BMP with transparency).
enum class AlphaMode {
  White,  // composited over white, as the eye sees it on a light page
  Drop,   // ignored: the colour channels as stored, as PIL's Image.convert("RGB") (torchvision) does
};

// Overrides of the model's own preprocessing; each unset member keeps the model's value.
struct PreprocessingOverrides {
  std::optional<InvertMode> invert;
  std::optional<ResizeMode> resize;  // another mode than the model's drops the model's resize_size
  std::optional<int> resize_size;    // Crop only: the shorter side before cropping, >= the input's size
  std::optional<ChannelOrder> channel_order;
  std::optional<AlphaMode> alpha;  // unset: the model's, which a resize override does not change
  std::vector<float> mean;         // empty, or one finite value per input channel (pixels scaled to [0,1])
  std::vector<float> std;          // empty, or one positive finite value per input channel
};

}  // namespace infer
