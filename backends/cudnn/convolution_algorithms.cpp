// The algorithm choice of the convolution steps (conv2d and linear, with a folded batch-norm, a residual add and a
// fused ReLU), once when the executor is built; convolution.cpp runs the steps with it.
//
// Algorithms, by default: cudnnGetConvolutionForwardAlgorithm_v7 ranks them by cuDNN's heuristics
// (no benchmarking: building is quick and picks the same algorithm every time). We take them in
// that order and skip any whose status is not success, any reported for a math type the precision
// does not allow (Fp32: no tensor-op math; never ..._ALLOW_CONVERSION), any that transforms the
// operands (transforms_operands), with GpuOptions::deterministic any not reported
// CUDNN_DETERMINISTIC, and any whose workspace exceeds kWorkspaceLimitBytes. The first that runs
// is chosen: only the candidates tried until then have their workspace queried, at the two batch
// sizes the probes run (1 and max_batch), two host calls each. Every other batch size is checked
// the first time a pass runs at it (prepare_batch_size): cuDNN does not document the workspace as
// monotonic in n, so a middle batch size may need more than both ends, and the workspace then
// grows, before that pass and its capture. Planning thus costs the same host calls at any
// max_batch (a test holds it to a budget); the old query at every n from 1 to max_batch cost up to
// 1,024 calls per candidate per step. The convolution descriptor keeps the plan's math type: we
// never copy a result's mathType into it.
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
//   with a residual add the add's other input is the fused call's z with alpha2 = 1 (ResNet's
//                       shortcut: one call instead of three), under the same two rules; the
//                       Separate calls add it with cudnnAddTensor after the bias.
// Whether a call accepts a configuration is found by running it once at n = max_batch and n = 1
// on the zeroed buffers with the workspace it will get (a probe at build time): cuDNN's heuristics
// report SUCCESS for algorithms that a call can still decline, and it declines some fused
// configurations that its separate calls run. The separate path's algorithm is probed too, since
// partial forward passes and a fused call declined at another batch size fall back to it.
//
// Float fallback (Fp16 only): when no half NHWC candidate runs the separate convolution call (a
// cuDNN build or GPU may decline every algorithm for C or K not a multiple of 8, such as the first
// convolution's C = 1 or the last linear's K = 10), that step alone runs in float NCHW with FMA math
// on Step::fallback's descriptors: its half NHWC input converted to float NCHW into fallback_x_,
// the same calls and modes as above on float weights, the result converted back to half NHWC into
// the step's output buffer. The rest of the network stays in half; the log line of the step says
// "float NCHW" and why.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>
#include <stdexcept>

#include "backends/cudnn/autotune/autotune_cache.h"
#include "backends/cudnn/autotune/autotune_cache_file.h"
#include "backends/cudnn/calls.h"
#include "backends/cudnn/declines.h"
#include "backends/cudnn/executor.h"

