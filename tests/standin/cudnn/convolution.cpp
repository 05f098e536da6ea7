// Forward convolution: output dimensions, argument checks, the arithmetic, cudnnConvolutionForward
// and the fused cudnnConvolutionBiasActivationForward.
//
// Arithmetic (what a GPU may do, at its least precise where the math type allows it):
//   - products of float-representable operands, accumulated in double, rounded once at the end;
//   - FLOAT data with CUDNN_DEFAULT_MATH or CUDNN_TENSOR_OP_MATH: x and w are first rounded to TF32
//     (10 fraction bits, to nearest even), as Ampere-and-later tensor cores may do;
//   - FLOAT data with CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: x and w are rounded to binary16;
//   - CUDNN_FMA_MATH: no operand rounding.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "tests/standin/call_count.h"
#include "tests/standin/cudnn/cudnn_internal.h"
#include "tests/standin/half.h"

namespace standin_cudnn {
namespace {

float round_tf32(float v) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  if ((bits & 0x7F800000u) == 0x7F800000u) return v;  // inf and NaN unchanged
  bits += 0xFFFu + ((bits >> 13) & 1u);               // round to nearest even on the 13 dropped bits
  bits &= ~0x1FFFu;
  float out = 0.0f;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

enum class OperandRounding { kNone, kTf32, kHalf };

// Two doubles as one SIMD register (a GCC and Clang vector extension): the sums below vectorise
// at any optimisation level the stand-in is built with.
using DoublePair = double __attribute__((vector_size(16)));

OperandRounding rounding_for(const ConvProblem& p) {
  if (p.x.type != CUDNN_DATA_FLOAT) return OperandRounding::kNone;
  switch (p.conv.math) {
    case CUDNN_DEFAULT_MATH:
    case CUDNN_TENSOR_OP_MATH: return OperandRounding::kTf32;
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return OperandRounding::kHalf;
    default: return OperandRounding::kNone;
  }
}

void round_all(std::vector<float>& v, OperandRounding r) {
  if (r == OperandRounding::kTf32) {
    for (float& e : v) e = round_tf32(e);
  } else if (r == OperandRounding::kHalf) {
    for (float& e : v) e = standin::half_to_float(standin::half_from_float(e));
  }
}

// Filter values as packed K x (C/groups) x R x S, flipped for CUDNN_CONVOLUTION (true convolution).
std::vector<float> load_filter(const ConvProblem& p, const void* w) {
  const int k_count = p.w.dim[0], c_count = p.w.dim[1], rows = p.w.dim[2], cols = p.w.dim[3];
  const std::size_t total = static_cast<std::size_t>(k_count) * c_count * rows * cols;
  std::vector<float> raw(total);
  if (p.w.type == CUDNN_DATA_HALF) {
    const auto* h = static_cast<const std::uint16_t*>(w);
    for (std::size_t i = 0; i < total; ++i) raw[i] = standin::half_to_float(h[i]);
  } else {
    std::memcpy(raw.data(), w, total * sizeof(float));
  }
  const bool flip = p.conv.mode == CUDNN_CONVOLUTION;
  const bool khwc = p.w.format == CUDNN_TENSOR_NHWC;  // KRSC storage
  std::vector<float> out(total);
  std::size_t i = 0;
  for (int k = 0; k < k_count; ++k) {
    for (int c = 0; c < c_count; ++c) {
      for (int r = 0; r < rows; ++r) {
        for (int s = 0; s < cols; ++s) {
          const int rr = flip ? rows - 1 - r : r;
          const int ss = flip ? cols - 1 - s : s;
          const std::size_t at = khwc ? ((static_cast<std::size_t>(k) * rows + rr) * cols + ss) * c_count + c
                                      : ((static_cast<std::size_t>(k) * c_count + c) * rows + rr) * cols + ss;
          out[i++] = raw[at];
        }
      }
    }
  }
  return out;
}

int output_dim(int input, int pad, int filter, int dilation, int stride) {
  const int span = (filter - 1) * dilation + 1;
  const int padded = input + 2 * pad;
  if (padded < span) return 0;
  return 1 + (padded - span) / stride;
}

}  // namespace

cudnnStatus_t make_problem(const char* call, cudnnTensorDescriptor_t xDesc, cudnnFilterDescriptor_t wDesc,
                           cudnnConvolutionDescriptor_t convDesc, cudnnTensorDescriptor_t yDesc, ConvProblem& p) {
  // cudnnConvolutionForward(), "Returns": BAD_PARAM for NULL descriptors, non-matching numbers of
  // dimensions or data types, C of x != C of w * groups, K not a multiple of the group count, and
  // y dimensions other than the convolution's output; NOT_SUPPORTED for data type configurations
  // outside the "Supported Datatype Configurations" table and tensors other than 4-d or 5-d.
  if (cudnnStatus_t s = check_tensor(call, xDesc, "xDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  if (cudnnStatus_t s = check_tensor(call, yDesc, "yDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  if (wDesc == nullptr || !wDesc->value.set) return fail(CUDNN_STATUS_BAD_PARAM, call, "wDesc is NULL or not set");
  if (convDesc == nullptr || !convDesc->value.set) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "convDesc is NULL or not set");
  }
  p.x = xDesc->value;
  p.y = yDesc->value;
  p.w = wDesc->value;
  p.conv = convDesc->value;
  if (p.x.nb != p.y.nb || p.x.nb != p.w.nb) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "xDesc, wDesc and yDesc have different numbers of dimensions");
  }
  if (p.x.nb != 4) {
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call, "the stand-in implements 2-d (4-d tensor) convolutions only");
  }
  if (p.x.type != p.w.type || p.x.type != p.y.type) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "xDesc, wDesc and yDesc have different data types");
  }
  if (p.conv.compute != CUDNN_DATA_FLOAT) {
    const std::string config = p.x.type == CUDNN_DATA_HALF && p.conv.compute == CUDNN_DATA_HALF
                                   ? "TRUE_HALF_CONFIG (HALF compute type) is not implemented by the stand-in"
                                   : "data type " + std::to_string(p.x.type) + " with compute type " +
                                         std::to_string(p.conv.compute) + " is not a supported configuration";
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call, config + "; use CUDNN_DATA_FLOAT as the compute type");
  }
  const int groups = p.conv.groups;
  if (p.x.dim[1] != p.w.dim[1] * groups) {
    return fail(CUDNN_STATUS_BAD_PARAM, call,
                "x has " + std::to_string(p.x.dim[1]) + " channels, the filter expects " + std::to_string(p.w.dim[1]) +
                    " x " + std::to_string(groups) + " groups");
  }
  if (p.w.dim[0] % groups != 0) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "the filter count K is not a multiple of the group count");
  }
  p.out_h = output_dim(p.x.dim[2], p.conv.pad[0], p.w.dim[2], p.conv.dilation[0], p.conv.stride[0]);
  p.out_w = output_dim(p.x.dim[3], p.conv.pad[1], p.w.dim[3], p.conv.dilation[1], p.conv.stride[1]);
  if (p.out_h <= 0 || p.out_w <= 0) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "the dilated filter is larger than the padded input");
  }
  if (p.y.dim[0] != p.x.dim[0] || p.y.dim[1] != p.w.dim[0] || p.y.dim[2] != p.out_h || p.y.dim[3] != p.out_w) {
    return fail(CUDNN_STATUS_BAD_PARAM, call,
                "yDesc is " + describe(p.y) + " but the convolution produces [" + std::to_string(p.x.dim[0]) + "," +
                    std::to_string(p.w.dim[0]) + "," + std::to_string(p.out_h) + "," + std::to_string(p.out_w) +
                    "] (cudnnGetConvolution2dForwardOutputDim)");
  }
  return CUDNN_STATUS_SUCCESS;
}

