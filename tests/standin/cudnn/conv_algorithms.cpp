// Forward-convolution algorithms: which ones support a problem, their workspace sizes, the
// heuristic list (cudnnGetConvolutionForwardAlgorithm_v7) and the measured one
// (cudnnFindConvolutionForwardAlgorithmEx).
//
// Every algorithm computes the same arithmetic here (convolution.cpp); they differ in what they
// support and in the workspace they demand, both modelled on the table "Supported Algorithms for
// cudnnConvolutionForward() 2D Convolutions" of the cuDNN API reference (cudnn_cnn library):
//   IMPLICIT_GEMM, IMPLICIT_PRECOMP_GEMM: any layout, stride, dilation;
//   GEMM: NCHW filter; any stride, dilation;
//   DIRECT: not implemented by cuDNN (always NOT_SUPPORTED);
//   FFT: x and y HW-packed, NCHW filter, stride 1, dilation 1, padded input <= 256 per side,
//        filter larger than the padding;
//   FFT_TILING: as FFT without the 256 limit, filter at most 32 x 32;
//   WINOGRAD: stride 1, dilation 1, 3x3 filter, NCHW filter;
//   WINOGRAD_NONFUSED: stride 1, dilation 1, 3x3 filter, or 5x5 with FLOAT data; NCHW filter.
//   NHWC filters (KRSC) and HALF data in NHWC: IMPLICIT_GEMM and IMPLICIT_PRECOMP_GEMM only.
//
// Fault injection (test infrastructure): INFER_STANDIN_CUDNN_DECLINE=half-nhwc-unaligned makes every
// algorithm decline (CUDNN_STATUS_NOT_SUPPORTED) a convolution with HALF data in NHWC layout whose
// input channels C or output channels K is not a multiple of 8, as engines that need 16-byte aligned
// channel vectors do. INFER_STANDIN_CUDNN_DECLINE=k-unaligned-at-n=<n> makes every algorithm decline
// a convolution whose K is not a multiple of 8 at batch size n alone (a configuration an engine
// supports at some batch sizes only). INFER_STANDIN_CUDNN_WORKSPACE_PEAK=<n> adds 1 MiB to every algorithm's
// workspace at batch size n alone, as cuDNN does not promise that the need grows with n: a middle
// batch size may need more than both ends. Both variables are read on every call.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/standin/call_count.h"
#include "tests/standin/cudnn/cudnn_internal.h"

