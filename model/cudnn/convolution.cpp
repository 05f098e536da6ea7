// Convolution steps (conv2d and linear): algorithm choice, once when the executor is built, and
// execution.
//
// Algorithms: cudnnGetConvolutionForwardAlgorithm_v7 ranks them by cuDNN's heuristics (no
// benchmarking: building is quick and picks the same algorithm every time). We take them in that
// order and skip any whose status is not success, any reported for tensor-op math, and any whose
// workspace at n = 1 or n = max_batch exceeds kWorkspaceLimitBytes. The convolution descriptor
// keeps CUDNN_FMA_MATH: unlike frameworks that allow TF32, we never copy a result's mathType into it.
//
// Modes (see ConvolutionMode):
//   convolution + ReLU  FusedRelu with the first candidate the fused call accepts, else Separate.
//   convolution alone   FusedIdentity when IMPLICIT_PRECOMP_GEMM is a candidate and the fused call
//                       accepts it (cuDNN documents CUDNN_ACTIVATION_IDENTITY in
//                       cudnnConvolutionBiasActivationForward for that algorithm only), else Separate.
// Whether the fused call accepts a configuration is found by running it once at n = max_batch and
// n = 1 on the zeroed buffers (a probe at build time), because cuDNN declines some fused
// configurations that its separate calls run.
#include <algorithm>

#include "executor.h"

namespace infer::cudnn {
namespace {

constexpr float kOne = 1.0f;
constexpr float kZero = 0.0f;

struct Candidate {
  cudnnConvolutionFwdAlgo_t algo;
  std::size_t workspace;  // bytes, the larger of n = 1 and n = max_batch
};

// Statuses with which cuDNN declines a configuration (as opposed to failing while running it).
bool declines(cudnnStatus_t s) {
  return CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED || CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_BAD_PARAM;
}

// The algorithms usable for a convolution step, best first. Leaves the plan at batch max_batch.
std::vector<Candidate> list_candidates(cudnnHandle_t handle, Plan& plan, const Step& step) {
  const Layer& layer = plan.network().layers()[step.first_layer];
  const std::string context = layer_context(layer);
  const Activation& x = plan.activations()[step.input()];
  const Activation& y = plan.activations()[step.first_layer + 1];  // the convolution's own output

  plan.set_batch(plan.max_batch());
  int max_count = 0;
  INFER_CUDNN_CHECK(context, cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &max_count));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(std::max(max_count, 1)));
  int returned = 0;
  INFER_CUDNN_CHECK(context, cudnnGetConvolutionForwardAlgorithm_v7(handle, x.desc.get(), step.filter.get(),
                                                                    step.convolution.get(), y.desc.get(),
                                                                    static_cast<int>(perf.size()), &returned,
                                                                    perf.data()));
  std::vector<Candidate> out;
  for (int i = 0; i < returned; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& p = perf[static_cast<std::size_t>(i)];
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    if (p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;
    if (std::any_of(out.begin(), out.end(), [&](const Candidate& c) { return c.algo == p.algo; })) continue;
    out.push_back(Candidate{p.algo, 0});
  }
  // Workspace at both batch ends; an algorithm cuDNN declines at either end is dropped.
  for (int n : {plan.max_batch(), 1}) {
    plan.set_batch(n);
    for (Candidate& c : out) {
      if (c.workspace > kWorkspaceLimitBytes) continue;
      std::size_t bytes = 0;
      const cudnnStatus_t s = cudnnGetConvolutionForwardWorkspaceSize(
          handle, x.desc.get(), step.filter.get(), step.convolution.get(), y.desc.get(), c.algo, &bytes);
      if (declines(s)) {
        bytes = kWorkspaceLimitBytes + 1;
      } else if (s != CUDNN_STATUS_SUCCESS) {
        detail::throw_cudnn_error(s, "cudnnGetConvolutionForwardWorkspaceSize", context, __FILE__, __LINE__);
      }
      c.workspace = std::max(c.workspace, bytes);
    }
  }
  plan.set_batch(plan.max_batch());
  const auto too_large = [](const Candidate& c) { return c.workspace > kWorkspaceLimitBytes; };
  out.erase(std::remove_if(out.begin(), out.end(), too_large), out.end());
  if (out.empty()) {
    throw GpuError(context + ": cuDNN offers no FP32 (FMA math) forward algorithm for this convolution that needs at "
                             "most " + std::to_string(kWorkspaceLimitBytes >> 20) + " MiB of workspace (" +
                   std::to_string(returned) + " algorithms considered); run this model on the CPU backend");
  }
  return out;
}

}  // namespace

