#include "cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "../fold.h"
#include "blocked.h"
#include "ops.h"
#include "workers.h"

namespace infer {
namespace {

using cpu::BlockedShape;
using cpu::kLanes;
using cpu::PackedConv;

// Buffers one worker needs to run a chunk through the network.
struct ChunkBuffers {
  std::vector<std::unique_ptr<float[]>> activations;  // one per layer output, min(kChunk, max_batch) samples
  std::unique_ptr<float[]> scratch;                   // im2col matrix, shared by all convolutions
  std::vector<std::unique_ptr<float[]>> blocked;      // one per BlockedProgram shape, as many samples, zeroed
  std::vector<const float*> inputs;                   // the current layer's inputs (reserved: no allocation per layer)
};

// The convolutional front of the network on the channel-blocked layout (blocked.h): layers
// [0, end_layer) as fused steps, a batch-norm folded into the convolution before it and a ReLU
// fused into the step before it. Layers from end_layer on run on the plain layout.
struct BlockedStep {
  enum class Kind { Conv, Winograd, Affine, Relu, MaxPool };
  Kind kind = Kind::Conv;
  PackedConv conv;                  // Conv
  cpu::WinogradConv winograd;       // Winograd
  std::vector<float> scale, shift;  // Affine: padded to whole blocks with zeros
  bool relu = false;                // Affine
  Pool2dAttrs pool;                 // MaxPool
};

struct BlockedProgram {
  std::size_t end_layer = 0;         // 0: the network does not start with a convolution it can run
  std::vector<BlockedShape> shapes;  // [0] the input, [i + 1] the output of steps[i]
  std::vector<BlockedStep> steps;
  std::size_t scratch = 0;           // floats of Winograd scratch one sample needs
};

// Plans the blocked front: it starts at a group-1 convolution in layer 0 and takes batch-norms,
// ReLUs, max pools and group-1 convolutions until the first other layer, or the first layer whose
// input is read by another layer too (a branch of the graph: only the front's last output is kept).
BlockedProgram plan_blocked(const Network& network, const CpuOptions& options) {
  BlockedProgram p;
  const std::vector<Layer>& layers = network.layers();
  if (layers.empty() || layers[0].kind != LayerKind::Conv2d || layers[0].conv().groups != 1) return p;
  const Dims in = network.input().dims;
  p.shapes.push_back(BlockedShape{1, in.c, in.h, in.w, 0, 0});
  std::size_t i = 0;
  while (i < layers.size()) {
    const Layer& layer = layers[i];
    if (i > 0 && !feeds_only_next(layers, i - 1)) break;
    BlockedStep step;
    if (layer.kind == LayerKind::Conv2d && layer.conv().groups == 1) {
      // Winograd where it applies (3x3, stride 1, blocked input), else the direct kernel. The
      // input buffer's halo is this convolution's padding (+ 1 for Winograd's last tiles).
      const bool winograd = options.winograd && p.shapes.back().cb == kLanes && cpu::winograd_applicable(layer.conv(), layer.in.c);
      step.kind = winograd ? BlockedStep::Kind::Winograd : BlockedStep::Kind::Conv;
      p.shapes.back().halo_h = layer.conv().pad_h + (winograd ? 1 : 0);
      p.shapes.back().halo_w = layer.conv().pad_w + (winograd ? 1 : 0);
      const bool fold = batchnorm_foldable(layers, i + 1);
      const std::size_t last = fold ? i + 1 : i;
      const bool relu = feeds_only_next(layers, last) && layers[last + 1].kind == LayerKind::Relu;
      const FoldedParams params = fold ? fold_batchnorm(layer, layers[i + 1]) : FoldedParams{layer.params.weight, layer.params.bias};
      if (winograd) {
        step.winograd = cpu::pack_winograd(layer.conv(), layer.in.c, params.weight, params.bias, relu);
        p.scratch = std::max(p.scratch, cpu::winograd_scratch_size(step.winograd));
      } else {
        step.conv = cpu::pack_conv(layer.conv(), layer.in.c, p.shapes.back().cb, params.weight, params.bias, relu);
      }
      i = last + (relu ? 2 : 1);
    } else if (layer.kind == LayerKind::BatchNorm) {
      step.kind = BlockedStep::Kind::Affine;
      const BatchNormAffine bn = batchnorm_affine(layer);
      const std::size_t padded = static_cast<std::size_t>(p.shapes.back().blocks) * kLanes;
      step.scale = bn.scale;
      step.shift = bn.shift;
      step.scale.resize(padded, 0.0f);
      step.shift.resize(padded, 0.0f);
      step.relu = feeds_only_next(layers, i) && layers[i + 1].kind == LayerKind::Relu;
      i += step.relu ? 2 : 1;
    } else if (layer.kind == LayerKind::Relu) {
      step.kind = BlockedStep::Kind::Relu;
      i += 1;
    } else if (layer.kind == LayerKind::MaxPool && !layer.pool().ceil_mode) {
      step.kind = BlockedStep::Kind::MaxPool;
      step.pool = layer.pool();
      i += 1;
    } else {
      break;
    }
    const Dims out = layers[i - 1].out;
    p.shapes.push_back(BlockedShape{kLanes, (out.c + kLanes - 1) / kLanes, out.h, out.w, 0, 0});
    p.steps.push_back(std::move(step));
  }
  p.end_layer = i;
  return p;
}

class CpuBackend final : public Backend {
 public:
  CpuBackend(const Network& network, int max_batch, const CpuOptions& options)
      : network_(network), max_batch_(max_batch), threads_(std::max(1, openblas_get_num_threads())),
        workers_(threads_) {
    if (options.direct_kernels && cpu::blocked_kernels_supported()) {
      blocked_ = plan_blocked(network, options);
      for (const Layer& layer : network.layers()) {
        linear_.push_back(layer.kind == LayerKind::Linear ? std::make_unique<cpu::PackedLinear>(cpu::pack_linear(layer)) : nullptr);
      }
    }
    if (max_batch < 1) throw std::invalid_argument("max_batch must be at least 1");
    std::size_t scratch = 0;
    for (const Layer& layer : network.layers()) {
      batchnorm_.push_back(layer.kind == LayerKind::BatchNorm ? batchnorm_affine(layer) : BatchNormAffine{});
      if (layer.kind == LayerKind::Conv2d) scratch = std::max(scratch, cpu::conv2d_scratch_size(layer));
    }
    // A worker only needs its buffers when a batch has more chunks than one, and a chunk never
    // holds more samples than a batch (a model with large activations at --batch 1 needs one).
    const int workers = std::min(threads_, (max_batch + kChunk - 1) / kChunk);
    const std::size_t chunk = static_cast<std::size_t>(std::min(kChunk, max_batch));
    for (int w = 0; w < workers; ++w) {
      ChunkBuffers b;
      for (const Layer& layer : network.layers()) {
        // Uninitialised on purpose: every element is written before it is read.
        b.activations.emplace_back(new float[chunk * layer.out.size()]);
      }
      b.scratch.reset(new float[std::max<std::size_t>(std::max(scratch, blocked_.scratch), 1)]);
      for (const BlockedShape& shape : blocked_.shapes) {
        b.blocked.emplace_back(new float[chunk * shape.size()]());  // zero halos
      }
      std::size_t most_inputs = 1;
      for (const Layer& layer : network.layers()) most_inputs = std::max(most_inputs, layer.sources.size());
      b.inputs.reserve(most_inputs);
      buffers_.push_back(std::move(b));
    }
  }