void compute_convolution(const ConvProblem& p, const ConvOperands& ops, std::vector<double>& out) {
  if (ops.workspace_bytes > 0) std::memset(ops.workspace, 0xFF, ops.workspace_bytes);  // no state survives
  const OperandRounding rounding = rounding_for(p);
  std::vector<float> xv = load(p.x, ops.x);
  std::vector<float> wv = load_filter(p, ops.w);
  round_all(xv, rounding);
  round_all(wv, rounding);

  const int n_count = p.x.dim[0], c_total = p.x.dim[1], in_h = p.x.dim[2], in_w = p.x.dim[3];
  const int k_total = p.w.dim[0], c_group = p.w.dim[1], rows = p.w.dim[2], cols = p.w.dim[3];
  const int groups = p.conv.groups, k_group = k_total / groups;
  const int ow_count = p.out_w;
  const int sh = p.conv.stride[0], sw = p.conv.stride[1], ph = p.conv.pad[0], pw = p.conv.pad[1];
  const int dh = p.conv.dilation[0], dw = p.conv.dilation[1];
  const std::size_t plane_in = static_cast<std::size_t>(in_h) * in_w;
  const std::size_t plane_out = static_cast<std::size_t>(p.out_h) * ow_count;
  const std::size_t taps = static_cast<std::size_t>(c_group) * rows * cols;  // one filter's values
  out.resize(static_cast<std::size_t>(n_count) * k_total * plane_out);       // every element is written below

  // As an implicit GEMM does it: the input values under each filter tap, for a block of output
  // positions, gathered into rows (zero where the tap falls in the padding), then every filter's
  // taps times those rows. Each output sums its products in tap order (channel, row, column), as
  // one accumulator in double; the products of float operands are exact in double. Blocks of 64
  // positions keep the gathered rows in the cache; 8 outputs at a time keep their sums in registers.
  constexpr std::size_t kBlock = 64, kTile = 8;
  std::vector<double> gathered(taps * kBlock, 0.0);
  const std::vector<double> weights(wv.begin(), wv.end());
  for (int n = 0; n < n_count; ++n) {
    for (int g = 0; g < groups; ++g) {
      const float* x_group = xv.data() + (static_cast<std::size_t>(n) * c_total + g * c_group) * plane_in;
      for (std::size_t first = 0; first < plane_out; first += kBlock) {
        const std::size_t width = std::min(kBlock, plane_out - first);
        double* row_out = gathered.data();
        for (int c = 0; c < c_group; ++c) {
          const float* plane = x_group + c * plane_in;
          for (int r = 0; r < rows; ++r) {
            for (int s = 0; s < cols; ++s, row_out += kBlock) {
              int oh = static_cast<int>(first / ow_count), ow = static_cast<int>(first % ow_count);
              for (std::size_t j = 0; j < width; ++j) {
                const int ih = oh * sh - ph + r * dh, iw = ow * sw - pw + s * dw;
                const bool inside = ih >= 0 && ih < in_h && iw >= 0 && iw < in_w;
                row_out[j] = inside ? plane[static_cast<std::size_t>(ih) * in_w + iw] : 0.0;
                if (++ow == ow_count) ow = 0, ++oh;
              }
            }
          }
        }
        for (int k = g * k_group; k < (g + 1) * k_group; ++k) {
          double* o = out.data() + (static_cast<std::size_t>(n) * k_total + k) * plane_out + first;
          const double* wk = weights.data() + static_cast<std::size_t>(k) * taps;
          for (std::size_t tile = 0; tile < width; tile += kTile) {
            DoublePair acc[kTile / 2] = {};  // lanes past `width` read stale rows and are not stored
            for (std::size_t t = 0; t < taps; ++t) {
              const DoublePair wval = {wk[t], wk[t]};
              const double* src = gathered.data() + t * kBlock + tile;
              for (std::size_t i = 0; i < kTile / 2; ++i) {
                DoublePair v;
                std::memcpy(&v, src + 2 * i, sizeof v);
                acc[i] += wval * v;
              }
            }
            for (std::size_t i = 0; i < kTile && tile + i < width; ++i) o[tile + i] = acc[i / 2][i % 2];
          }
        }
      }
    }
  }
}

