// Convolution steps (conv2d and linear, with a folded batch-norm and a fused ReLU): algorithm
// choice, once when the executor is built, and execution.
//
// Algorithms, by default: cudnnGetConvolutionForwardAlgorithm_v7 ranks them by cuDNN's heuristics
// (no benchmarking: building is quick and picks the same algorithm every time). We take them in
// that order and skip any whose status is not success, any reported for a math type the precision
// does not allow (Fp32: no tensor-op math; never ..._ALLOW_CONVERSION), and any whose workspace at
// n = 1 or n = max_batch exceeds kWorkspaceLimitBytes. The convolution descriptor keeps the plan's
// math type: we never copy a result's mathType into it.
//
// Autotune (GpuOptions::autotune): per step, the choice of the AutotuneCache (autotune_cache.h)
// for (device, cuDNN version, precision, shape_key()) if it still runs (probed; a stale entry is
// measured again), else cudnnFindConvolutionForwardAlgorithmEx on the executor's own buffers at
// n = max_batch, taking the fastest allowed algorithm whose fused call runs (else the fastest
// whose separate call runs). The cache is saved once, if it changed; a save failure is logged.
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
//
// Partial runs of a step (a forward pass that stops inside it; `stop` layers of the step run):
//   folded conv+bn[+relu]  stop 1: the convolution with the ORIGINAL weights and bias
//                          stop 2: the folded convolution without the ReLU
//                          stop 3: the whole step
//   conv+relu              stop 1: convolution and bias without the ReLU
#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>
#include <stdexcept>

#include "autotune_cache.h"
#include "executor.h"

