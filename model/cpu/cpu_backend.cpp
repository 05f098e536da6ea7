#include "cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "ops.h"

namespace infer {
namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend(const Network& network, int max_batch) : network_(network), max_batch_(max_batch) {
    if (max_batch < 1) throw std::invalid_argument("max_batch must be at least 1");
    std::size_t scratch = 0;
    for (const Layer& layer : network.layers()) {
      // Uninitialised on purpose: every element is written before it is read.
      activations_.emplace_back(new float[static_cast<std::size_t>(kChunk) * layer.out.size()]);
      batchnorm_.push_back(layer.kind == LayerKind::BatchNorm ? cpu::fold_batchnorm(layer) : cpu::BatchNormFolded{});
      if (layer.kind == LayerKind::Conv2d) scratch = std::max(scratch, cpu::conv2d_scratch_size(layer));
    }
    scratch_.reset(new float[std::max<std::size_t>(scratch, 1)]);
  }

  std::string description() const override {
    return "cpu: " + std::string(openblas_get_config()) + ", " + std::to_string(openblas_get_num_threads()) +
           " threads";
  }
  const char* device() const override { return "cpu"; }
  int max_batch() const override { return max_batch_; }
  std::size_t layer_count() const override { return network_.layers().size(); }

  // Runs the samples in chunks of kChunk through all layers: the activations of a chunk stay in
  // the cache, and memory does not grow with the batch size.
  void forward(const float* input, int n, float* output, std::size_t layer_count) override {
    if (n < 1 || n > max_batch_) throw std::invalid_argument("batch size out of range");
    if (layer_count < 1 || layer_count > network_.layers().size()) throw std::invalid_argument("layer_count out of range");
    const std::size_t in_size = network_.input().dims.size();
    const std::size_t out_size = network_.layers()[layer_count - 1].out.size();
    for (int first = 0; first < n; first += kChunk) {
      const int m = std::min(kChunk, n - first);
      const float* x = input + static_cast<std::size_t>(first) * in_size;
      for (std::size_t i = 0; i < layer_count; ++i) {
        float* y = activations_[i].get();
        run_layer(i, network_.layers()[i], x, m, y);
        x = y;
      }
      std::memcpy(output + static_cast<std::size_t>(first) * out_size, x, static_cast<std::size_t>(m) * out_size * sizeof(float));
    }
  }

 private:
  void run_layer(std::size_t index, const Layer& layer, const float* x, int n, float* y) {
    switch (layer.kind) {
      case LayerKind::Conv2d: cpu::conv2d_forward(layer, x, n, y, scratch_.get()); return;
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
  // Samples per pass through the layers: small enough for a chunk's activations to stay in the
  // caches (about 1 MB per sample for the shipped model), large enough to amortise the calls.
  static constexpr int kChunk = 8;

  std::vector<std::unique_ptr<float[]>> activations_;  // one buffer per layer output, kChunk samples
  std::vector<cpu::BatchNormFolded> batchnorm_;        // per layer; empty for other kinds
  std::unique_ptr<float[]> scratch_;                   // im2col matrix, shared by all convolutions
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const Network& network, int max_batch) {
  return std::make_unique<CpuBackend>(network, max_batch);
}

}  // namespace infer