namespace infer::cudnn {
namespace {

static_assert(kConvolutionAlgorithmCount == CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
              "the autotune cache's algorithm range must be cuDNN's");

struct Candidate {
  cudnnConvolutionFwdAlgo_t algo;
  // Bytes, the more of n = 1 and n = max_batch (kWorkspaceLimitBytes + 1 where cuDNN declines
  // either); queried when the candidate is first tried.
  std::optional<std::size_t> workspace;
};

// The descriptors of a step's convolution as cuDNN's queries take them: the plan's own (x the
// step's input, y the convolution's own output) or, for a float fallback, Step::fallback's.
struct ConvolutionDescs {
  cudnnTensorDescriptor_t x;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t convolution;
  cudnnTensorDescriptor_t y;
};

ConvolutionDescs descriptors(const Plan& plan, const Step& step, bool float_fallback) {
  if (float_fallback) {
    return {step.fallback.x.get(), step.fallback.filter.get(), step.fallback.convolution.get(), step.fallback.y.get()};
  }
  return {plan.activations()[step.input()].desc.get(), step.filter.get(), step.convolution.get(),
          plan.activations()[step.first_layer + 1].desc.get()};
}

// FFT and Winograd algorithms, fused or not, transform the operands: they compute the convolution
// as products of transformed input and filter tiles (Fourier or Winograd transforms, whose
// coefficients are not exact in float), then transform back. Their error is not the summation-
// order error the cross-backend tests bound (tests/backends/cudnn/test_gpu_backend.cpp: gamma_K over the K terms
// of each output), and for Winograd it grows with the transform's tile size, so either can exceed
// the FP32 bound. The fused CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD does the same transforms inside
// one kernel: the fusion changes where the transformed tiles live, not their rounding. For this
// project's small layers the GEMM-based algorithms are what the heuristics prefer anyway.
bool transforms_operands(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}

// Whether an algorithm result may be used under GpuOptions::deterministic.
bool determinism_allowed(bool deterministic_only, cudnnDeterminism_t d) {
  return !deterministic_only || d == CUDNN_DETERMINISTIC;
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

// The same tensor as `desc` at n samples, in a descriptor of its own: the plan's activations are
// packed with the batch outermost, so only n changes. Two host calls per batch size, where
// Plan::set_batch would re-set every descriptor of the plan.
class BatchResized {
 public:
  BatchResized(cudnnTensorDescriptor_t desc, const std::string& context)
      : context_(context), desc_(TensorDesc::create(context)) {
    int n = 0;
    INFER_CUDNN_CHECK(context_, cudnnGetTensor4dDescriptor(desc, &type_, &n, &c_, &h_, &w_, &ns_, &cs_, &hs_, &ws_));
  }
  cudnnTensorDescriptor_t at(int n) const {
    INFER_CUDNN_CHECK(context_, cudnnSetTensor4dDescriptorEx(desc_.get(), type_, n, c_, h_, w_, ns_, cs_, hs_, ws_));
    return desc_.get();
  }

 private:
  std::string context_;
  TensorDesc desc_;
  cudnnDataType_t type_{};
  int c_ = 0, h_ = 0, w_ = 0, ns_ = 0, cs_ = 0, hs_ = 0, ws_ = 0;
};

// The workspace `algo` needs for these descriptors, or nullopt where cuDNN declines the
// configuration (its last error cleared); throws for any other failure. One host query.
std::optional<std::size_t> query_workspace(cudnnHandle_t handle, const ConvolutionDescs& d, cudnnTensorDescriptor_t x,
                                           cudnnTensorDescriptor_t y, cudnnConvolutionFwdAlgo_t algo,
                                           const std::string& context) {
  std::size_t bytes = 0;
  const cudnnStatus_t s = cudnnGetConvolutionForwardWorkspaceSize(handle, x, d.w, d.convolution, y, algo, &bytes);
  if (declines(s)) {
    clear_last_error();
    return std::nullopt;
  }
  if (s != CUDNN_STATUS_SUCCESS) {
    detail::throw_cudnn_error(s, "cudnnGetConvolutionForwardWorkspaceSize", context, __FILE__, __LINE__);
  }
  return bytes;
}

// The workspace `algo` needs at the batch sizes the probes run, n = 1 and n = max_batch (the more
// of the two); kWorkspaceLimitBytes + 1 if cuDNN declines it at either. Two host queries (no
// device work); prepare_batch_size checks the others when they first run.
std::size_t workspace_at_probed_sizes(cudnnHandle_t handle, const Plan& plan, const Step& step, bool float_fallback,
                                      cudnnConvolutionFwdAlgo_t algo) {
  const ConvolutionDescs d = descriptors(plan, step, float_fallback);
  const std::string context = layer_context(plan.network().layers()[step.first_layer]);
  const BatchResized x(d.x, context), y(d.y, context);
  std::size_t most = 0;
  for (int n : {1, plan.max_batch()}) {
    const std::optional<std::size_t> bytes = query_workspace(handle, d, x.at(n), y.at(n), algo, context);
    if (!bytes) return kWorkspaceLimitBytes + 1;
    most = std::max(most, *bytes);
  }
  return most;
}

// The algorithms a convolution step may use, best first (possibly none), their workspace not yet
// queried. Leaves the plan at batch max_batch.
std::vector<Candidate> list_candidates(cudnnHandle_t handle, Plan& plan, const Step& step, bool float_fallback,
                                       bool deterministic_only) {
  const Layer& layer = plan.network().layers()[step.first_layer];
  const std::string context = layer_context(layer);
  const ConvolutionDescs d = descriptors(plan, step, float_fallback);

  plan.set_batch(plan.max_batch());
  int max_count = 0;
  INFER_CUDNN_CHECK(context, cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &max_count));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(std::max(max_count, 1)));
  int returned = 0;
  INFER_CUDNN_CHECK(context,
                    cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x, d.w, d.convolution, d.y,
                                                           static_cast<int>(perf.size()), &returned, perf.data()));
  // A float fallback computes as Fp32 does (FMA math): the Fp32 rule for math types applies.
  const Precision precision = float_fallback ? Precision::Fp32 : plan.precision();
  std::vector<Candidate> out;
  for (int i = 0; i < returned; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& p = perf[static_cast<std::size_t>(i)];
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    if (!math_allowed(precision, p.mathType)) continue;
    if (transforms_operands(p.algo)) continue;
    if (!determinism_allowed(deterministic_only, p.determinism)) continue;
    if (std::any_of(out.begin(), out.end(), [&](const Candidate& c) { return c.algo == p.algo; })) continue;
    out.push_back(Candidate{p.algo, std::nullopt});
  }
  return out;
}