namespace {

// Checks the algorithm and the workspace of a call; sets `need` to the required workspace bytes.
cudnnStatus_t check_algo(const char* call, const ConvProblem& p, cudnnConvolutionFwdAlgo_t algo,
                         std::size_t workSpaceSizeInBytes, std::size_t& need) {
  if (algo < 0 || algo >= CUDNN_CONVOLUTION_FWD_ALGO_COUNT) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "algo is not a cudnnConvolutionFwdAlgo_t");
  }
  std::string why;
  if (cudnnStatus_t s = algo_supports(p, algo, why); s != CUDNN_STATUS_SUCCESS) {
    return fail(s, call, "algorithm " + std::to_string(algo) + " does not support this convolution: " + why);
  }
  need = workspace_bytes(p, algo);
  if (workSpaceSizeInBytes < need) {
    return fail(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT, call,
                "workSpaceSizeInBytes is " + std::to_string(workSpaceSizeInBytes) + " but algorithm " +
                    std::to_string(algo) + " needs " + std::to_string(need) +
                    " (cudnnGetConvolutionForwardWorkspaceSize)");
  }
  return CUDNN_STATUS_SUCCESS;
}

std::size_t filter_bytes(const Filter& w) {
  std::size_t n = element_size(w.type);
  for (int i = 0; i < w.nb; ++i) n *= static_cast<std::size_t>(w.dim[i]);
  return n;
}

}  // namespace