namespace standin_cudnn {
namespace {

constexpr cudnnConvolutionFwdAlgo_t kPreference[] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_FFT,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_DIRECT};
static_assert(sizeof kPreference / sizeof kPreference[0] == CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
              "every forward algorithm is ranked once");

bool channels_last(const Tensor& t) { return t.nb == 4 && t.stride[1] == 1 && t.dim[1] > 1; }

std::size_t next_pow2(std::size_t v) {
  std::size_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

cudnnMathType_t reported_math(const ConvProblem& p, cudnnConvolutionFwdAlgo_t algo) {
  if (p.conv.math == CUDNN_FMA_MATH) return CUDNN_FMA_MATH;
  const bool tensor_core_algo = algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
                                algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
                                algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
  if (!tensor_core_algo) return CUDNN_DEFAULT_MATH;
  if (p.conv.math == CUDNN_TENSOR_OP_MATH || p.conv.math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return p.conv.math;
  return p.x.type == CUDNN_DATA_HALF ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH;
}

// The arguments both algorithm queries (_v7, FindEx) share: BAD_PARAM for a NULL handle or output
// or requestedAlgoCount <= 0; the outputs must be host memory.
cudnnStatus_t check_query(const char* call, cudnnHandle_t handle, int requested, int* returned,
                          cudnnConvolutionFwdAlgoPerf_t* perf) {
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
  if (requested <= 0) return fail(CUDNN_STATUS_BAD_PARAM, call, "requestedAlgoCount must be positive");
  if (returned == nullptr || perf == nullptr) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "returnedAlgoCount or perfResults is NULL");
  }
  standin::require_host(call, returned, "returnedAlgoCount");
  standin::require_host(call, perf, "perfResults");
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

cudnnStatus_t algo_supports(const ConvProblem& p, cudnnConvolutionFwdAlgo_t algo, std::string& why) {
  const bool half = p.x.type == CUDNN_DATA_HALF;
  // With C = 1 the strides of x cannot tell NHWC from NCHW; the filter's format (KRSC) still does.
  const bool nhwc = channels_last(p.x) || p.w.format == CUDNN_TENSOR_NHWC;
  if (half && nhwc && (p.x.dim[1] % 8 != 0 || p.w.dim[0] % 8 != 0) && decline_requested("half-nhwc-unaligned")) {
    why = "declined by INFER_STANDIN_CUDNN_DECLINE=half-nhwc-unaligned (HALF NHWC with C or K not a multiple of 8)";
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  if (const char* env = std::getenv("INFER_STANDIN_CUDNN_DECLINE")) {
    constexpr char kAtN[] = "k-unaligned-at-n=";
    const char* at = std::strstr(env, kAtN);
    if (at != nullptr && p.w.dim[0] % 8 != 0 && std::strtol(at + sizeof kAtN - 1, nullptr, 10) == p.x.dim[0]) {
      why = "declined by INFER_STANDIN_CUDNN_DECLINE=k-unaligned-at-n=" + std::to_string(p.x.dim[0]);
      return CUDNN_STATUS_NOT_SUPPORTED;
    }
  }
  const int r = p.w.dim[2], s = p.w.dim[3];
  const bool unit_stride = p.conv.stride[0] == 1 && p.conv.stride[1] == 1;
  const bool unit_dilation = p.conv.dilation[0] == 1 && p.conv.dilation[1] == 1;
  const bool nchw_filter = p.w.format == CUDNN_TENSOR_NCHW;
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return CUDNN_STATUS_SUCCESS;
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: why = "DIRECT is not implemented"; return CUDNN_STATUS_NOT_SUPPORTED;
    default: break;
  }
  if (!nchw_filter) {
    why = "an NHWC (KRSC) filter needs IMPLICIT_GEMM or IMPLICIT_PRECOMP_GEMM";
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  if (half && channels_last(p.x)) {
    why = "HALF data in NHWC needs IMPLICIT_GEMM or IMPLICIT_PRECOMP_GEMM";
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return CUDNN_STATUS_SUCCESS;
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: {
      if (!is_hw_packed(p.x) || !is_hw_packed(p.y) || !unit_stride || !unit_dilation) {
        why = "FFT needs HW-packed x and y, stride 1 and dilation 1";
        return CUDNN_STATUS_NOT_SUPPORTED;
      }
      if (r <= p.conv.pad[0] || s <= p.conv.pad[1]) {
        why = "FFT needs the filter larger than the padding";
        return CUDNN_STATUS_NOT_SUPPORTED;
      }
      if (algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT &&
          (p.x.dim[2] + 2 * p.conv.pad[0] > 256 || p.x.dim[3] + 2 * p.conv.pad[1] > 256)) {
        why = "FFT needs the padded input at most 256 x 256";
        return CUDNN_STATUS_NOT_SUPPORTED;
      }
      if (algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING && (r > 32 || s > 32)) {
        why = "FFT_TILING needs a filter at most 32 x 32";
        return CUDNN_STATUS_NOT_SUPPORTED;
      }
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      if (unit_stride && unit_dilation && r == 3 && s == 3) return CUDNN_STATUS_SUCCESS;
      why = "WINOGRAD needs a 3x3 filter, stride 1 and dilation 1";
      return CUDNN_STATUS_NOT_SUPPORTED;
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      if (unit_stride && unit_dilation && ((r == 3 && s == 3) || (r == 5 && s == 5 && !half))) {
        return CUDNN_STATUS_SUCCESS;
      }
      why = "WINOGRAD_NONFUSED needs stride 1, dilation 1 and a 3x3 filter (5x5 for FLOAT data)";
      return CUDNN_STATUS_NOT_SUPPORTED;
    default: why = "unknown algorithm"; return CUDNN_STATUS_BAD_PARAM;
  }
}

static std::size_t modelled_workspace_bytes(const ConvProblem& p, cudnnConvolutionFwdAlgo_t algo) {
  const std::size_t es = element_size(p.x.type);
  const std::size_t n = static_cast<std::size_t>(p.x.dim[0]), c = static_cast<std::size_t>(p.x.dim[1]);
  const std::size_t k = static_cast<std::size_t>(p.w.dim[0]), cg = static_cast<std::size_t>(p.w.dim[1]);
  const std::size_t r = static_cast<std::size_t>(p.w.dim[2]), s = static_cast<std::size_t>(p.w.dim[3]);
  const std::size_t oh = static_cast<std::size_t>(p.out_h), ow = static_cast<std::size_t>(p.out_w);
  const auto round_up = [](std::size_t v) { return (v + 255) / 256 * 256; };
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return 0;
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return round_up(cg * r * s * 2 * sizeof(int));                                  // index table
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return round_up(c * r * s * oh * ow * es);  // im2col of one image
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: {
      const std::size_t fh = next_pow2(static_cast<std::size_t>(p.x.dim[2] + 2 * p.conv.pad[0]));
      const std::size_t fw = next_pow2(static_cast<std::size_t>(p.x.dim[3] + 2 * p.conv.pad[1]));
      return round_up((n * c + k * cg + n * k) * fh * (fw / 2 + 1) * 8);  // complex float spectra
    }
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: {
      const std::size_t tiles = ((oh + 31) / 32) * ((ow + 31) / 32);
      return round_up((n * c * tiles + k * cg + n * k * tiles) * 32 * 17 * 8);
    }
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return round_up(k * cg * 16 * es);  // transformed filter
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: {
      const std::size_t tiles = ((oh + 3) / 4) * ((ow + 3) / 4);
      return round_up((n * c * tiles + k * cg + n * k * tiles) * 36 * 4);
    }
    default: return 0;
  }
}

std::size_t workspace_bytes(const ConvProblem& p, cudnnConvolutionFwdAlgo_t algo) {
  std::size_t bytes = modelled_workspace_bytes(p, algo);
  if (const char* peak = std::getenv("INFER_STANDIN_CUDNN_WORKSPACE_PEAK"); peak && *peak) {
    if (std::strtol(peak, nullptr, 10) == p.x.dim[0]) bytes += std::size_t{1} << 20;
  }
  return bytes;
}

}  // namespace standin_cudnn

using namespace standin_cudnn;

extern "C" {

cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t handle, int* count) {
  STANDIN_COUNT_CALL();
  if (handle == nullptr || count == nullptr) {
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionForwardAlgorithmMaxCount", "handle or count is NULL");
  }
  *count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}

// cudnnGetConvolutionForwardWorkspaceSize(): the workspace `algo` needs; NOT_SUPPORTED when the
// algorithm does not support the configuration; the checks of cudnnConvolutionForward otherwise.
cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
                                                      const cudnnFilterDescriptor_t wDesc,
                                                      const cudnnConvolutionDescriptor_t convDesc,
                                                      const cudnnTensorDescriptor_t yDesc,
                                                      cudnnConvolutionFwdAlgo_t algo, size_t* sizeInBytes) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnGetConvolutionForwardWorkspaceSize";
  if (handle == nullptr || sizeInBytes == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM, call, "handle or sizeInBytes is NULL");
  ConvProblem p;
  if (cudnnStatus_t s = make_problem(call, xDesc, wDesc, convDesc, yDesc, p); s != CUDNN_STATUS_SUCCESS) return s;
  if (algo < 0 || algo >= CUDNN_CONVOLUTION_FWD_ALGO_COUNT) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "algo is not a cudnnConvolutionFwdAlgo_t");
  }
  std::string why;
  if (cudnnStatus_t s = algo_supports(p, algo, why); s != CUDNN_STATUS_SUCCESS) {
    return fail(s, call, "algorithm " + std::to_string(algo) + ": " + why);
  }
  *sizeInBytes = workspace_bytes(p, algo);
  return CUDNN_STATUS_SUCCESS;
}