// How many candidates were tried and found within kWorkspaceLimitBytes (an untried one is not).
std::size_t within_limit_count(const std::vector<Candidate>& candidates) {
  return static_cast<std::size_t>(std::count_if(candidates.begin(), candidates.end(), [](const Candidate& c) {
    return c.workspace && *c.workspace <= kWorkspaceLimitBytes;
  }));
}

const char* type_name(cudnnDataType_t t) {
  return t == CUDNN_DATA_HALF ? "half" : t == CUDNN_DATA_FLOAT ? "float" : "other";
}

// The canonical description of a convolution call for the autotune cache, read back from the
// descriptors cuDNN is given (so that it cannot disagree with them), at batch max_batch:
//   "n=64 x=1x28x28 y=32x28x28 w=32x1x3x3 pad=1,1 stride=1,1 dilation=1,1 groups=1 act=relu
//    type=half layout=nhwc compute=float math=tensor_op"
// act: relu (a fused ReLU) or identity (the bias alone), "+add" with a residual add (z is read and
// added: other kernels may win); the weights' values (folded or not) do not change which algorithm
// is fastest. A float fallback step reads type=float layout=nchw
// math=fma; " deterministic" ends the key of a choice made under GpuOptions::deterministic, so
// that a cache entry measured without the restriction never serves a deterministic executor.
std::string shape_key(const Plan& plan, const Step& step, bool float_fallback, bool deterministic_only) {
  const Activation& x = plan.activations()[step.input()];
  const Dims& out = plan.activations()[step.first_layer + 1].dims;
  const ConvolutionDescs d = descriptors(plan, step, float_fallback);
  const cudnnDataType_t x_type = float_fallback ? CUDNN_DATA_FLOAT : x.type;
  const cudnnTensorFormat_t x_format = float_fallback ? CUDNN_TENSOR_NCHW : x.format;
  int ph = 0, pw = 0, sh = 0, sw = 0, dh = 0, dw = 0, groups = 0, k = 0, c = 0, r = 0, s = 0;
  cudnnConvolutionMode_t mode{};
  cudnnDataType_t compute{}, filter_type{};
  cudnnTensorFormat_t filter_format{};
  cudnnMathType_t math{};
  const std::string context = layer_context(plan.network().layers()[step.first_layer]);
  INFER_CUDNN_CHECK(context,
                    cudnnGetConvolution2dDescriptor(d.convolution, &ph, &pw, &sh, &sw, &dh, &dw, &mode, &compute));
  INFER_CUDNN_CHECK(context, cudnnGetConvolutionGroupCount(d.convolution, &groups));
  INFER_CUDNN_CHECK(context, cudnnGetConvolutionMathType(d.convolution, &math));
  INFER_CUDNN_CHECK(context, cudnnGetFilter4dDescriptor(d.w, &filter_type, &filter_format, &k, &c, &r, &s));
  char text[512];
  std::snprintf(text, sizeof text,
                "n=%d x=%dx%dx%d y=%dx%dx%d w=%dx%dx%dx%d pad=%d,%d stride=%d,%d dilation=%d,%d groups=%d act=%s "
                "type=%s layout=%s compute=%s math=%s%s",
                plan.max_batch(), x.dims.c, x.dims.h, x.dims.w, out.c, out.h, out.w, k, c, r, s, ph, pw, sh, sw, dh, dw,
                groups,
                step.fused_relu ? (step.residual ? "relu+add" : "relu") : (step.residual ? "identity+add" : "identity"),
                type_name(x_type), x_format == CUDNN_TENSOR_NHWC ? "nhwc" : "nchw", type_name(compute),
                math == CUDNN_TENSOR_OP_MATH ? "tensor_op"
                : math == CUDNN_FMA_MATH     ? "fma"
                                             : "default",
                deterministic_only ? " deterministic" : "");
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
  const bool deterministic = options_.deterministic;
  std::vector<std::vector<Candidate>> candidates(steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind != StepKind::Convolution) continue;
    candidates[i] = list_candidates(handle_.get(), plan_, steps[i], false, deterministic);
  }
  startup_.mark("algorithms: cuDNN's heuristics, every step");

  // Autotune: the cache, and a workspace as large as any measured algorithm may use.
  std::optional<AutotuneCache> cache;
  std::filesystem::path cache_path;
  if (options_.autotune) {
    cache_path = options_.autotune_cache.empty() ? default_autotune_cache_path()
                                                 : std::filesystem::u8path(options_.autotune_cache);
    cache = AutotuneCache::load(cache_path);
    if (cache_path.empty()) {
      log(std::string("autotune: no cache file (") + detail::kCacheLocationHint + "); measuring every time");
    } else if (!cache->problem().empty()) {
      log("autotune cache " + cache->problem() + "; measuring again and rewriting it");
    } else {
      log("autotune cache " + cache_path.u8string() + ": " + std::to_string(cache->size()) + " entries");
    }
    reserve_workspace(kWorkspaceLimitBytes);
    startup_.mark("algorithms: autotune cache load");
  }
  // The workspace grows to each candidate's while probing (reserve_workspace) and shrinks to what
  // the chosen ones need below.

  convolutions_.assign(steps.size(), ConvolutionChoice{});
  std::size_t needed = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind != StepKind::Convolution) continue;
    const Step& step = steps[i];
    const Layer& layer = plan_.network().layers()[step.first_layer];
    const std::string context = layer_context(layer);
    ConvolutionChoice& choice = convolutions_[i];
    // A candidate's workspace, queried when it is first tried; the workspace grows to it, so that
    // its probe gets what the real calls will offer. False when it needs more than the limit.
    const auto within_limit = [&](Candidate& c, bool float_fallback) {
      if (!c.workspace) c.workspace = workspace_at_probed_sizes(handle_.get(), plan_, step, float_fallback, c.algo);
      if (*c.workspace > kWorkspaceLimitBytes) return false;
      reserve_workspace(*c.workspace);
      return true;
    };
    // The separate calls run partial forward passes too, so they need an algorithm that runs even
    // when the fused call is chosen. A heuristic's SUCCESS does not guarantee that: probe it.
    const auto first_running = [&](bool float_fallback) -> const Candidate* {
      for (Candidate& c : candidates[i]) {
        if (within_limit(c, float_fallback) && plain_call_runs(step, float_fallback, c.algo, *c.workspace)) return &c;
      }
      return nullptr;
    };
    const Candidate* plain = first_running(false);
    std::string fallback_reason;
    if (!plain && plan_.storage_type() == CUDNN_DATA_HALF) {
      fallback_reason = candidates[i].empty()                    ? "no half NHWC algorithm offered"
                        : within_limit_count(candidates[i]) == 0 ? "no half NHWC algorithm within the workspace limit"
                                                                 : "every half NHWC algorithm declined";
      fallback_reason += " (C = " + std::to_string(step.in.c) + ", K = " + std::to_string(layer.out.c) + ")";
      choice.float_fallback = true;
      prepare_float_fallback(step);
      candidates[i] = list_candidates(handle_.get(), plan_, step, true, deterministic);
      plain = first_running(true);
    }
    if (!plain) {
      const std::string what = std::string(choice.float_fallback ? "fp32 (the fp16 step's float fallback)"
                                                                 : precision_name(plan_.precision())) +
                               (deterministic ? " deterministic" : "");
      const std::size_t within = within_limit_count(candidates[i]);
      if (within == 0) {
        throw GpuError(context + ": cuDNN offers no " + what +
                       " forward algorithm for this convolution that needs at "
                       "most " +
                       std::to_string(kWorkspaceLimitBytes >> 20) +
                       " MiB of workspace; run this model on the CPU backend");
      }
      throw GpuError(context + ": cudnnConvolutionForward declined every " + what +
                     " algorithm the heuristics offered (" + std::to_string(within) +
                     "); run this model on the CPU backend");
    }
    const bool fallback = choice.float_fallback;
    choice.plain_algo = plain->algo;
    choice.workspace_bytes = *plain->workspace;
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
                            shape_key(plan_, step, fallback, deterministic)};
      if (const std::optional<AutotuneChoice> hit = cache->find(key)) {
        const auto algo = static_cast<cudnnConvolutionFwdAlgo_t>(hit->algorithm);
        const std::size_t workspace = workspace_at_probed_sizes(handle_.get(), plan_, step, fallback, algo);
        const bool usable = !transforms_operands(algo) && workspace <= kWorkspaceLimitBytes &&
                            (hit->fused ? fusable(step, algo) && fused_call_runs(step, fallback, algo, workspace)
                                        : plain_call_runs(step, fallback, algo, workspace));
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
        const ConvolutionOperands o = convolution_operands(step, fallback, 1);
        std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
        // Sorted by time, fastest first; runs every algorithm on the real buffers.
        INFER_CUDNN_CHECK(context, find_convolution_forward_algorithms(handle_.get(), o.x, o.w, o.convolution, o.y,
                                                                       workspace_.out(), perf));
        const Precision precision = fallback ? Precision::Fp32 : plan_.precision();
        std::optional<AutotuneChoice> fused, separate;
        for (std::size_t r = 0; r < perf.size() && !fused; ++r) {
          const cudnnConvolutionFwdAlgoPerf_t& p = perf[r];
          if (p.status != CUDNN_STATUS_SUCCESS || !math_allowed(precision, p.mathType) || transforms_operands(p.algo) ||
              !determinism_allowed(deterministic, p.determinism)) {
            continue;
          }
          const std::size_t workspace = workspace_at_probed_sizes(handle_.get(), plan_, step, fallback, p.algo);
          if (workspace > kWorkspaceLimitBytes) continue;
          const AutotuneChoice measured{static_cast<int>(p.algo), false, workspace,
                                        std::max(0.0, static_cast<double>(p.time))};
          if (fusable(step, p.algo) && fused_call_runs(step, fallback, p.algo, workspace)) {
            fused = measured;
            fused->fused = true;
          } else if (!separate && plain_call_runs(step, fallback, p.algo, workspace)) {
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
          log(step.name + ": no measured algorithm runs (" + std::to_string(perf.size()) +
              " measured); using cuDNN's heuristics");
        }
      }
    }
    if (!decided) {
      for (Candidate& c : candidates[i]) {
        if (fusable(step, c.algo) && within_limit(c, fallback) &&
            fused_call_runs(step, fallback, c.algo, *c.workspace)) {
          apply(c.algo, true, *c.workspace);
          break;
        }
      }
    }
    needed = std::max(needed, choice.workspace_bytes);
    const bool fused = choice.mode != ConvolutionMode::Separate;
    // One line per step (tests count them): the algorithm, the mode (fused: with the separate
    // calls' algorithm too, which partial runs use, so that a silent change of either shows), a
    // float fallback and why.
    log(step.name + ": " + algorithm_name(fused ? choice.fused_algo : choice.plain_algo) +
        (fused ? std::string(" fused (separate calls: ") + algorithm_name(choice.plain_algo) + ")" : " separate") +
        (fallback ? " in float NCHW between conversion kernels, " + fallback_reason : std::string()) + ", workspace " +
        std::to_string(choice.workspace_bytes) + " B (" + choice.source +
        (choice.time_ms >= 0.0 ? " " + time_text(choice.time_ms) : std::string()) + ")" +
        (deterministic ? ", deterministic" : ""));
    startup_.mark("algorithm: " + step.name);
  }
  plan_.set_batch(plan_.max_batch());
  if (cache && cache->dirty() && !cache_path.empty()) {
    try {
      cache->save(cache_path);
      log("autotune cache saved to " + cache_path.u8string());
    } catch (const AutotuneCacheError& e) {
      log(std::string("autotune cache not saved: ") + e.what());
    }
  }
  if (needed < workspace_.bytes()) replace_workspace(needed);  // after the probes, which used it
  // The probes ran at both ends, with the workspace each choice was probed with.
  batch_size_ready_.assign(static_cast<std::size_t>(plan_.max_batch()) + 1, false);
  batch_size_ready_[1] = true;
  batch_size_ready_[static_cast<std::size_t>(plan_.max_batch())] = true;
  startup_.mark("algorithms: final workspace" + std::string(cache ? ", autotune cache save" : ""));
}