cudnnStatus_t enqueue_convolution(const char* call, cudnnHandle_t handle, const ConvProblem& p,
                                  cudnnConvolutionFwdAlgo_t algo, const void* x, const void* w, void* workSpace,
                                  std::size_t workSpaceSizeInBytes, double alpha, double beta, void* y) {
  std::size_t need = 0;
  if (cudnnStatus_t s = check_algo(call, p, algo, workSpaceSizeInBytes, need); s != CUDNN_STATUS_SUCCESS) return s;
  std::vector<standin::Range> ranges = {
      {x, extent_bytes(p.x), "x"}, {w, filter_bytes(p.w), "w"}, {y, extent_bytes(p.y), "y"}};
  if (need > 0) ranges.push_back({workSpace, need, "workSpace"});
  const ConvOperands ops{x, w, workSpace, need};
  const int e = standin::enqueue(stream_of(handle), call, std::move(ranges), [p, ops, alpha, beta, y] {
    std::vector<double> out;
    compute_convolution(p, ops, out);
    store_blend(p.y, y, out.data(), alpha, beta);
  });
  return e == 0 ? CUDNN_STATUS_SUCCESS : cuda_failure(e, call);
}

}  // namespace standin_cudnn

using namespace standin_cudnn;

extern "C" {

// cudnnGetConvolution2dForwardOutputDim(): outputDim = 1 + (inputDim + 2*pad - ((filterDim-1)*dilation + 1)) / stride.
// BAD_PARAM for NULL / unset descriptors, non-4-d input, C of input != C of filter * groups, or a
// dilated filter larger than the padded input.
cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t convDesc,
                                                    const cudnnTensorDescriptor_t inputTensorDesc,
                                                    const cudnnFilterDescriptor_t filterDesc, int* n, int* c, int* h,
                                                    int* w) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnGetConvolution2dForwardOutputDim";
  if (convDesc == nullptr || !convDesc->value.set || inputTensorDesc == nullptr || !inputTensorDesc->value.set ||
      filterDesc == nullptr || !filterDesc->value.set) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "a descriptor is NULL or not set");
  }
  if (n == nullptr || c == nullptr || h == nullptr || w == nullptr) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "an output pointer is NULL");
  }
  const Tensor& x = inputTensorDesc->value;
  const Filter& f = filterDesc->value;
  const Convolution& cv = convDesc->value;
  if (x.nb != 4 || f.nb != 4) return fail(CUDNN_STATUS_BAD_PARAM, call, "input and filter must be 4-d");
  if (x.dim[1] != f.dim[1] * cv.groups) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "the input's channels do not match the filter's times the group count");
  }
  const int oh = output_dim(x.dim[2], cv.pad[0], f.dim[2], cv.dilation[0], cv.stride[0]);
  const int ow = output_dim(x.dim[3], cv.pad[1], f.dim[3], cv.dilation[1], cv.stride[1]);
  if (oh <= 0 || ow <= 0)
    return fail(CUDNN_STATUS_BAD_PARAM, call, "the dilated filter is larger than the padded input");
  *n = x.dim[0];
  *c = f.dim[0];
  *h = oh;
  *w = ow;
  return CUDNN_STATUS_SUCCESS;
}

// cudnnConvolutionForward(): y = alpha * conv(x, w) + beta * y (prior y not read when beta == 0).
cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc,
                                      const void* x, const cudnnFilterDescriptor_t wDesc, const void* w,
                                      const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,
                                      void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
                                      const cudnnTensorDescriptor_t yDesc, void* y) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnConvolutionForward";
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
  ConvProblem p;
  if (cudnnStatus_t s = make_problem(call, xDesc, wDesc, convDesc, yDesc, p); s != CUDNN_STATUS_SUCCESS) return s;
  const double a = host_scalar(call, alpha, "alpha");
  const double b = host_scalar(call, beta, "beta");
  return enqueue_convolution(call, handle, p, algo, x, w, workSpace, workSpaceSizeInBytes, a, b, y);
}

