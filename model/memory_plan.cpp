#include "memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "cpu/blocked.h"
#include "cpu/cpu_backend.h"

namespace infer {
namespace {

// Sizes multiply up to ~1e18 floats (a 1000000x1000000 input with a million channels) and are then
// summed over layers: saturate rather than wrap, so that an absurd model reads as "too large".
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

std::uint64_t add(std::uint64_t a, std::uint64_t b) { return a > kMax - b ? kMax : a + b; }
std::uint64_t mul(std::uint64_t a, std::uint64_t b) { return b != 0 && a > kMax / b ? kMax : a * b; }
std::uint64_t round_up(std::uint64_t n, std::uint64_t to) { return add(n, to - 1) / to * to; }
std::uint64_t u(int v) { return static_cast<std::uint64_t>(v); }

constexpr std::uint64_t kFloatBytes = sizeof(float);
constexpr std::uint64_t kLanes = cpu::kLanes;  // channels per block of the CPU's blocked layout
constexpr std::uint64_t kLinearOutputs = 48;   // outputs per packed group of a linear layer (cpu/blocked_linear.cpp)
constexpr std::uint64_t kWinogradTaps = 16;    // a 3x3 kernel transformed to 4x4 (cpu/blocked_winograd.cpp)
constexpr std::uint64_t kWinogradTiles = 28;   // tiles per matrix product (cpu/blocked_winograd.cpp)

bool winograd(const Layer& conv) { return cpu::winograd_applicable(conv.conv(), conv.in.c); }

// One sample of `d` in the channel-blocked layout (channels rounded up to `lanes`: 1 for the
// network's input, kLanes after it), with the halo the layer reading it pads with.
std::uint64_t blocked_floats(const Dims& d, std::uint64_t lanes, const Layer* reader) {
  std::uint64_t halo_h = 0, halo_w = 0;
  if (reader != nullptr && reader->kind == LayerKind::Conv2d) {
    halo_h = u(reader->conv().pad_h) + 1;
    halo_w = u(reader->conv().pad_w) + 1;
  }
  return mul(mul(round_up(u(d.c), lanes), add(u(d.h), 2 * halo_h)), add(u(d.w), 2 * halo_w));
}

// The backend's copy of a layer's parameters; `lanes`: the blocking of its input channels.
std::uint64_t packed_floats(const Layer& layer, std::uint64_t lanes) {
  switch (layer.kind) {
    case LayerKind::Conv2d: {
      const Conv2dAttrs& a = layer.conv();
      const std::uint64_t taps = winograd(layer) ? kWinogradTaps : mul(u(a.kernel_h), u(a.kernel_w));
      const std::uint64_t outputs = round_up(u(a.out_channels), kLanes);
      return add(mul(mul(outputs, round_up(u(layer.in.c / a.groups), lanes)), taps), outputs);
    }
    case LayerKind::Linear: {
      const std::uint64_t outputs = round_up(u(layer.linear().out_features), kLinearOutputs);
      return add(mul(outputs, layer.in.size()), outputs);
    }
    case LayerKind::BatchNorm: return mul(4, round_up(u(layer.in.c), kLanes));  // scale and shift, twice
    // No parameters. Listed, not defaulted, so that a new kind is a build error.
    case LayerKind::Relu:
    case LayerKind::MaxPool:
    case LayerKind::AvgPool:
    case LayerKind::GlobalAvgPool:
    case LayerKind::Flatten:
    case LayerKind::Softmax:
    case LayerKind::Add:
    case LayerKind::Mul:
    case LayerKind::Concat:
    case LayerKind::Upsample:
    case LayerKind::Pad:
    case LayerKind::AdaptiveAvgPool:
    INFER_CASE_POINTWISE_OPS return 0;
  }
  return 0;  // a value outside the enum: every kind returns above
}

// A convolution's scratch for one sample: its im2col matrix, or the Winograd tiles of every channel block.
std::uint64_t workspace_floats(const Layer& layer) {
  if (layer.kind != LayerKind::Conv2d) return 0;
  const Conv2dAttrs& a = layer.conv();
  const std::uint64_t im2col = mul(mul(mul(u(layer.in.c / a.groups), u(a.kernel_h)), u(a.kernel_w)),
                                   mul(u(layer.out.h), u(layer.out.w)));
  if (!winograd(layer)) return im2col;
  const std::uint64_t tiles = mul(kWinogradTaps * kWinogradTiles,
                                  add(round_up(u(layer.in.c), kLanes), round_up(u(a.out_channels), kLanes)));
  return std::max(im2col, tiles);
}

}  // namespace

std::uint64_t MemoryPlan::bytes(int max_batch) const {
  const std::uint64_t batch = u(std::max(max_batch, 1));
  const std::uint64_t chunk = u(kCpuChunk);
  const std::uint64_t samples = batch <= chunk ? batch : round_up(batch, chunk);
  const std::uint64_t chunks = (batch + chunk - 1) / chunk;
  return add(add(parameter_bytes, mul(samples, sample_bytes)), mul(chunks, workspace_bytes));
}

MemoryPlan plan_memory(const Network& network) {
  const std::vector<Layer>& layers = network.layers();
  std::uint64_t params = 0, packed = 0, largest_tensor = 0, workspace = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const Layer& layer = layers[i];
    for (const std::vector<float>* p : {&layer.params.weight, &layer.params.bias, &layer.params.running_mean,
                                        &layer.params.running_var}) {
      params = add(params, p->size());
      largest_tensor = std::max<std::uint64_t>(largest_tensor, p->size());
    }
    packed = add(packed, packed_floats(layer, i == 0 ? 1 : kLanes));
    workspace = std::max(workspace, workspace_floats(layer));
  }

  // Activation a: the input (a = 0) or the output of layer a - 1, read by layer a.
  const Dims in = network.input().dims;
  std::uint64_t sample = 0, largest = in.size();
  for (std::size_t a = 0; a <= layers.size(); ++a) {
    const Dims d = a == 0 ? in : layers[a - 1].out;
    sample = add(sample, add(d.size(), blocked_floats(d, a == 0 ? 1 : kLanes, a < layers.size() ? &layers[a] : nullptr)));
    largest = std::max<std::uint64_t>(largest, d.size());
  }
  // The app's input batch, the GPU's staging of the largest output, and the output's four copies
  // (scores, the top-k buffer, classes and probabilities of top-k).
  sample = add(sample, add(add(in.size(), largest), mul(4, network.output_dims().size())));

  MemoryPlan plan;
  plan.parameter_bytes = mul(add(add(params, packed), largest_tensor), kFloatBytes);
  plan.sample_bytes = mul(sample, kFloatBytes);
  plan.workspace_bytes = mul(workspace, kFloatBytes);
  return plan;
}

int largest_batch_within(const MemoryPlan& plan, int max_batch, std::uint64_t limit) {
  // bytes() does not decrease with the batch size: the largest batch that fits, by bisection.
  int lo = 0, hi = std::max(max_batch, 0);
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (plan.bytes(mid) <= limit) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

std::string bytes_string(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  // 1023.96 KiB prints as "1.0 MiB", not "1024.0 KiB".
  while (value >= 1023.95 && unit + 1 < sizeof(units) / sizeof(units[0])) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f %s", value, units[unit]);
  return text;
}

}  // namespace infer