// The first pass at batch size n (the plan set to n; no capture under way): every chosen
// algorithm's workspace at n. Where a step needs more than its choice offers, the offer grows, and
// the workspace with it, once (replace_workspace drops the graphs that baked the old address in;
// they are captured again on their next call). A fused algorithm that cuDNN declines at n leaves
// that step to its separate calls at n (fused_declined_), as a declined call does; a separate
// algorithm declined at n, which ran at 1 and max_batch, is an error. All or nothing: the new
// offers, the declines and the larger workspace take effect together, after every query and the
// allocation succeeded, so that a throw leaves the executor as it was (n is checked again on its
// next pass).
void Executor::prepare_batch_size(int n) {
  const std::size_t index = static_cast<std::size_t>(n);
  if (batch_size_ready_[index]) return;
  const std::vector<Step>& steps = plan_.steps();
  std::vector<std::size_t> offers(steps.size(), 0);
  std::vector<std::size_t> declined;  // steps whose fused algorithm cuDNN declines at n
  std::size_t needed = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind != StepKind::Convolution) continue;
    const Step& step = steps[i];
    const ConvolutionChoice& choice = convolutions_[i];
    const std::string context = layer_context(plan_.network().layers()[step.first_layer]);
    const ConvolutionDescs d = descriptors(plan_, step, choice.float_fallback);
    offers[i] = choice.workspace_bytes;
    for (const bool fused_algo : {false, true}) {
      if (fused_algo && choice.mode == ConvolutionMode::Separate) continue;
      const cudnnConvolutionFwdAlgo_t algo = fused_algo ? choice.fused_algo : choice.plain_algo;
      const std::optional<std::size_t> bytes = query_workspace(handle_.get(), d, d.x, d.y, algo, context);
      if (!bytes && fused_algo) {
        declined.push_back(i);
        continue;
      }
      if (!bytes) {
        throw GpuError(context + ": cuDNN declines the " + algorithm_name(algo) + " convolution at batch size " +
                       std::to_string(n) + ", which it ran at 1 and " + std::to_string(plan_.max_batch()) +
                       "; run this model at those batch sizes or on the CPU backend");
      }
      offers[i] = std::max(offers[i], *bytes);
      needed = std::max(needed, *bytes);
    }
  }
  if (needed > workspace_.bytes()) {
    const bool had_graphs = !graphs_.empty();
    replace_workspace(needed);
    log("convolution workspace grown to " + std::to_string(needed) + " B for n = " + std::to_string(n) +
        " (more than n = 1 and n = " + std::to_string(plan_.max_batch()) + " need)" +
        (had_graphs ? "; the CUDA graphs captured so far are captured again" : ""));
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind == StepKind::Convolution) convolutions_[i].workspace_bytes = offers[i];
  }
  for (std::size_t i : declined) {
    fused_declined_.emplace(steps[i].first_layer, n);
    log(steps[i].name + ": cuDNN declines " + algorithm_name(convolutions_[i].fused_algo) +
        " at n = " + std::to_string(n) + "; the separate calls run this step at that batch size");
  }
  batch_size_ready_[index] = true;
}

