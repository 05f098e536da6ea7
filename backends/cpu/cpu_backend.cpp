#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "graph/fold.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/threads.h"
#include "backends/cpu/workers.h"

namespace infer {
namespace {

// Buffers one worker needs to run a chunk through the network.
struct ChunkBuffers {
  std::vector<std::unique_ptr<float[]>> activations;  // one per layer output, min(kChunk, max_batch) samples
  std::unique_ptr<float[]> scratch;                   // im2col matrix, shared by all convolutions
  std::vector<const float*> inputs;                   // the current layer's inputs (reserved: no allocation per layer)
};

// Every layer on the plain NCHW kernels of ops.h, in chunks of kCpuChunk samples spread over
// worker threads.
class PlainBackend final : public Backend {
 public:
  PlainBackend(const Network& network, int max_batch)
      : network_(network),
        max_batch_(max_batch),
        threads_(std::max(1, cpu::gemm_threads())),
        workers_(threads_) {
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
      b.scratch.reset(new float[std::max<std::size_t>(scratch, 1)]);
      std::size_t most_inputs = 1;
      for (const Layer& layer : network.layers()) most_inputs = std::max(most_inputs, layer.sources.size());
      b.inputs.reserve(most_inputs);
      buffers_.push_back(std::move(b));
    }
  }

  std::string description() const override {
    return "cpu: plain kernels, " + cpu::gemm_library() + ", " + cpu::threads_string(threads_);
  }
  const char* device() const override { return "cpu"; }
  int max_batch() const override { return max_batch_; }
  std::size_t layer_count() const override { return network_.layers().size(); }
  std::size_t output_size() const override { return network_.output_dims().size(); }

  // Runs the samples in chunks of kChunk through all layers, so that a chunk's activations stay in
  // the cache and memory does not grow with the batch size. One chunk runs on the calling thread
  // with the sgemm's own threads (OpenBLAS's; the portable sgemm has none: one thread); several are
  // spread over the workers, each with single-threaded sgemm calls (for these small matrix products
  // that scales better than threading each one).
  void forward(const float* input, int n, float* output, std::size_t layer_count) override {
    check_forward_arguments(n, layer_count);
    const int chunks = (n + kChunk - 1) / kChunk;
    const int workers = std::min(chunks, static_cast<int>(buffers_.size()));
    if (workers <= 1) {
      for (int c = 0; c < chunks; ++c) run_chunk(buffers_[0], c, input, n, output, layer_count);
      return;
    }
    cpu::set_gemm_threads(1);
    try {
      // Chunks are taken from a shared counter rather than dealt out in advance, so that a worker
      // the (shared) machine holds back does not leave the others idle at the end.
      std::atomic<int> next{0};
      workers_.run([&](int w) {
        if (w >= workers) return;
        for (int c = next++; c < chunks; c = next++)
          run_chunk(buffers_[static_cast<std::size_t>(w)], c, input, n, output, layer_count);
      });
    } catch (...) {
      cpu::set_gemm_threads(threads_);
      throw;
    }
    cpu::set_gemm_threads(threads_);
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
    for (std::size_t i = 0; i < layer_count; ++i) {
      const Layer& layer = network_.layers()[i];
      std::vector<const float*>& in = b.inputs;
      in.clear();
      for (std::size_t a : layer.sources) in.push_back(activation(a));
      run_layer(i, layer, in, m, b.activations[i].get(), b.scratch.get());
    }
    std::memcpy(output + static_cast<std::size_t>(first) * out_size, activation(layer_count),
                static_cast<std::size_t>(m) * out_size * sizeof(float));
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
      case LayerKind::Linear: cpu::linear_forward(layer, x, n, y); return;
      case LayerKind::Softmax: cpu::softmax_forward(layer, x, n, y); return;
      case LayerKind::Add: cpu::add_forward(layer, x, in[1], n, y); return;
      case LayerKind::Mul: cpu::mul_forward(layer, x, in[1], n, y); return;
      case LayerKind::Concat: cpu::concat_forward(layer, in, n, y); return;
      case LayerKind::Upsample: cpu::upsample_forward(layer, x, n, y); return;
      case LayerKind::Pad: cpu::pad_forward(layer, x, n, y); return;
      case LayerKind::ChannelShuffle: cpu::channel_shuffle_forward(layer, x, n, y); return;
      case LayerKind::ChannelSlice: cpu::channel_slice_forward(layer, x, n, y); return;
      case LayerKind::Resize: cpu::resize_forward(layer, x, n, y); return;
      case LayerKind::LayerNorm: cpu::layernorm_forward(layer, x, n, y); return;
      case LayerKind::AdaptiveAvgPool:
        cpu::adaptive_avgpool_forward(layer, x, n, y);
        return;
        INFER_CASE_POINTWISE_OPS cpu::pointwise_forward(layer, x, n, y);
        return;
    }
  }

  const Network& network_;
  int max_batch_;
  int threads_;                             // gemm_threads() when the backend was built
  std::vector<BatchNormAffine> batchnorm_;  // per layer; empty for other kinds
  std::vector<ChunkBuffers> buffers_;       // one per worker that can have a chunk
  cpu::Workers workers_;                    // last: its threads stop before the buffers go
};

}  // namespace

std::unique_ptr<Backend> make_plain_backend(const Network& network, int max_batch) {
  return std::make_unique<PlainBackend>(network, max_batch);
}

std::unique_ptr<Backend> make_cpu_backend(const Network& network, int max_batch, const CpuOptions& options) {
  switch (options.kernels) {
    case CpuKernels::Onednn:
      if (!onednn_available()) return make_plain_backend(network, max_batch);
      return make_onednn_backend(network, max_batch, options.winograd);
    case CpuKernels::Plain: return make_plain_backend(network, max_batch);
  }
  throw std::invalid_argument("unknown CPU kernel set");
}

bool winograd_shape(const Layer& layer) {
  if (layer.kind != LayerKind::Conv2d) return false;
  const Conv2dAttrs& a = layer.conv();
  return a.groups == 1 && a.kernel_h == 3 && a.kernel_w == 3 && a.stride_h == 1 && a.stride_w == 1 &&
         a.dilation_h == 1 && a.dilation_w == 1 && layer.in.c % 16 == 0 && a.out_channels % 16 == 0;
}

}  // namespace infer
