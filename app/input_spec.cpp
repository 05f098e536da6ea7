#include "input_spec.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace infer::app {
namespace {

void per_channel(const char* option, const std::vector<float>& values, int channels) {
  if (values.size() != static_cast<std::size_t>(channels)) {
    throw std::invalid_argument(std::string(option) + ": the model has " + std::to_string(channels) +
                                " channel(s), so give " + std::to_string(channels) + " value(s), found " +
                                std::to_string(values.size()));
  }
  for (float v : values) {
    if (!std::isfinite(v)) throw std::invalid_argument(std::string(option) + ": values must be finite numbers");
  }
}

}  // namespace

InputSpec effective_input(const Options& o, const InputSpec& model) {
  InputSpec spec = model;
  Preprocessing& p = spec.preprocessing;
  if (o.invert) p.invert = *o.invert;
  if (o.resize) p.resize = *o.resize;
  if (o.channel_order) p.channel_order = *o.channel_order;
  if (o.resize) p.resize_size = 0;  // another mode: the model's crop size no longer applies
  if (o.resize_size) {
    if (p.resize != ResizeMode::Crop) throw std::invalid_argument("--resize-size needs --resize crop");
    if (*o.resize_size < std::max(spec.dims.h, spec.dims.w)) {
      throw std::invalid_argument("--resize-size " + std::to_string(*o.resize_size) +
                                  " is smaller than the model's input (" + std::to_string(spec.dims.h) + "x" +
                                  std::to_string(spec.dims.w) + "), which is cropped from it");
    }
    p.resize_size = *o.resize_size;
  }
  if (!o.mean.empty()) {
    per_channel("--mean", o.mean, spec.dims.c);
    spec.mean = o.mean;
  }
  if (!o.std.empty()) {
    per_channel("--std", o.std, spec.dims.c);
    if (std::any_of(o.std.begin(), o.std.end(), [](float s) { return !(s > 0.0f); })) {
      throw std::invalid_argument("--std: values must be positive");
    }
    spec.std = o.std;
  }
  return spec;
}

}  // namespace infer::app