  std::string description() const override {
    std::string kernels = blocked_.end_layer ? "direct AVX-512 convolutions, " : "";
    return "cpu: " + kernels + std::string(openblas_get_config()) + ", " + std::to_string(threads_) + " threads";
  }
  const char* device() const override { return "cpu"; }
  int max_batch() const override { return max_batch_; }
  std::size_t layer_count() const override { return network_.layers().size(); }
  std::size_t output_size() const override { return network_.output_dims().size(); }

  // Runs the samples in chunks of kChunk through all layers, so that a chunk's activations stay in
  // the cache and memory does not grow with the batch size. One chunk runs on the calling thread
  // with OpenBLAS's own threads; several are spread over the workers, each with single-threaded
  // OpenBLAS calls (for these small matrix products that scales better than threading each one).
  void forward(const float* input, int n, float* output, std::size_t layer_count) override {
    if (n < 1 || n > max_batch_) throw std::invalid_argument("batch size out of range");
    if (layer_count < 1 || layer_count > network_.layers().size()) throw std::invalid_argument("layer_count out of range");
    const int chunks = (n + kChunk - 1) / kChunk;
    const int workers = std::min(chunks, static_cast<int>(buffers_.size()));
    if (workers <= 1) {
      for (int c = 0; c < chunks; ++c) run_chunk(buffers_[0], c, input, n, output, layer_count);
      return;
    }
    openblas_set_num_threads(1);
    try {
      // Chunks are taken from a shared counter rather than dealt out in advance, so that a worker
      // the (shared) machine holds back does not leave the others idle at the end.
      std::atomic<int> next{0};
      workers_.run([&](int w) {
        if (w >= workers) return;
        for (int c = next++; c < chunks; c = next++) run_chunk(buffers_[static_cast<std::size_t>(w)], c, input, n, output, layer_count);
      });
    } catch (...) {
      openblas_set_num_threads(threads_);
      throw;
    }
    openblas_set_num_threads(threads_);
  }