namespace infer::cudnn {
namespace {

static_assert(kConvolutionAlgorithmCount == CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
              "the autotune cache's algorithm range must be cuDNN's");

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

// During a forward pass, the statuses with which the fused call may still decline a batch size
// that the build-time probes (n = 1 and n = max_batch) did not try: cuDNN picks its engines per
// shape, so a shape, launch-configuration or shared-memory limit can be met in between. The
// separate calls then do the same work (their algorithm passed the probes too); the switch is
// logged and remembered per batch size. The plain CUDNN_STATUS_BAD_PARAM counts as such a decline
// because the legacy API reports unsupported configurations with it too. Everything else is a
// GpuError naming the layer and the call, never a silent switch:
//   - the specific BAD_PARAM_* statuses (NULL_POINTER, MISALIGNED_POINTER, SIZE_INSUFFICIENT for
//     the workspace, OUT_OF_BOUND, SHAPE_MISMATCH, ...): the same call passed its probes with the
//     same buffers and workspace, so these mean a bug here, which the separate path would hide;
//   - the CUDA-graph statuses (BAD_PARAM_CUDA_GRAPH_MISMATCH, NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API):
//     thrown, they reach Executor::capture, which logs why and runs that pass directly, instead of
//     capturing a different computation than the one chosen;
//   - the other NOT_SUPPORTED_* statuses (data type, layout, architecture, driver, ...) do not
//     depend on the batch size: the probes would have met them.
// "Declines" in the wider sense (any BAD_PARAM or NOT_SUPPORTED) belongs to the probes only.
bool declines_this_batch_size(cudnnStatus_t s) {
  switch (s) {
    case CUDNN_STATUS_BAD_PARAM:
    case CUDNN_STATUS_NOT_SUPPORTED:
    case CUDNN_STATUS_NOT_SUPPORTED_SHAPE:
    case CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT:
    case CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM: return true;
    default: return false;
  }
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

// Whether an algorithm result's math type is allowed at this precision.
bool math_allowed(Precision precision, cudnnMathType_t math) {
  if (math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return false;
  return precision != Precision::Fp32 || math != CUDNN_TENSOR_OP_MATH;
}

// Whether cudnnConvolutionBiasActivationForward may run this step's whole work with `algo`.
bool fusable(const Step& step, cudnnConvolutionFwdAlgo_t algo) {
  return step.fused_relu || algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
}

const char* algorithm_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    case CUDNN_CONVOLUTION_FWD_ALGO_COUNT: break;
  }
  return "UNKNOWN";
}

// The workspace `algo` needs at both batch ends; kWorkspaceLimitBytes + 1 if cuDNN declines it at
// either. Leaves the plan at batch max_batch.
std::size_t workspace_at_both_ends(cudnnHandle_t handle, Plan& plan, const Step& step,
                                   cudnnConvolutionFwdAlgo_t algo) {
  const Activation& x = plan.activations()[step.input()];
  const Activation& y = plan.activations()[step.first_layer + 1];  // the convolution's own output
  std::size_t most = 0;
  for (int n : {plan.max_batch(), 1}) {
    plan.set_batch(n);
    std::size_t bytes = 0;
    const cudnnStatus_t s = cudnnGetConvolutionForwardWorkspaceSize(handle, x.desc.get(), step.filter.get(),
                                                                    step.convolution.get(), y.desc.get(), algo, &bytes);
    if (declines(s)) {
      clear_last_error();
      bytes = kWorkspaceLimitBytes + 1;
    } else if (s != CUDNN_STATUS_SUCCESS) {
      plan.set_batch(plan.max_batch());
      detail::throw_cudnn_error(s, "cudnnGetConvolutionForwardWorkspaceSize",
                                layer_context(plan.network().layers()[step.first_layer]), __FILE__, __LINE__);
    }
    most = std::max(most, bytes);
  }
  plan.set_batch(plan.max_batch());
  return most;
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
    if (!math_allowed(plan.precision(), p.mathType)) continue;
    if (transforms_operands(p.algo)) continue;
    if (std::any_of(out.begin(), out.end(), [&](const Candidate& c) { return c.algo == p.algo; })) continue;
    out.push_back(Candidate{p.algo, workspace_at_both_ends(handle, plan, step, p.algo)});
  }
  const auto too_large = [](const Candidate& c) { return c.workspace > kWorkspaceLimitBytes; };
  out.erase(std::remove_if(out.begin(), out.end(), too_large), out.end());
  if (out.empty()) {
    throw GpuError(context + ": cuDNN offers no " + precision_name(plan.precision()) +
                   " forward algorithm for this convolution that needs at most " +
                   std::to_string(kWorkspaceLimitBytes >> 20) + " MiB of workspace (" + std::to_string(returned) +
                   " algorithms considered); run this model on the CPU backend");
  }
  return out;
}

const char* type_name(cudnnDataType_t t) {
  return t == CUDNN_DATA_HALF ? "half" : t == CUDNN_DATA_FLOAT ? "float" : "other";
}

// The canonical description of a convolution call for the autotune cache, read back from the
// descriptors cuDNN is given (so that it cannot disagree with them), at batch max_batch:
//   "n=64 x=1x28x28 y=32x28x28 w=32x1x3x3 pad=1,1 stride=1,1 dilation=1,1 groups=1 act=relu
//    type=half layout=nhwc compute=float math=tensor_op"
// act: relu (a fused ReLU) or identity (the bias alone); the weights' values (folded or not) do
// not change which algorithm is fastest.
std::string shape_key(const Plan& plan, const Step& step) {
  const Activation& x = plan.activations()[step.input()];
  const Dims& out = plan.activations()[step.first_layer + 1].dims;
  int ph = 0, pw = 0, sh = 0, sw = 0, dh = 0, dw = 0, groups = 0, k = 0, c = 0, r = 0, s = 0;
  cudnnConvolutionMode_t mode{};
  cudnnDataType_t compute{}, filter_type{};
  cudnnTensorFormat_t filter_format{};
  cudnnMathType_t math{};
  const std::string context = layer_context(plan.network().layers()[step.first_layer]);
  INFER_CUDNN_CHECK(context, cudnnGetConvolution2dDescriptor(step.convolution.get(), &ph, &pw, &sh, &sw, &dh, &dw,
                                                             &mode, &compute));
  INFER_CUDNN_CHECK(context, cudnnGetConvolutionGroupCount(step.convolution.get(), &groups));
  INFER_CUDNN_CHECK(context, cudnnGetConvolutionMathType(step.convolution.get(), &math));
  INFER_CUDNN_CHECK(context, cudnnGetFilter4dDescriptor(step.filter.get(), &filter_type, &filter_format, &k, &c, &r,
                                                        &s));
  char text[512];
  std::snprintf(text, sizeof text,
                "n=%d x=%dx%dx%d y=%dx%dx%d w=%dx%dx%dx%d pad=%d,%d stride=%d,%d dilation=%d,%d groups=%d act=%s "
                "type=%s layout=%s compute=%s math=%s",
                plan.max_batch(), x.dims.c, x.dims.h, x.dims.w, out.c, out.h, out.w, k, c, r, s, ph, pw, sh, sw, dh,
                dw, groups, step.fused_relu ? "relu" : "identity", type_name(x.type),
                x.format == CUDNN_TENSOR_NHWC ? "nhwc" : "nchw", type_name(compute),
                math == CUDNN_TENSOR_OP_MATH ? "tensor_op" : math == CUDNN_FMA_MATH ? "fma" : "default");
  return text;
}

std::string time_text(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", ms);
  return text;
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

  // Autotune: the cache, and a workspace as large as any measured algorithm may use.
  std::optional<AutotuneCache> cache;
  std::filesystem::path cache_path;
  if (options_.autotune) {
    cache_path = options_.autotune_cache.empty() ? default_autotune_cache_path()
                                                 : std::filesystem::path(options_.autotune_cache);
    cache = AutotuneCache::load(cache_path);
    if (cache_path.empty()) {
      log("autotune: no cache file ($INFER_AUTOTUNE_CACHE, $XDG_CACHE_HOME and $HOME unset); measuring every time");
    } else if (!cache->problem().empty()) {
      log("autotune cache " + cache->problem() + "; measuring again and rewriting it");
    } else {
      log("autotune cache " + cache_path.string() + ": " + std::to_string(cache->size()) + " entries");
    }
    probe_workspace = std::max(probe_workspace, kWorkspaceLimitBytes);
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
      throw GpuError(context + ": cudnnConvolutionForward declined every " + precision_name(plan_.precision()) +
                     " algorithm the heuristics offered (" + std::to_string(candidates[i].size()) +
                     "); run this model on the CPU backend");
    }
    choice.plain_algo = plain->algo;
    choice.workspace_bytes = plain->workspace;
    // Applies a whole-step choice: fused (the fused call with `algo`) or separate (`algo` is then
    // also the partial runs' algorithm; it was probed).
    auto apply = [&](cudnnConvolutionFwdAlgo_t algo, bool fused, std::size_t workspace) {
      if (fused) {
        choice.mode = step.fused_relu ? ConvolutionMode::FusedRelu : ConvolutionMode::FusedIdentity;
        choice.fused_algo = algo;
        choice.workspace_bytes = std::max(choice.workspace_bytes, workspace);
      } else {
        choice.mode = ConvolutionMode::Separate;
        choice.plain_algo = algo;
        choice.workspace_bytes = workspace;
      }
    };

    bool decided = false;
    if (cache) {
      const AutotuneKey key{device_name_, static_cast<int>(cudnnGetVersion()), precision_name(plan_.precision()),
                            shape_key(plan_, step)};
      if (const std::optional<AutotuneChoice> hit = cache->find(key)) {
        const auto algo = static_cast<cudnnConvolutionFwdAlgo_t>(hit->algorithm);
        const std::size_t workspace = workspace_at_both_ends(handle_.get(), plan_, step, algo);
        const bool usable = !transforms_operands(algo) && workspace <= kWorkspaceLimitBytes &&
                            (hit->fused ? fusable(step, algo) && fused_call_runs(step, algo, workspace)
                                        : plain_call_runs(step, algo, workspace));
        if (usable) {
          apply(algo, hit->fused, workspace);
          choice.source = "cache";
          choice.time_ms = hit->time_ms;
          decided = true;
        } else {
          log(step.name + ": the cached choice " + algorithm_name(algo) + (hit->fused ? " fused" : " separate") +
              " does not run here any more; measuring again");
        }
      }
      if (!decided) {
        plan_.set_batch(plan_.max_batch());
        const Activation& x = plan_.activations()[step.input()];
        const Activation& y = plan_.activations()[step.first_layer + 1];
        std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
        int returned = 0;
        // Sorted by time, fastest first; runs every algorithm on the real buffers.
        INFER_CUDNN_CHECK(context, cudnnFindConvolutionForwardAlgorithmEx(
                                       handle_.get(), x.desc.get(), buffer(step.input()), step.filter.get(),
                                       weights_[step.first_layer].weight.get(), step.convolution.get(), y.desc.get(),
                                       buffer(step.first_layer + 1), static_cast<int>(perf.size()), &returned,
                                       perf.data(), workspace_.get(), workspace_.bytes()));
        std::optional<AutotuneChoice> fused, separate;
        for (int r = 0; r < returned && !fused; ++r) {
          const cudnnConvolutionFwdAlgoPerf_t& p = perf[static_cast<std::size_t>(r)];
          if (p.status != CUDNN_STATUS_SUCCESS || !math_allowed(plan_.precision(), p.mathType) ||
              transforms_operands(p.algo)) {
            continue;
          }
          const std::size_t workspace = workspace_at_both_ends(handle_.get(), plan_, step, p.algo);
          if (workspace > kWorkspaceLimitBytes) continue;
          const AutotuneChoice measured{static_cast<int>(p.algo), false, workspace,
                                        std::max(0.0, static_cast<double>(p.time))};
          if (fusable(step, p.algo) && fused_call_runs(step, p.algo, workspace)) {
            fused = measured;
            fused->fused = true;
          } else if (!separate && plain_call_runs(step, p.algo, workspace)) {
            separate = measured;
          }
        }
        if (const std::optional<AutotuneChoice>& best = fused ? fused : separate) {
          apply(static_cast<cudnnConvolutionFwdAlgo_t>(best->algorithm), best->fused, best->workspace_bytes);
          choice.source = "measured";
          choice.time_ms = best->time_ms;
          // The cache validates what it stores (a non-finite time from FindEx, say): a choice it
          // refuses is still used for this executor, only not remembered.
          try {
            cache->put(key, *best);
          } catch (const std::invalid_argument& e) {
            log(step.name + ": autotune result not cached: " + e.what());
          }
          decided = true;
        } else {
          log(step.name + ": no measured algorithm runs (" + std::to_string(returned) +
              " measured); using cuDNN's heuristics");
        }
      }
    }
    if (!decided) {
      for (const Candidate& c : candidates[i]) {
        if (fusable(step, c.algo) && fused_call_runs(step, c.algo, c.workspace)) {
          apply(c.algo, true, c.workspace);
          break;
        }
      }
    }
    needed = std::max(needed, choice.workspace_bytes);
    const bool fused = choice.mode != ConvolutionMode::Separate;
    log(step.name + ": " + algorithm_name(fused ? choice.fused_algo : choice.plain_algo) +
        (fused ? " fused" : " separate") + ", workspace " + std::to_string(choice.workspace_bytes) + " B (" +
        choice.source + (choice.time_ms >= 0.0 ? " " + time_text(choice.time_ms) : std::string()) + ")");
  }
  plan_.set_batch(plan_.max_batch());
  if (cache && cache->dirty() && !cache_path.empty()) {
    try {
      cache->save(cache_path);
      log("autotune cache saved to " + cache_path.string());
    } catch (const AutotuneCacheError& e) {
      log(std::string("autotune cache not saved: ") + e.what());
    }
  }
  if (needed < workspace_.bytes()) {
    INFER_CUDA_CHECK("convolution workspace", cudaStreamSynchronize(stream_.get()));  // probes are done with it
    workspace_ = DeviceBuffer();
    workspace_ = DeviceBuffer(needed, "convolution workspace");
  }
}