// cudnnConvolutionBiasActivationForward(): y = act(alpha1 * conv(x) + alpha2 * z + bias).
//   - activationDesc mode: RELU or IDENTITY only, else NOT_SUPPORTED; IDENTITY only with
//     CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM (cudnnActivationMode_t: "The
//     cudnnConvolutionBiasActivationForward() function must use
//     CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM"), else NOT_SUPPORTED;
//   - zDesc must have yDesc's dimensions and data type; biasDesc must be 1 x K x 1 x 1 with y's data
//     type (BAD_PARAM otherwise);
//   - z may alias y (the documented in-place use); z is read whatever alpha2 is (the
//     documentation makes no exception for alpha2 == 0), so it must be a valid buffer of zDesc's extent.
// Fault injection (test infrastructure): INFER_STANDIN_CUDNN_DECLINE=fused-call makes every call
// decline with CUDNN_STATUS_NOT_SUPPORTED after its descriptors are checked, as a cuDNN build without
// a fused engine for the configuration does; the separate calls then do the work.
cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void* alpha1, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes, const void* alpha2,
    const cudnnTensorDescriptor_t zDesc, const void* z, const cudnnTensorDescriptor_t biasDesc, const void* bias,
    const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t yDesc, void* y) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnConvolutionBiasActivationForward";
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
  ConvProblem p;
  if (cudnnStatus_t s = make_problem(call, xDesc, wDesc, convDesc, yDesc, p); s != CUDNN_STATUS_SUCCESS) return s;
  if (activationDesc == nullptr || !activationDesc->value.set) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "activationDesc is NULL or not set");
  }
  const Activation act = activationDesc->value;
  if (act.mode != CUDNN_ACTIVATION_RELU && act.mode != CUDNN_ACTIVATION_IDENTITY) {
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call, "only CUDNN_ACTIVATION_RELU and CUDNN_ACTIVATION_IDENTITY are fused");
  }
  if (act.mode == CUDNN_ACTIVATION_IDENTITY && algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) {
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                "CUDNN_ACTIVATION_IDENTITY requires CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM");
  }
  if (cudnnStatus_t s = check_tensor(call, zDesc, "zDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  if (cudnnStatus_t s = check_tensor(call, biasDesc, "biasDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  const Tensor zt = zDesc->value;
  const Tensor bt = biasDesc->value;
  if (!same_dims(zt, p.y) || zt.type != p.y.type) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "zDesc " + describe(zt) + " does not match yDesc " + describe(p.y));
  }
  if (bt.nb != p.y.nb || bt.dim[0] != 1 || bt.dim[1] != p.y.dim[1] || bt.dim[2] != 1 || bt.dim[3] != 1 ||
      bt.type != p.y.type) {
    return fail(CUDNN_STATUS_BAD_PARAM, call,
                "biasDesc is " + describe(bt) + "; it must be [1," + std::to_string(p.y.dim[1]) + ",1,1] of y's type");
  }
  if (decline_requested("fused-call")) {
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call, "declined by INFER_STANDIN_CUDNN_DECLINE=fused-call");
  }
  const double a1 = host_scalar(call, alpha1, "alpha1");
  const double a2 = host_scalar(call, alpha2, "alpha2");
  std::size_t need = 0;
  if (cudnnStatus_t s = check_algo(call, p, algo, workSpaceSizeInBytes, need); s != CUDNN_STATUS_SUCCESS) return s;
  std::vector<standin::Range> ranges = {{x, extent_bytes(p.x), "x"},
                                        {w, filter_bytes(p.w), "w"},
                                        {z, extent_bytes(zt), "z"},
                                        {bias, extent_bytes(bt), "bias"},
                                        {y, extent_bytes(p.y), "y"}};
  if (need > 0) ranges.push_back({workSpace, need, "workSpace"});
  const ConvOperands ops{x, w, workSpace, need};
  const int e = standin::enqueue(stream_of(handle), call, std::move(ranges), [p, ops, zt, bt, act, a1, a2, z, bias, y] {
    std::vector<double> out;
    compute_convolution(p, ops, out);
    const std::vector<float> zv = load(zt, z);
    const std::vector<float> bv = load(bt, bias);
    const std::size_t plane = static_cast<std::size_t>(p.out_h) * p.out_w;
    const bool keep_nan = act.nan == CUDNN_PROPAGATE_NAN;
    for (std::size_t i = 0; i < out.size(); ++i) {
      const std::size_t k = (i / plane) % static_cast<std::size_t>(p.y.dim[1]);
      double v = a1 * out[i] + a2 * static_cast<double>(zv[i]) + static_cast<double>(bv[k]);
      if (act.mode == CUDNN_ACTIVATION_RELU) {
        if (std::isnan(v)) {
          v = keep_nan ? v : 0.0;
        } else if (v < 0.0) {
          v = 0.0;
        }
      }
      out[i] = v;
    }
    store_blend(p.y, y, out.data(), 1.0, 0.0);
  });
  return e == 0 ? CUDNN_STATUS_SUCCESS : cuda_failure(e, call);
}

}  // extern "C"