 private:
  // Samples per pass through the layers: small enough for a chunk's activations to stay in the
  // caches (about 1 MB per sample for the shipped model), large enough to amortise the calls.
  static constexpr int kChunk = kCpuChunk;

  void run_chunk(ChunkBuffers& b, int chunk, const float* input, int n, float* output, std::size_t layer_count) {
    const std::size_t in_size = network_.input().dims.size();
    const std::size_t out_size = network_.layers()[layer_count - 1].out.size();
    const int first = chunk * kChunk;
    const int m = std::min(kChunk, n - first);
    const float* x = input + static_cast<std::size_t>(first) * in_size;
    // Activation a of the chunk: the input (a = 0) or layer a - 1's output (network.h).
    auto activation = [&](std::size_t a) -> const float* { return a == 0 ? x : b.activations[a - 1].get(); };
    std::size_t i = 0;
    if (blocked_.end_layer > 0 && layer_count >= blocked_.end_layer) {
      run_blocked(b, x, m);
      i = blocked_.end_layer;
    }
    for (; i < layer_count; ++i) {
      const Layer& layer = network_.layers()[i];
      std::vector<const float*>& in = b.inputs;
      in.clear();
      for (std::size_t a : layer.sources) in.push_back(activation(a));
      run_layer(i, layer, in, m, b.activations[i].get(), b.scratch.get());
    }
    std::memcpy(output + static_cast<std::size_t>(first) * out_size, activation(layer_count),
                static_cast<std::size_t>(m) * out_size * sizeof(float));
  }