bool Executor::fused_call_runs(const Step& step, cudnnConvolutionFwdAlgo_t algo, std::size_t workspace) {
  return call_runs(step, "cudnnConvolutionBiasActivationForward",
                   [&] { return conv_bias_activation(step, algo, step.layer_count(), workspace); });
}

bool Executor::plain_call_runs(const Step& step, cudnnConvolutionFwdAlgo_t algo, std::size_t workspace) {
  return call_runs(step, "cudnnConvolutionForward", [&] { return plain_convolution(step, algo, 1, workspace); });
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

// y = act(conv(x) + bias) for the first `stop` layers of the step, written to the output of the
// last of them. Weights and bias: the folded ones once the batch-norm is included (stop >= 2 of a
// folded step), else the layer's own (zeros when it has none). act: ReLU when the step's ReLU is
// included, else identity. z (the residual input) is zero_z_, zeros, with alpha2 = 0: this network
// has no residual additions, and zeros keep the result finite even if cuDNN reads z (y itself
// could hold NaN or Inf from an earlier batch). `workspace` bytes of the shared workspace are offered: the probes and the
// real calls offer the same amount, so a configuration that passed its probe gets what it ran with.
cudnnStatus_t Executor::conv_bias_activation(const Step& step, cudnnConvolutionFwdAlgo_t algo, std::size_t stop,
                                             std::size_t workspace) {
  const bool folded = step.folded_bn && stop >= 2;
  const bool relu = step.fused_relu && stop == step.layer_count();
  const std::size_t out_index = step.first_layer + stop;
  const Activation& x = plan_.activations()[step.input()];
  const Activation& y = plan_.activations()[out_index];
  const LayerWeights& w = weights_[step.first_layer];
  const void* weight = folded ? w.folded_weight.get() : w.weight.get();
  const void* bias = folded ? w.folded_bias.get() : step.has_bias ? w.bias.get() : zero_bias_.get();
  void* out = buffer(out_index);
  return cudnnConvolutionBiasActivationForward(handle_.get(), &kOne, x.desc.get(), buffer(step.input()),
                                               step.filter.get(), weight, step.convolution.get(), algo,
                                               workspace_.get(), workspace, &kZero, y.desc.get(), out,
                                               step.bias.get(), bias, relu ? plan_.relu() : plan_.identity(),
                                               y.desc.get(), zero_z_.get());
}

// conv(x) alone (no bias), with the weights of the first `stop` layers (see conv_bias_activation),
// into the output of the last of them (every activation of a step shares one buffer).
cudnnStatus_t Executor::plain_convolution(const Step& step, cudnnConvolutionFwdAlgo_t algo, std::size_t stop,
                                          std::size_t workspace) {
  const bool folded = step.folded_bn && stop >= 2;
  const std::size_t out_index = step.first_layer + stop;
  const Activation& x = plan_.activations()[step.input()];
  const Activation& y = plan_.activations()[out_index];
  const LayerWeights& w = weights_[step.first_layer];
  return cudnnConvolutionForward(handle_.get(), &kOne, x.desc.get(), buffer(step.input()), step.filter.get(),
                                 folded ? w.folded_weight.get() : w.weight.get(), step.convolution.get(), algo,
                                 workspace_.get(), workspace, &kZero, y.desc.get(), buffer(out_index));
}

// Runs the first `stop` layers of the step (1 <= stop <= step.layer_count(); see the top of this file).
void Executor::run_convolution(const Step& step, const ConvolutionChoice& choice, std::size_t stop,
                               bool capturing) {
  const Layer& layer = plan_.network().layers()[step.first_layer];
  const bool whole = stop == step.layer_count();
  const bool folded = step.folded_bn && stop >= 2;
  const bool relu = step.fused_relu && whole;
  // The fused call runs what it was chosen (and probed) for: the whole step. A convolution without
  // a ReLU in its step also fuses a partial run (it is the same call on other weights).
  const bool fused = (whole && choice.mode != ConvolutionMode::Separate) ||
                     (!step.fused_relu && choice.mode == ConvolutionMode::FusedIdentity);
  const std::pair<std::size_t, int> at_this_batch{step.first_layer, plan_.batch()};
  if (fused && fused_declined_.count(at_this_batch) == 0) {
    const cudnnStatus_t s = conv_bias_activation(step, choice.fused_algo, stop, choice.workspace_bytes);
    if (s == CUDNN_STATUS_SUCCESS) return;
    const char* call = relu ? "cudnnConvolutionBiasActivationForward (ReLU)"
                            : "cudnnConvolutionBiasActivationForward (identity)";
    // Probed at n = 1 and n = max_batch only; see declines_this_batch_size for what may switch.
    if (!declines_this_batch_size(s)) detail::throw_cudnn_error(s, call, layer_context(layer), __FILE__, __LINE__);
    // During a capture a decline is not this batch size's answer (the direct run just before it
    // accepted the call): thrown, it reaches Executor::capture, which logs it and runs this pass
    // directly, and the fused call stays in use.
    if (capturing) {
      detail::throw_cudnn_error(s, call, layer_context(layer) + " (during CUDA graph capture)", __FILE__, __LINE__);
    }
    fused_declined_.insert(at_this_batch);
    log(step.name + ": " + call + " declined n = " + std::to_string(plan_.batch()) + " (" +
        detail::one_line(detail::cudnn_error_text(s)) + "); the separate calls run this step at that batch size");
    clear_last_error();
  }
  cudnnHandle_t handle = handle_.get();
  const std::size_t out_index = step.first_layer + stop;
  const Activation& y = plan_.activations()[out_index];
  const LayerWeights& w = weights_[step.first_layer];
  void* out = buffer(out_index);
  const cudnnStatus_t s = plain_convolution(step, choice.plain_algo, stop, choice.workspace_bytes);
  if (s != CUDNN_STATUS_SUCCESS) {
    detail::throw_cudnn_error(s, "cudnnConvolutionForward", layer_context(layer), __FILE__, __LINE__);
  }
  if (folded || step.has_bias) {
    INFER_CUDNN_CHECK(layer_context(layer), cudnnAddTensor(handle, &kOne, step.bias.get(),
                                                           folded ? w.folded_bias.get() : w.bias.get(), &kOne,
                                                           y.desc.get(), out));
  }
  if (relu) {
    // In place (x == y), which cudnnActivationForward allows.
    INFER_CUDNN_CHECK(layer_context(layer), cudnnActivationForward(handle, plan_.relu(), &kOne, y.desc.get(), out,
                                                                   &kZero, y.desc.get(), out));
  }
}

}  // namespace infer::cudnn