void Executor::choose_algorithms() {
  const std::vector<Step>& steps = plan_.steps();
  std::vector<std::vector<Candidate>> candidates(steps.size());
  std::size_t probe_workspace = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind != StepKind::Convolution) continue;
    candidates[i] = list_candidates(handle_.get(), plan_, steps[i]);
    for (const Candidate& c : candidates[i]) probe_workspace = std::max(probe_workspace, c.workspace);
  }
  // Large enough for every candidate while probing; shrunk to what the chosen ones need below.
  workspace_ = DeviceBuffer(probe_workspace, "convolution workspace");

  convolutions_.assign(steps.size(), ConvolutionChoice{});
  std::size_t needed = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind != StepKind::Convolution) continue;
    const Step& step = steps[i];
    ConvolutionChoice& choice = convolutions_[i];
    const Candidate& plain = candidates[i].front();
    choice.plain_algo = plain.algo;
    choice.workspace_bytes = plain.workspace;
    for (const Candidate& c : candidates[i]) {
      const bool eligible = step.fused_relu || c.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
      if (eligible && fused_call_runs(step, c.algo, step.fused_relu)) {
        choice.mode = step.fused_relu ? ConvolutionMode::FusedRelu : ConvolutionMode::FusedIdentity;
        choice.fused_algo = c.algo;
        choice.workspace_bytes = std::max(choice.workspace_bytes, c.workspace);
        break;
      }
    }
    needed = std::max(needed, choice.workspace_bytes);
  }
  plan_.set_batch(plan_.max_batch());
  if (needed < workspace_.bytes()) {
    INFER_CUDA_CHECK("convolution workspace", cudaStreamSynchronize(stream_.get()));  // probes are done with it
    workspace_ = DeviceBuffer();
    workspace_ = DeviceBuffer(needed, "convolution workspace");
  }
}

bool Executor::fused_call_runs(const Step& step, cudnnConvolutionFwdAlgo_t algo, bool relu) {
  for (int n : {plan_.max_batch(), 1}) {
    plan_.set_batch(n);
    const cudnnStatus_t s = conv_bias_activation(step, algo, relu);
    if (declines(s)) return false;
    if (s != CUDNN_STATUS_SUCCESS) {
      const std::string context = layer_context(plan_.network().layers()[step.first_layer]);
      detail::throw_cudnn_error(s, "cudnnConvolutionBiasActivationForward", context, __FILE__, __LINE__);
    }
  }
  return true;
}

// y = act(conv(x) + bias), act = ReLU or identity, written to the output of the step's last layer.
// z (the residual input) is y itself with alpha2 = 0: this network has no residual additions.
cudnnStatus_t Executor::conv_bias_activation(const Step& step, cudnnConvolutionFwdAlgo_t algo, bool relu) {
  const Activation& x = plan_.activations()[step.input()];
  const Activation& y = plan_.activations()[step.output()];
  const LayerWeights& w = weights_[step.first_layer];
  const void* bias = step.has_bias ? w.bias.get() : zero_bias_.get();
  float* out = buffer(step.output());
  return cudnnConvolutionBiasActivationForward(handle_.get(), &kOne, x.desc.get(), buffer(step.input()),
                                               step.filter.get(), w.weight.get(), step.convolution.get(), algo,
                                               workspace_.get(), workspace_.bytes(), &kZero, y.desc.get(), out,
                                               step.bias.get(), bias, relu ? plan_.relu() : plan_.identity(),
                                               y.desc.get(), out);
}

// with_relu: the step's ReLU runs too (false for a convolution alone, or a forward pass that
// stops after the convolution of a convolution+ReLU step).
void Executor::run_convolution(const Step& step, const ConvolutionChoice& choice, bool with_relu) {
  const Layer& layer = plan_.network().layers()[step.first_layer];
  const bool fused = (with_relu && choice.mode == ConvolutionMode::FusedRelu) ||
                     (!step.fused_relu && choice.mode == ConvolutionMode::FusedIdentity);
  if (fused) {
    const cudnnStatus_t s = conv_bias_activation(step, choice.fused_algo, with_relu);
    if (s != CUDNN_STATUS_SUCCESS) {
      detail::throw_cudnn_error(s, with_relu ? "cudnnConvolutionBiasActivationForward (ReLU)"
                                             : "cudnnConvolutionBiasActivationForward (identity)",
                                layer_context(layer), __FILE__, __LINE__);
    }
    return;
  }
  cudnnHandle_t handle = handle_.get();
  const Activation& x = plan_.activations()[step.input()];
  const Activation& y = plan_.activations()[step.first_layer + 1];  // shares the step output's buffer
  const LayerWeights& w = weights_[step.first_layer];
  float* out = buffer(step.first_layer + 1);
  INFER_CUDNN_CHECK(layer_context(layer),
                    cudnnConvolutionForward(handle, &kOne, x.desc.get(), buffer(step.input()), step.filter.get(),
                                            w.weight.get(), step.convolution.get(), choice.plain_algo,
                                            workspace_.get(), workspace_.bytes(), &kZero, y.desc.get(), out));
  if (step.has_bias) {
    INFER_CUDNN_CHECK(layer_context(layer),
                      cudnnAddTensor(handle, &kOne, step.bias.get(), w.bias.get(), &kOne, y.desc.get(), out));
  }
  if (with_relu) {
    // In place (x == y), which cudnnActivationForward allows.
    INFER_CUDNN_CHECK(layer_context(layer), cudnnActivationForward(handle, plan_.relu(), &kOne, y.desc.get(), out,
                                                                   &kZero, y.desc.get(), out));
  }
}

}  // namespace infer::cudnn
