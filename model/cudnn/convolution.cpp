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
// Whether a call accepts a configuration is found by running it once at n = max_batch and n = 1
// on the zeroed buffers with the workspace it will get (a probe at build time): cuDNN's heuristics
// report SUCCESS for algorithms that a call can still decline, and it declines some fused
// configurations that its separate calls run. The separate path's algorithm is probed too, since
// partial forward passes and a fused call declined at another batch size fall back to it.
#include <algorithm>
#include <functional>

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

// While probing at build time, an internal error (for instance a runtime-compiled engine whose
// NVRTC compilation failed, CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED) also means "use
// another candidate"; an execution failure does not.
bool probe_declines(cudnnStatus_t s) {
  return declines(s) || CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_INTERNAL_ERROR;
}

// A declined probe leaves its message in cuDNN's last-error buffer; read it away so that the
// detail of a later real failure (check.h) is not a stale probe message.
void clear_last_error() {
  char discard[256];
  cudnnGetLastErrorString(discard, sizeof discard);
}

// FFT and Winograd-nonfused algorithms transform the operands; their error is not the summation-
// order error the cross-backend tests bound (tests/test_gpu_backend.cpp), and for this project's
// small layers the GEMM-based algorithms are what the heuristics prefer anyway.
bool transforms_operands(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
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
    if (transforms_operands(p.algo)) continue;
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
    const std::string context = layer_context(plan_.network().layers()[step.first_layer]);
    ConvolutionChoice& choice = convolutions_[i];
    // The separate calls run partial forward passes too, so they need an algorithm that runs even
    // when the fused call is chosen. A heuristic's SUCCESS does not guarantee that: probe it.
    const Candidate* plain = nullptr;
    for (const Candidate& c : candidates[i]) {
      if (plain_call_runs(step, c.algo, c.workspace)) {
        plain = &c;
        break;
      }
    }
    if (!plain) {
      throw GpuError(context + ": cudnnConvolutionForward declined every FP32 algorithm the heuristics offered (" +
                     std::to_string(candidates[i].size()) + "); run this model on the CPU backend");
    }
    choice.plain_algo = plain->algo;
    choice.workspace_bytes = plain->workspace;
    for (const Candidate& c : candidates[i]) {
      const bool eligible = step.fused_relu || c.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
      if (eligible && fused_call_runs(step, c.algo, step.fused_relu, c.workspace)) {
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

bool Executor::fused_call_runs(const Step& step, cudnnConvolutionFwdAlgo_t algo, bool relu, std::size_t workspace) {
  return call_runs(step, "cudnnConvolutionBiasActivationForward",
                   [&] { return conv_bias_activation(step, algo, relu, workspace); });
}

bool Executor::plain_call_runs(const Step& step, cudnnConvolutionFwdAlgo_t algo, std::size_t workspace) {
  return call_runs(step, "cudnnConvolutionForward", [&] { return plain_convolution(step, algo, workspace); });
}

// Runs `call` at n = max_batch and n = 1: false if cuDNN declines it at either, throws if it fails.
bool Executor::call_runs(const Step& step, const char* name, const std::function<cudnnStatus_t()>& call) {
  for (int n : {plan_.max_batch(), 1}) {
    plan_.set_batch(n);
    const cudnnStatus_t s = call();
    if (probe_declines(s)) {
      clear_last_error();
      return false;
    }
    if (s != CUDNN_STATUS_SUCCESS) {
      const std::string context = layer_context(plan_.network().layers()[step.first_layer]);
      detail::throw_cudnn_error(s, name, context, __FILE__, __LINE__);
    }
  }
  return true;
}

// y = act(conv(x) + bias), act = ReLU or identity, written to the output of the step's last layer.
// z (the residual input) is y itself with alpha2 = 0: this network has no residual additions.
// `workspace` bytes of the shared workspace are offered: the probes and the real calls offer the
// same amount, so a configuration that passed its probe gets what it ran with.
cudnnStatus_t Executor::conv_bias_activation(const Step& step, cudnnConvolutionFwdAlgo_t algo, bool relu,
                                             std::size_t workspace) {
  const Activation& x = plan_.activations()[step.input()];
  const Activation& y = plan_.activations()[step.output()];
  const LayerWeights& w = weights_[step.first_layer];
  const void* bias = step.has_bias ? w.bias.get() : zero_bias_.get();
  float* out = buffer(step.output());
  return cudnnConvolutionBiasActivationForward(handle_.get(), &kOne, x.desc.get(), buffer(step.input()),
                                               step.filter.get(), w.weight.get(), step.convolution.get(), algo,
                                               workspace_.get(), workspace, &kZero, y.desc.get(), out,
                                               step.bias.get(), bias, relu ? plan_.relu() : plan_.identity(),
                                               y.desc.get(), out);
}

// conv(x) alone, into the convolution's own output (which shares the step output's buffer).
cudnnStatus_t Executor::plain_convolution(const Step& step, cudnnConvolutionFwdAlgo_t algo, std::size_t workspace) {
  const Activation& x = plan_.activations()[step.input()];
  const Activation& y = plan_.activations()[step.first_layer + 1];
  return cudnnConvolutionForward(handle_.get(), &kOne, x.desc.get(), buffer(step.input()), step.filter.get(),
                                 weights_[step.first_layer].weight.get(), step.convolution.get(), algo,
                                 workspace_.get(), workspace, &kZero, y.desc.get(), buffer(step.first_layer + 1));
}

// with_relu: the step's ReLU runs too (false for a convolution alone, or a forward pass that
// stops after the convolution of a convolution+ReLU step).
void Executor::run_convolution(const Step& step, const ConvolutionChoice& choice, bool with_relu) {
  const Layer& layer = plan_.network().layers()[step.first_layer];
  const bool fused = (with_relu && choice.mode == ConvolutionMode::FusedRelu) ||
                     (!step.fused_relu && choice.mode == ConvolutionMode::FusedIdentity);
  if (fused) {
    const cudnnStatus_t s = conv_bias_activation(step, choice.fused_algo, with_relu, choice.workspace_bytes);
    if (s == CUDNN_STATUS_SUCCESS) return;
    // Probed at n = 1 and n = max_batch only: cuDNN may decline the fused call at a batch size in
    // between (it picks engines per shape). Then the separate calls below do the same work.
    if (!declines(s)) {
      detail::throw_cudnn_error(s, with_relu ? "cudnnConvolutionBiasActivationForward (ReLU)"
                                             : "cudnnConvolutionBiasActivationForward (identity)",
                                layer_context(layer), __FILE__, __LINE__);
    }
    clear_last_error();
  }
  cudnnHandle_t handle = handle_.get();
  const Activation& y = plan_.activations()[step.first_layer + 1];  // shares the step output's buffer
  const LayerWeights& w = weights_[step.first_layer];
  float* out = buffer(step.first_layer + 1);
  const cudnnStatus_t s = plain_convolution(step, choice.plain_algo, choice.workspace_bytes);
  if (s != CUDNN_STATUS_SUCCESS) {
    detail::throw_cudnn_error(s, "cudnnConvolutionForward", layer_context(layer), __FILE__, __LINE__);
  }
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
