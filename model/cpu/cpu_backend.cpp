#include "cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "ops.h"
#include "workers.h"

namespace infer {
namespace {

// Buffers one worker needs to run a chunk through the network.
struct ChunkBuffers {
  std::vector<std::unique_ptr<float[]>> activations;  // one per layer output, kChunk samples
  std::unique_ptr<float[]> scratch;                   // im2col matrix, shared by all convolutions
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(const Network& network, int max_batch)
      : network_(network), max_batch_(max_batch), threads_(std::max(1, openblas_get_num_threads())),
        workers_(threads_) {
    if (max_batch < 1) throw std::invalid_argument("max_batch must be at least 1");
    std::size_t scratch = 0;
    for (const Layer& layer : network.layers()) {
      batchnorm_.push_back(layer.kind == LayerKind::BatchNorm ? cpu::fold_batchnorm(layer) : cpu::BatchNormFolded{});
      if (layer.kind == LayerKind::Conv2d) scratch = std::max(scratch, cpu::conv2d_scratch_size(layer));
    }
    // A worker only needs its buffers when a batch has more chunks than one.
    const int workers = std::min(threads_, (max_batch + kChunk - 1) / kChunk);
    for (int w = 0; w < workers; ++w) {
      ChunkBuffers b;
      for (const Layer& layer : network.layers()) {
        // Uninitialised on purpose: every element is written before it is read.
        b.activations.emplace_back(new float[static_cast<std::size_t>(kChunk) * layer.out.size()]);
      }
      b.scratch.reset(new float[std::max<std::size_t>(scratch, 1)]);
      buffers_.push_back(std::move(b));
    }
  }

  std::string description() const override {
    return "cpu: " + std::string(openblas_get_config()) + ", " + std::to_string(threads_) + " threads";
  }
  const char* device() const override { return "cpu"; }
  int max_batch() const override { return max_batch_; }
  std::size_t layer_count() const override { return network_.layers().size(); }

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
      workers_.run([&](int w) {
        if (w >= workers) return;
        for (int c = w; c < chunks; c += workers) run_chunk(buffers_[static_cast<std::size_t>(w)], c, input, n, output, layer_count);
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
  static constexpr int kChunk = 8;

  void run_chunk(ChunkBuffers& b, int chunk, const float* input, int n, float* output, std::size_t layer_count) {
    const std::size_t in_size = network_.input().dims.size();
    const std::size_t out_size = network_.layers()[layer_count - 1].out.size();
    const int first = chunk * kChunk;
    const int m = std::min(kChunk, n - first);
    const float* x = input + static_cast<std::size_t>(first) * in_size;
    for (std::size_t i = 0; i < layer_count; ++i) {
      float* y = b.activations[i].get();
      run_layer(i, network_.layers()[i], x, m, y, b.scratch.get());
      x = y;
    }
    std::memcpy(output + static_cast<std::size_t>(first) * out_size, x, static_cast<std::size_t>(m) * out_size * sizeof(float));
  }

  void run_layer(std::size_t index, const Layer& layer, const float* x, int n, float* y, float* scratch) const {
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
    }
  }

  const Network& network_;
  int max_batch_;
  int threads_;                                  // OpenBLAS's thread count when the backend was built
  std::vector<cpu::BatchNormFolded> batchnorm_;  // per layer; empty for other kinds
  std::vector<ChunkBuffers> buffers_;            // one per worker that can have a chunk
  cpu::Workers workers_;                         // last: its threads stop before the buffers go
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const Network& network, int max_batch) {
  return std::make_unique<CpuBackend>(network, max_batch);
}

}  // namespace infer
