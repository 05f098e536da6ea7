// The parameters on the device (executor.h LayerWeights): converted on the host to the plan's
// storage type and layout, uploaded once when the executor is built.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "graph/fold.h"
#include "backends/cudnn/device.h"
#include "backends/cudnn/executor.h"
#include "backends/cudnn/half.h"

namespace infer::cudnn {
namespace {

// Float values as bytes. memcpy is not given the null data() of an empty vector (a layer without
// a bias): undefined behaviour, which UBSan reported when the GPU tests first ran on the stand-in.
std::vector<unsigned char> float_bytes(const std::vector<float>& values) {
  std::vector<unsigned char> out(values.size() * sizeof(float));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// The weight of a conv/linear layer (or its folded form) as the plan stores it: float KCRS, or
// half KRSC for NHWC (Fp16). Linear weights [out, in] are [K, C, 1, 1].
std::vector<unsigned char> filter_bytes(const Plan& plan, const Layer& layer, const std::vector<float>& weight) {
  if (plan.storage_type() == CUDNN_DATA_FLOAT) return float_bytes(weight);
  std::vector<unsigned char> out;
  const std::size_t k = static_cast<std::size_t>(layer.out.c);
  const std::size_t rs =
      layer.kind == LayerKind::Conv2d ? static_cast<std::size_t>(layer.conv().kernel_h) * layer.conv().kernel_w : 1;
  const std::size_t c = weight.size() / (k * rs);
  std::vector<std::uint16_t> half(weight.size());
  for (std::size_t ki = 0; ki < k; ++ki) {
    for (std::size_t ci = 0; ci < c; ++ci) {
      for (std::size_t r = 0; r < rs; ++r) {
        half[(ki * rs + r) * c + ci] = float_to_half(weight[(ki * c + ci) * rs + r]);
      }
    }
  }
  out.resize(half.size() * sizeof(std::uint16_t));
  std::memcpy(out.data(), half.data(), out.size());
  return out;
}

// A bias in the plan's storage type.
std::vector<unsigned char> bias_bytes(const Plan& plan, const std::vector<float>& bias) {
  if (plan.storage_type() == CUDNN_DATA_FLOAT) return float_bytes(bias);
  std::vector<unsigned char> out;
  out.resize(bias.size() * sizeof(std::uint16_t));
  for (std::size_t i = 0; i < bias.size(); ++i) {
    const std::uint16_t h = float_to_half(bias[i]);
    std::memcpy(out.data() + i * sizeof h, &h, sizeof h);
  }
  return out;
}

}  // namespace

// Every parameter on the device, once: conv/linear weights and biases in the plan's storage type,
// batch-norm parameters as float, and for each folded step fold.h's weights and bias. The host
// copies live until the stream has consumed them (the constructor synchronises).
void Executor::upload_weights() {
  const std::vector<Layer>& layers = plan_.network().layers();
  cudaStream_t stream = stream_.get();
  std::vector<std::vector<unsigned char>> host;  // kept alive until the copies are done
  const SyncOnUnwind sync_on_throw(stream);      // ... also when an upload throws
  auto upload = [&](std::vector<unsigned char> bytes, const std::string& context) {
    ConstantBuffer b = ConstantBuffer::upload(bytes.data(), bytes.size(), stream, context);
    host.push_back(std::move(bytes));
    return b;
  };
  std::size_t zero_bias_channels = 0;
  for (const Layer& layer : layers) {
    const std::string context = layer_context(layer);
    const LayerParams& p = layer.params;
    LayerWeights w;
    if (layer.kind == LayerKind::Conv2d || layer.kind == LayerKind::Linear) {
      w.weight = upload(filter_bytes(plan_, layer, p.weight), context);
      w.bias = upload(bias_bytes(plan_, p.bias), context);
      if (p.bias.empty()) zero_bias_channels = std::max(zero_bias_channels, static_cast<std::size_t>(layer.out.c));
    } else {
      w.weight = upload(float_bytes(p.weight), context);
      w.bias = upload(float_bytes(p.bias), context);
      w.running_mean = upload(float_bytes(p.running_mean), context);
      w.running_var = upload(float_bytes(p.running_var), context);
    }
    weights_.push_back(std::move(w));
  }
  for (const Step& step : plan_.steps()) {
    if (!step.folded_bn) continue;
    const Layer& producer = layers[step.first_layer];
    const FoldedParams folded = fold_batchnorm(producer, layers[step.first_layer + 1]);
    const std::string context = layer_context(producer);
    weights_[step.first_layer].folded_weight = upload(filter_bytes(plan_, producer, folded.weight), context);
    weights_[step.first_layer].folded_bias = upload(bias_bytes(plan_, folded.bias), context);
  }
  // Float-sized, for a step that falls back to float too; zero bits are 0.0f and half 0.
  zero_bias_ = ConstantBuffer::zeros(zero_bias_channels * sizeof(float), stream, "zero bias");
  INFER_CUDA_CHECK("weight upload", cudaStreamSynchronize(stream));
}

// The float KCRS weights and float biases of a step that falls back (ConvolutionChoice::
// float_fallback): the layer's own, and the folded ones for a folded step. Synchronises the
// stream before the host copies go.
void Executor::upload_float_weights(const Step& step) {
  const std::vector<Layer>& layers = plan_.network().layers();
  const Layer& producer = layers[step.first_layer];
  const std::string context = layer_context(producer);
  cudaStream_t stream = stream_.get();
  std::vector<std::vector<unsigned char>> host;
  const SyncOnUnwind sync_on_throw(stream);
  auto upload = [&](const std::vector<float>& values) {
    host.push_back(float_bytes(values));
    return ConstantBuffer::upload(host.back().data(), host.back().size(), stream, context);
  };
  LayerWeights& w = weights_[step.first_layer];
  w.float_weight = upload(producer.params.weight);
  w.float_bias = upload(producer.params.bias);
  if (step.folded_bn) {
    const FoldedParams folded = fold_batchnorm(producer, layers[step.first_layer + 1]);
    w.float_folded_weight = upload(folded.weight);
    w.float_folded_bias = upload(folded.bias);
  }
  INFER_CUDA_CHECK(context, cudaStreamSynchronize(stream));
}

}  // namespace infer::cudnn