// cudnnGetConvolutionForwardAlgorithm_v7(): every algorithm once (up to requestedAlgoCount),
// supported ones first (status SUCCESS), then the others (their NOT_SUPPORTED status); time -1
// (a heuristic, nothing ran). BAD_PARAM when requestedAlgoCount <= 0 or an output is NULL.
cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
                                                     const cudnnFilterDescriptor_t filterDesc,
                                                     const cudnnConvolutionDescriptor_t convDesc,
                                                     const cudnnTensorDescriptor_t destDesc,
                                                     const int requestedAlgoCount, int* returnedAlgoCount,
                                                     cudnnConvolutionFwdAlgoPerf_t* perfResults) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnGetConvolutionForwardAlgorithm_v7";
  if (const cudnnStatus_t s = check_query(call, handle, requestedAlgoCount, returnedAlgoCount, perfResults);
      s != CUDNN_STATUS_SUCCESS) {
    return s;
  }
  ConvProblem p;
  if (cudnnStatus_t s = make_problem(call, srcDesc, filterDesc, convDesc, destDesc, p); s != CUDNN_STATUS_SUCCESS) {
    return s;
  }
  std::vector<cudnnConvolutionFwdAlgoPerf_t> good, bad;
  for (cudnnConvolutionFwdAlgo_t algo : kPreference) {
    cudnnConvolutionFwdAlgoPerf_t perf{};
    perf.algo = algo;
    std::string why;
    perf.status = algo_supports(p, algo, why);
    perf.time = -1.0f;
    perf.memory = perf.status == CUDNN_STATUS_SUCCESS ? workspace_bytes(p, algo) : 0;
    perf.determinism = CUDNN_DETERMINISTIC;
    perf.mathType = reported_math(p, algo);
    (perf.status == CUDNN_STATUS_SUCCESS ? good : bad).push_back(perf);
  }
  good.insert(good.end(), bad.begin(), bad.end());
  const int n = std::min(requestedAlgoCount, static_cast<int>(good.size()));
  for (int i = 0; i < n; ++i) perfResults[i] = good[static_cast<std::size_t>(i)];
  *returnedAlgoCount = n;
  return CUDNN_STATUS_SUCCESS;
}

