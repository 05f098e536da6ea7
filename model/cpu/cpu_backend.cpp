#include "cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
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
      activations_.emplace_back(static_cast<std::size_t>(max_batch) * layer.out.size());
      batchnorm_.push_back(layer.kind == LayerKind::BatchNorm ? cpu::fold_batchnorm(layer) : cpu::BatchNormFolded{});
      if (layer.kind == LayerKind::Conv2d) scratch = std::max(scratch, cpu::conv2d_scratch_size(layer));
    }
    scratch_.resize(scratch);
  }

  std::string description() const override {
    return "cpu: OpenBLAS " + std::string(openblas_get_config()) + ", " + std::to_string(openblas_get_num_threads()) +
           " threads";
  }
  const char* device() const override { return "cpu"; }
  int max_batch() const override { return max_batch_; }
  std::size_t layer_count() const override { return network_.layers().size(); }

  void forward(const float* input, int n, float* output, std::size_t layer_count) override {
    if (n < 1 || n > max_batch_) throw std::invalid_argument("batch size out of range");
    if (layer_count < 1 || layer_count > network_.layers().size()) throw std::invalid_argument("layer_count out of range");
    const float* x = input;
    for (std::size_t i = 0; i < layer_count; ++i) {
      const Layer& layer = network_.layers()[i];
      float* y = activations_[i].data();
      run_layer(i, layer, x, n, y);
      x = y;
    }
    const std::size_t count = static_cast<std::size_t>(n) * network_.layers()[layer_count - 1].out.size();
    std::memcpy(output, x, count * sizeof(float));
  }

 private:
  void run_layer(std::size_t index, const Layer& layer, const float* x, int n, float* y) {
    switch (layer.kind) {
      case LayerKind::Conv2d: cpu::conv2d_forward(layer, x, n, y, scratch_.data()); return;
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
  std::vector<std::vector<float>> activations_;  // one buffer per layer output, max_batch samples
  std::vector<cpu::BatchNormFolded> batchnorm_;  // per layer; empty for other kinds
  std::vector<float> scratch_;                   // im2col matrix, shared by all convolutions
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const Network& network, int max_batch) {
  return std::make_unique<CpuBackend>(network, max_batch);
}

}  // namespace infer