// A workspace of `bytes` in place of the current one. The new buffer is allocated first, so that a
// failure leaves the old one; then the stream is drained (work queued so far may use the old one)
// and the CUDA graphs, which baked the old address in, are dropped.
void Executor::replace_workspace(std::size_t bytes) {
  DeviceBuffer replacement(bytes, "convolution workspace");
  INFER_CUDA_CHECK("convolution workspace", cudaStreamSynchronize(stream_.get()));
  graphs_.clear();
  workspace_ = std::move(replacement);
}

// Grows the workspace to `bytes` while probing (build time only: no graph yet). The old one is
// freed first, so that the device never holds both.
void Executor::reserve_workspace(std::size_t bytes) {
  if (bytes <= workspace_.bytes()) return;
  INFER_CUDA_CHECK("convolution workspace", cudaStreamSynchronize(stream_.get()));  // earlier probes used it
  workspace_ = DeviceBuffer();
  workspace_ = DeviceBuffer(bytes, "convolution workspace");
}

void Executor::prepare_float_fallback(const Step& step) {
  upload_float_weights(step);
  const std::size_t batch = static_cast<std::size_t>(plan_.max_batch());
  const std::size_t x_bytes = batch * step.in.size() * sizeof(float);
  const std::size_t y_bytes = batch * plan_.network().layers()[step.first_layer].out.size() * sizeof(float);
  cudaStream_t stream = stream_.get();
  const std::size_t z_bytes = step.residual ? y_bytes : 0;
  const char* context = "float fallback buffers";
  for (auto [buffer, bytes] : {std::pair<DeviceBuffer*, std::size_t>{&fallback_x_, x_bytes},
                               {&fallback_y_, y_bytes},
                               {&fallback_z_, z_bytes}}) {
    if (bytes <= buffer->bytes()) continue;
    INFER_CUDA_CHECK(context, cudaStreamSynchronize(stream));  // earlier probes may still use the old one
    *buffer = DeviceBuffer();
    *buffer = DeviceBuffer(bytes, context);
    INFER_CUDA_CHECK(context, fill_zero(buffer->out(), stream));  // never garbage, as the activations
  }
}

bool Executor::fused_call_runs(const Step& step, bool float_fallback, cudnnConvolutionFwdAlgo_t algo,
                               std::size_t workspace) {
  return call_runs(step, "cudnnConvolutionBiasActivationForward",
                   [&] { return conv_bias_activation(step, float_fallback, algo, step.layer_count(), workspace); });
}

bool Executor::plain_call_runs(const Step& step, bool float_fallback, cudnnConvolutionFwdAlgo_t algo,
                               std::size_t workspace) {
  return call_runs(step, "cudnnConvolutionForward",
                   [&] { return plain_convolution(step, float_fallback, algo, 1, workspace); });
}

// Runs `call` at n = max_batch and n = 1: false if cuDNN declines it at either, throws if it fails.
// The plan's current batch size first: each switch re-sets every descriptor of the plan.
bool Executor::call_runs(const Step& step, const char* name, const std::function<cudnnStatus_t()>& call) {
  const int first = plan_.batch() == 1 ? 1 : plan_.max_batch();
  for (int n : {first, first == 1 ? plan_.max_batch() : 1}) {
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

}  // namespace infer::cudnn