// cudnnFindConvolutionForwardAlgorithmEx(): synchronises the handle's stream (illegal during a
// stream capture: the capture is invalidated and the call fails), runs every supported algorithm
// on the caller's buffers (y is overwritten) and returns them by measured time. An algorithm whose
// workspace exceeds workSpaceSizeInBytes gets CUDNN_STATUS_ALLOC_FAILED (its documented meaning in
// cudnnConvolutionFwdAlgoPerf_t: "the provided workspace is insufficient").
cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
                                                     const void* x, const cudnnFilterDescriptor_t wDesc, const void* w,
                                                     const cudnnConvolutionDescriptor_t convDesc,
                                                     const cudnnTensorDescriptor_t yDesc, void* y,
                                                     const int requestedAlgoCount, int* returnedAlgoCount,
                                                     cudnnConvolutionFwdAlgoPerf_t* perfResults, void* workSpace,
                                                     size_t workSpaceSizeInBytes) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnFindConvolutionForwardAlgorithmEx";
  if (const cudnnStatus_t s = check_query(call, handle, requestedAlgoCount, returnedAlgoCount, perfResults);
      s != CUDNN_STATUS_SUCCESS) {
    return s;
  }
  ConvProblem p;
  if (cudnnStatus_t s = make_problem(call, xDesc, wDesc, convDesc, yDesc, p); s != CUDNN_STATUS_SUCCESS) return s;
  if (workSpaceSizeInBytes > 0) standin::require_device(call, {workSpace, workSpaceSizeInBytes, "workSpace"});
  void* stream = stream_of(handle);
  if (const int e = standin::synchronize(stream); e != 0) return cuda_failure(e, call);

  std::vector<cudnnConvolutionFwdAlgoPerf_t> ran, other;
  for (cudnnConvolutionFwdAlgo_t algo : kPreference) {
    cudnnConvolutionFwdAlgoPerf_t perf{};
    perf.algo = algo;
    perf.determinism = CUDNN_DETERMINISTIC;
    perf.mathType = reported_math(p, algo);
    perf.time = -1.0f;
    std::string why;
    perf.status = algo_supports(p, algo, why);
    if (perf.status == CUDNN_STATUS_SUCCESS) {
      perf.memory = workspace_bytes(p, algo);
      if (perf.memory > workSpaceSizeInBytes) perf.status = CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
    }
    if (perf.status != CUDNN_STATUS_SUCCESS) {
      other.push_back(perf);
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    if (cudnnStatus_t s =
            enqueue_convolution(call, handle, p, algo, x, w, workSpace, workSpaceSizeInBytes, 1.0, 0.0, y);
        s != CUDNN_STATUS_SUCCESS) {
      return s;
    }
    if (const int e = standin::synchronize(stream); e != 0) return cuda_failure(e, call);
    perf.time = std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();
    ran.push_back(perf);
  }
  std::stable_sort(
      ran.begin(), ran.end(),
      [](const cudnnConvolutionFwdAlgoPerf_t& a, const cudnnConvolutionFwdAlgoPerf_t& b) { return a.time < b.time; });
  ran.insert(ran.end(), other.begin(), other.end());
  const int n = std::min(requestedAlgoCount, static_cast<int>(ran.size()));
  for (int i = 0; i < n; ++i) perfResults[i] = ran[static_cast<std::size_t>(i)];
  *returnedAlgoCount = n;
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