  // Layers [0, end_layer) of m samples on the blocked layout, sample by sample (one sample's
  // activations stay in the cache); the result goes to activations[end_layer - 1], plain NCHW.
  void run_blocked(ChunkBuffers& b, const float* x, int m) const {
    const std::vector<BlockedShape>& shapes = blocked_.shapes;
    const Dims in = network_.input().dims;
    const Dims out = network_.layers()[blocked_.end_layer - 1].out;
    for (int i = 0; i < m; ++i) {
      float* buffer = b.blocked[0].get() + static_cast<std::size_t>(i) * shapes[0].size();
      cpu::to_blocked(x + static_cast<std::size_t>(i) * in.size(), in.c, shapes[0], buffer);
      for (std::size_t s = 0; s < blocked_.steps.size(); ++s) {
        const BlockedStep& step = blocked_.steps[s];
        const float* src = b.blocked[s].get() + static_cast<std::size_t>(i) * shapes[s].size();
        float* dst = b.blocked[s + 1].get() + static_cast<std::size_t>(i) * shapes[s + 1].size();
        switch (step.kind) {
          case BlockedStep::Kind::Conv: cpu::conv_blocked(step.conv, shapes[s], src, shapes[s + 1], dst); break;
          case BlockedStep::Kind::Winograd: cpu::conv_winograd(step.winograd, shapes[s], src, shapes[s + 1], dst, b.scratch.get()); break;
          case BlockedStep::Kind::Affine: cpu::affine_blocked(step.scale, step.shift, step.relu, shapes[s], src, shapes[s + 1], dst); break;
          case BlockedStep::Kind::Relu: cpu::relu_blocked(shapes[s], src, shapes[s + 1], dst); break;
          case BlockedStep::Kind::MaxPool: cpu::maxpool_blocked(step.pool, shapes[s], src, shapes[s + 1], dst); break;
        }
      }
      const std::size_t last = blocked_.steps.size();
      cpu::from_blocked(shapes[last], b.blocked[last].get() + static_cast<std::size_t>(i) * shapes[last].size(), out.c,
                   b.activations[blocked_.end_layer - 1].get() + static_cast<std::size_t>(i) * out.size());
    }
  }

  void run_layer(std::size_t index, const Layer& layer, const std::vector<const float*>& in, int n, float* y,
                 float* scratch) const {
    const float* x = in[0];
    switch (layer.kind) {
      case LayerKind::Conv2d: cpu::conv2d_forward(layer, x, n, y, scratch); return;
      case LayerKind::BatchNorm: cpu::batchnorm_forward(layer, batchnorm_[index], x, n, y); return;
      case LayerKind::Relu: cpu::relu_forward(layer, x, n, y); return;
      case LayerKind::MaxPool: cpu::maxpool_forward(layer, x, n, y); return;
      case LayerKind::AvgPool: cpu::avgpool_forward(layer, x, n, y); return;
      case LayerKind::GlobalAvgPool: cpu::global_avgpool_forward(layer, x, n, y); return;
      case LayerKind::Flatten: std::memcpy(y, x, static_cast<std::size_t>(n) * layer.in.size() * sizeof(float)); return;
      case LayerKind::Linear:
        if (!linear_.empty()) return cpu::linear_packed(*linear_[index], x, n, y);
        return cpu::linear_forward(layer, x, n, y);
      case LayerKind::Softmax: cpu::softmax_forward(layer, x, n, y); return;
      case LayerKind::Add: cpu::add_forward(layer, x, in[1], n, y); return;
      case LayerKind::Mul: cpu::mul_forward(layer, x, in[1], n, y); return;
      case LayerKind::Concat: cpu::concat_forward(layer, in, n, y); return;
      case LayerKind::Upsample: cpu::upsample_forward(layer, x, n, y); return;
      case LayerKind::Pad: cpu::pad_forward(layer, x, n, y); return;
      case LayerKind::AdaptiveAvgPool: cpu::adaptive_avgpool_forward(layer, x, n, y); return;
      INFER_CASE_POINTWISE_OPS cpu::pointwise_forward(layer, x, n, y); return;
    }
  }

  const Network& network_;
  int max_batch_;
  int threads_;                                  // OpenBLAS's thread count when the backend was built
  std::vector<BatchNormAffine> batchnorm_;  // per layer; empty for other kinds
  BlockedProgram blocked_;                       // empty (end_layer 0) when not used
  std::vector<std::unique_ptr<cpu::PackedLinear>> linear_;  // per layer with direct kernels, else empty
  std::vector<ChunkBuffers> buffers_;            // one per worker that can have a chunk
  cpu::Workers workers_;                         // last: its threads stop before the buffers go
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const Network& network, int max_batch, const CpuOptions& options) {
  if (options.kernels == CpuKernels::Onednn) return make_onednn_backend(network, max_batch);
  return std::make_unique<CpuBackend>(network, max_batch, options);
}

}  // namespace infer
