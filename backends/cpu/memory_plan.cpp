#include "backends/cpu/memory_plan.h"

#include <algorithm>
#include <limits>

#include "backends/cpu/cpu_backend.h"

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
// Channels per block of oneDNN's blocked layouts (nChw16c, OIhw16i16o: AVX-512's 16 floats; AVX2's
// 8-channel blocks are smaller).
constexpr std::uint64_t kLanes = 16;

// One sample of `d` in a channel-blocked layout (channels rounded up to kLanes).
std::uint64_t blocked_floats(const Dims& d) { return mul(mul(round_up(u(d.c), kLanes), u(d.h)), u(d.w)); }

// The backend's copy of a layer's parameters: oneDNN's reordered weights, channels of both sides
// rounded up to whole blocks, each once without and once with a batch-norm folded in; the bias.
std::uint64_t packed_floats(const Layer& layer) {
  switch (layer.kind) {
    case LayerKind::Conv2d: {
      const Conv2dAttrs& a = layer.conv();
      const std::uint64_t taps = mul(u(a.kernel_h), u(a.kernel_w));
      const std::uint64_t outputs = round_up(u(a.out_channels), kLanes);
      return mul(2, add(mul(mul(outputs, round_up(u(layer.in.c / a.groups), kLanes)), taps), outputs));
    }
    case LayerKind::Linear: {
      const std::uint64_t outputs = round_up(u(layer.linear().out_features), kLanes);
      return mul(2, add(mul(outputs, round_up(layer.in.size(), kLanes)), outputs));
    }
    case LayerKind::BatchNorm:
      return mul(4, round_up(u(layer.in.c), kLanes));  // scale and shift, twice
    case LayerKind::LayerNorm:
      return 0;  // weight and bias are read where they are
      INFER_CASE_PARAMETERLESS_OPS return 0;
  }
  return 0;  // a value outside the enum: every kind returns above
}

// A convolution's scratch for one sample: its im2col matrix (the plain kernels'; oneDNN's
// im2col-based convolutions take the same in their scratchpad).
std::uint64_t workspace_floats(const Layer& layer) {
  if (layer.kind != LayerKind::Conv2d) return 0;
  const Conv2dAttrs& a = layer.conv();
  return mul(mul(mul(u(layer.in.c / a.groups), u(a.kernel_h)), u(a.kernel_w)), mul(u(layer.out.h), u(layer.out.w)));
}

}  // namespace

std::uint64_t MemoryPlan::bytes(int max_batch) const {
  const std::uint64_t batch = u(std::max(max_batch, 1));
  const std::uint64_t chunk = u(kCpuChunk);
  const std::uint64_t samples = batch <= chunk ? batch : round_up(batch, chunk);
  const std::uint64_t chunks = (batch + chunk - 1) / chunk;
  const std::uint64_t onednn =
      onednn_bytes.empty() ? 0 : onednn_bytes[std::min<std::size_t>(batch, onednn_bytes.size()) - 1];
  return add(add(add(parameter_bytes, mul(samples, sample_bytes)), mul(chunks, workspace_bytes)), onednn);
}

MemoryPlan plan_memory(const Network& network) {
  const std::vector<Layer>& layers = network.layers();
  std::uint64_t params = 0, packed = 0, largest_tensor = 0, workspace = 0;
  // Per program size: oneDNN's one shared scratchpad (the largest any layer asks for, Winograd or
  // direct), the sum of the Winograd weights.
  constexpr int kPrograms = 2 * kCpuChunk;  // oneDNN's largest chunk
  std::vector<std::uint64_t> onednn_scratchpad, winograd_weights;
  std::uint64_t direct_scratchpad = 0;  // the other primitives', for any program size
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const Layer& layer = layers[i];
    const std::vector<WinogradMemory> w = onednn_winograd_memory(layer, kPrograms);
    direct_scratchpad = std::max(direct_scratchpad, onednn_scratchpad_memory(layer, kPrograms));
    if (w.size() > onednn_scratchpad.size()) {
      onednn_scratchpad.resize(w.size(), 0);
      winograd_weights.resize(w.size(), 0);
    }
    for (std::size_t m = 0; m < w.size(); ++m) {
      onednn_scratchpad[m] = std::max(onednn_scratchpad[m], w[m].scratchpad);
      winograd_weights[m] = add(winograd_weights[m], mul(2, w[m].weights));
    }
    for (const std::vector<float>* p :
         {&layer.params.weight, &layer.params.bias, &layer.params.running_mean, &layer.params.running_var}) {
      params = add(params, p->size());
      largest_tensor = std::max<std::uint64_t>(largest_tensor, p->size());
    }
    packed = add(packed, packed_floats(layer));
    workspace = std::max(workspace, workspace_floats(layer));
  }

  // Activation a: the input (a = 0) or the output of layer a - 1, read by layer a.
  const Dims in = network.input().dims;
  std::uint64_t sample = 0, largest = in.size();
  for (std::size_t a = 0; a <= layers.size(); ++a) {
    const Dims d = a == 0 ? in : layers[a - 1].out;
    sample = add(sample, add(d.size(), blocked_floats(d)));
    largest = std::max<std::uint64_t>(largest, d.size());
  }
  // The app's input batch, the GPU's staging of the largest output, and the output's four copies
  // (scores, the top-k buffer, classes and probabilities of top-k).
  sample = add(sample, add(add(in.size(), largest), mul(4, network.output_dims().size())));

  MemoryPlan plan;
  plan.parameter_bytes = mul(add(add(params, packed), largest_tensor), kFloatBytes);
  plan.sample_bytes = mul(sample, kFloatBytes);
  plan.workspace_bytes = mul(workspace, kFloatBytes);
  if (direct_scratchpad > 0 && onednn_scratchpad.empty()) {
    onednn_scratchpad.assign(kPrograms, 0);
    winograd_weights.assign(kPrograms, 0);
  }
  for (std::size_t m = 0; m < onednn_scratchpad.size(); ++m) {
    plan.onednn_bytes.push_back(add(std::max(onednn_scratchpad[m], direct_scratchpad), winograd_weights[m]));
  }
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

}  // namespace infer
