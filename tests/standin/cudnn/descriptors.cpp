// Tensor, filter, convolution, pooling, activation and op-tensor descriptors: create, set (with the
// validation the cuDNN API reference documents for each Set function), get, destroy.
#include <new>
#include <string>

#include "tests/standin/call_count.h"
#include "tests/standin/cudnn/cudnn_internal.h"

using standin_cudnn::fail;
using standin_cudnn::Tensor;

namespace {

bool valid_type(cudnnDataType_t t) { return t >= CUDNN_DATA_FLOAT && t <= CUDNN_DATA_COMPLEX_FP64; }

// cudnnSetTensor4dDescriptor / cudnnSetTensorNdDescriptor: the total size may not exceed 2 Giga-elements
// (CUDNN_STATUS_NOT_SUPPORTED).
constexpr std::int64_t kMaxElements = std::int64_t{1} << 31;

template <typename T>
cudnnStatus_t create(const char* call, T** out) {
  if (out == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "the output pointer is NULL");
  *out = new (std::nothrow) T;
  if (*out == nullptr) return fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, call, "out of host memory");
  return CUDNN_STATUS_SUCCESS;
}

template <typename T>
cudnnStatus_t destroy(T* desc) {
  delete desc;  // destroying NULL is a no-op, as in cuDNN
  return CUDNN_STATUS_SUCCESS;
}

// Shared by the 4-d and N-d setters. Dimensions and strides must be positive.
cudnnStatus_t set_tensor(const char* call, cudnnTensorDescriptor_t desc, cudnnDataType_t type, int nb, const int* dims,
                         const std::int64_t* strides) {
  if (desc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "tensorDesc is NULL");
  if (!valid_type(type)) return fail(CUDNN_STATUS_BAD_PARAM, call, "dataType is not a cudnnDataType_t");
  // cudnnSetTensorNdDescriptor: nbDims outside [4, CUDNN_DIM_MAX] -> CUDNN_STATUS_NOT_SUPPORTED.
  if (nb < 4 || nb > CUDNN_DIM_MAX) {
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call, "nbDims " + std::to_string(nb) + " is outside [4, 8]");
  }
  std::int64_t count = 1;
  for (int i = 0; i < nb; ++i) {
    if (dims[i] <= 0) {
      return fail(CUDNN_STATUS_BAD_PARAM, call,
                  "dimension " + std::to_string(i) + " is " + std::to_string(dims[i]) + "; it must be positive");
    }
    if (strides[i] <= 0) {
      return fail(CUDNN_STATUS_BAD_PARAM, call,
                  "stride " + std::to_string(i) + " is " + std::to_string(strides[i]) + "; it must be positive");
    }
    count *= dims[i];
    if (count > kMaxElements) return fail(CUDNN_STATUS_NOT_SUPPORTED, call, "more than 2^31 elements");
  }
  Tensor t;
  t.set = true;
  t.type = type;
  t.nb = nb;
  for (int i = 0; i < nb; ++i) {
    t.dim[i] = dims[i];
    t.stride[i] = strides[i];
  }
  desc->value = t;
  return CUDNN_STATUS_SUCCESS;
}

bool valid_nan(cudnnNanPropagation_t n) { return n == CUDNN_NOT_PROPAGATE_NAN || n == CUDNN_PROPAGATE_NAN; }

}  // namespace

extern "C" {

// --- tensors -------------------------------------------------------------------------------------

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* tensorDesc) {
  STANDIN_COUNT_CALL();
  return create("cudnnCreateTensorDescriptor", tensorDesc);
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc) {
  STANDIN_COUNT_CALL();
  return destroy(tensorDesc);
}

// cudnnSetTensor4dDescriptor(): BAD_PARAM when n, c, h or w is not positive, or format / dataType
// is not a valid enumerant. NCHW_VECT_C belongs to the vectorised INT8 types only.
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format,
                                         cudnnDataType_t dataType, int n, int c, int h, int w) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnSetTensor4dDescriptor";
  const int dims[4] = {n, c, h, w};
  std::int64_t strides[4] = {0, 0, 0, 0};
  if (format == CUDNN_TENSOR_NCHW) {
    strides[3] = 1;
    strides[2] = w;
    strides[1] = std::int64_t{h} * w;
    strides[0] = std::int64_t{c} * h * w;
  } else if (format == CUDNN_TENSOR_NHWC) {
    strides[1] = 1;
    strides[3] = c;
    strides[2] = std::int64_t{w} * c;
    strides[0] = std::int64_t{h} * w * c;
  } else if (format == CUDNN_TENSOR_NCHW_VECT_C) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "CUDNN_TENSOR_NCHW_VECT_C needs a vectorised INT8 data type");
  } else {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "format is not a cudnnTensorFormat_t");
  }
  return set_tensor(call, tensorDesc, dataType, 4, dims, strides);
}

cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType, int n, int c,
                                           int h, int w, int nStride, int cStride, int hStride, int wStride) {
  STANDIN_COUNT_CALL();
  const int dims[4] = {n, c, h, w};
  const std::int64_t strides[4] = {nStride, cStride, hStride, wStride};
  return set_tensor("cudnnSetTensor4dDescriptorEx", tensorDesc, dataType, 4, dims, strides);
}

cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t* dataType, int* n,
                                         int* c, int* h, int* w, int* nStride, int* cStride, int* hStride,
                                         int* wStride) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnGetTensor4dDescriptor";
  if (tensorDesc == nullptr || !tensorDesc->value.set)
    return fail(CUDNN_STATUS_BAD_PARAM, call, "tensorDesc is not set");
  const Tensor& t = tensorDesc->value;
  if (t.nb != 4) return fail(CUDNN_STATUS_BAD_PARAM, call, "tensorDesc is not 4-d");
  if (dataType == nullptr || n == nullptr || c == nullptr || h == nullptr || w == nullptr || nStride == nullptr ||
      cStride == nullptr || hStride == nullptr || wStride == nullptr) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "an output pointer is NULL");
  }
  *dataType = t.type;
  *n = t.dim[0];
  *c = t.dim[1];
  *h = t.dim[2];
  *w = t.dim[3];
  *nStride = static_cast<int>(t.stride[0]);
  *cStride = static_cast<int>(t.stride[1]);
  *hStride = static_cast<int>(t.stride[2]);
  *wStride = static_cast<int>(t.stride[3]);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType, int nbDims,
                                         const int dimA[], const int strideA[]) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnSetTensorNdDescriptor";
  if (dimA == nullptr || strideA == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "dimA or strideA is NULL");
  std::int64_t strides[CUDNN_DIM_MAX] = {};
  for (int i = 0; i < nbDims && i < CUDNN_DIM_MAX; ++i) strides[i] = strideA[i];
  return set_tensor(call, tensorDesc, dataType, nbDims, dimA, strides);
}

cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t tensorDesc, int nbDimsRequested,
                                         cudnnDataType_t* dataType, int* nbDims, int dimA[], int strideA[]) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnGetTensorNdDescriptor";
  if (tensorDesc == nullptr || !tensorDesc->value.set)
    return fail(CUDNN_STATUS_BAD_PARAM, call, "tensorDesc is not set");
  if (nbDimsRequested < 0) return fail(CUDNN_STATUS_BAD_PARAM, call, "nbDimsRequested is negative");
  const Tensor& t = tensorDesc->value;
  if (dataType != nullptr) *dataType = t.type;
  if (nbDims != nullptr) *nbDims = t.nb;
  for (int i = 0; i < nbDimsRequested && i < t.nb; ++i) {
    if (dimA != nullptr) dimA[i] = t.dim[i];
    if (strideA != nullptr) strideA[i] = static_cast<int>(t.stride[i]);
  }
  return CUDNN_STATUS_SUCCESS;
}

// --- filters -------------------------------------------------------------------------------------

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* filterDesc) {
  STANDIN_COUNT_CALL();
  return create("cudnnCreateFilterDescriptor", filterDesc);
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc) {
  STANDIN_COUNT_CALL();
  return destroy(filterDesc);
}

// cudnnSetFilterNdDescriptor(): BAD_PARAM for a non-positive dimension or an invalid dataType /
// format; NOT_SUPPORTED when nbDims is outside [3, CUDNN_DIM_MAX] (the stand-in: [4, 8]).
cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                                         cudnnTensorFormat_t format, int nbDims, const int filterDimA[]) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnSetFilterNdDescriptor";
  if (filterDesc == nullptr || filterDimA == nullptr) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "filterDesc or filterDimA is NULL");
  }
  if (!valid_type(dataType)) return fail(CUDNN_STATUS_BAD_PARAM, call, "dataType is not a cudnnDataType_t");
  if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "format must be CUDNN_TENSOR_NCHW or CUDNN_TENSOR_NHWC");
  }
  if (nbDims < 4 || nbDims > CUDNN_DIM_MAX) {
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call, "nbDims " + std::to_string(nbDims) + " is outside [4, 8]");
  }
  standin_cudnn::Filter f;
  f.set = true;
  f.type = dataType;
  f.format = format;
  f.nb = nbDims;
  for (int i = 0; i < nbDims; ++i) {
    if (filterDimA[i] <= 0) {
      return fail(CUDNN_STATUS_BAD_PARAM, call, "filter dimension " + std::to_string(i) + " is not positive");
    }
    f.dim[i] = filterDimA[i];
  }
  filterDesc->value = f;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w) {
  STANDIN_COUNT_CALL();
  const int dims[4] = {k, c, h, w};
  return cudnnSetFilterNdDescriptor(filterDesc, dataType, format, 4, dims);
}

cudnnStatus_t cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t filterDesc, cudnnDataType_t* dataType,
                                         cudnnTensorFormat_t* format, int* k, int* c, int* h, int* w) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnGetFilter4dDescriptor";
  if (filterDesc == nullptr || !filterDesc->value.set || filterDesc->value.nb != 4) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "filterDesc is not a set 4-d filter");
  }
  if (dataType == nullptr || format == nullptr || k == nullptr || c == nullptr || h == nullptr || w == nullptr) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "an output pointer is NULL");
  }
  const standin_cudnn::Filter& f = filterDesc->value;
  *dataType = f.type;
  *format = f.format;
  *k = f.dim[0];
  *c = f.dim[1];
  *h = f.dim[2];
  *w = f.dim[3];
  return CUDNN_STATUS_SUCCESS;
}

// --- convolutions --------------------------------------------------------------------------------

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* convDesc) {
  STANDIN_COUNT_CALL();
  return create("cudnnCreateConvolutionDescriptor", convDesc);
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc) {
  STANDIN_COUNT_CALL();
  return destroy(convDesc);
}

// cudnnSetConvolution2dDescriptor(): BAD_PARAM when a padding is negative, a stride or a dilation
// is not positive, or mode / computeType is not a valid enumerant. Group count and math type keep
// their values (defaults 1 and CUDNN_DEFAULT_MATH).
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w, int u, int v,
                                              int dilation_h, int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t computeType) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnSetConvolution2dDescriptor";
  if (convDesc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "convDesc is NULL");
  if (pad_h < 0 || pad_w < 0) return fail(CUDNN_STATUS_BAD_PARAM, call, "a padding is negative");
  if (u <= 0 || v <= 0) return fail(CUDNN_STATUS_BAD_PARAM, call, "a filter stride is not positive");
  if (dilation_h <= 0 || dilation_w <= 0) return fail(CUDNN_STATUS_BAD_PARAM, call, "a dilation is not positive");
  if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "mode is not a cudnnConvolutionMode_t");
  }
  if (!valid_type(computeType)) return fail(CUDNN_STATUS_BAD_PARAM, call, "computeType is not a cudnnDataType_t");
  standin_cudnn::Convolution& c = convDesc->value;
  c.set = true;
  c.pad[0] = pad_h;
  c.pad[1] = pad_w;
  c.stride[0] = u;
  c.stride[1] = v;
  c.dilation[0] = dilation_h;
  c.dilation[1] = dilation_w;
  c.mode = mode;
  c.compute = computeType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dDescriptor(const cudnnConvolutionDescriptor_t convDesc, int* pad_h, int* pad_w,
                                              int* u, int* v, int* dilation_h, int* dilation_w,
                                              cudnnConvolutionMode_t* mode, cudnnDataType_t* computeType) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnGetConvolution2dDescriptor";
  if (convDesc == nullptr || !convDesc->value.set) return fail(CUDNN_STATUS_BAD_PARAM, call, "convDesc is not set");
  if (pad_h == nullptr || pad_w == nullptr || u == nullptr || v == nullptr || dilation_h == nullptr ||
      dilation_w == nullptr || mode == nullptr || computeType == nullptr) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "an output pointer is NULL");
  }
  const standin_cudnn::Convolution& c = convDesc->value;
  *pad_h = c.pad[0];
  *pad_w = c.pad[1];
  *u = c.stride[0];
  *v = c.stride[1];
  *dilation_h = c.dilation[0];
  *dilation_w = c.dilation[1];
  *mode = c.mode;
  *computeType = c.compute;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int groupCount) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnSetConvolutionGroupCount";
  if (convDesc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "convDesc is NULL");
  if (groupCount < 1) return fail(CUDNN_STATUS_BAD_PARAM, call, "groupCount must be at least 1");
  convDesc->value.groups = groupCount;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int* groupCount) {
  STANDIN_COUNT_CALL();
  if (convDesc == nullptr || groupCount == nullptr) {
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionGroupCount", "convDesc or groupCount is NULL");
  }
  *groupCount = convDesc->value.groups;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnSetConvolutionMathType";
  if (convDesc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "convDesc is NULL");
  if (mathType != CUDNN_DEFAULT_MATH && mathType != CUDNN_TENSOR_OP_MATH &&
      mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && mathType != CUDNN_FMA_MATH) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "mathType is not a cudnnMathType_t");
  }
  convDesc->value.math = mathType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t* mathType) {
  STANDIN_COUNT_CALL();
  if (convDesc == nullptr || mathType == nullptr) {
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionMathType", "convDesc or mathType is NULL");
  }
  *mathType = convDesc->value.math;
  return CUDNN_STATUS_SUCCESS;
}

// --- pooling -------------------------------------------------------------------------------------

cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t* poolingDesc) {
  STANDIN_COUNT_CALL();
  return create("cudnnCreatePoolingDescriptor", poolingDesc);
}
cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t poolingDesc) {
  STANDIN_COUNT_CALL();
  return destroy(poolingDesc);
}

// cudnnSetPooling2dDescriptor(): BAD_PARAM when a window or stride is not positive, a padding is
// negative, or mode / maxpoolingNanOpt is not a valid enumerant.
cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t poolingDesc, cudnnPoolingMode_t mode,
                                          cudnnNanPropagation_t maxpoolingNanOpt, int windowHeight, int windowWidth,
                                          int verticalPadding, int horizontalPadding, int verticalStride,
                                          int horizontalStride) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnSetPooling2dDescriptor";
  if (poolingDesc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "poolingDesc is NULL");
  if (mode != CUDNN_POOLING_MAX && mode != CUDNN_POOLING_MAX_DETERMINISTIC &&
      mode != CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING && mode != CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "mode is not a cudnnPoolingMode_t");
  }
  if (!valid_nan(maxpoolingNanOpt)) return fail(CUDNN_STATUS_BAD_PARAM, call, "maxpoolingNanOpt is invalid");
  if (windowHeight <= 0 || windowWidth <= 0) return fail(CUDNN_STATUS_BAD_PARAM, call, "a window size is not positive");
  if (verticalStride <= 0 || horizontalStride <= 0) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "a stride is not positive");
  }
  if (verticalPadding < 0 || horizontalPadding < 0) return fail(CUDNN_STATUS_BAD_PARAM, call, "a padding is negative");
  standin_cudnn::Pooling p;
  p.set = true;
  p.mode = mode;
  p.nan = maxpoolingNanOpt;
  p.window[0] = windowHeight;
  p.window[1] = windowWidth;
  p.pad[0] = verticalPadding;
  p.pad[1] = horizontalPadding;
  p.stride[0] = verticalStride;
  p.stride[1] = horizontalStride;
  poolingDesc->value = p;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetPooling2dDescriptor(const cudnnPoolingDescriptor_t poolingDesc, cudnnPoolingMode_t* mode,
                                          cudnnNanPropagation_t* maxpoolingNanOpt, int* windowHeight, int* windowWidth,
                                          int* verticalPadding, int* horizontalPadding, int* verticalStride,
                                          int* horizontalStride) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnGetPooling2dDescriptor";
  if (poolingDesc == nullptr || !poolingDesc->value.set)
    return fail(CUDNN_STATUS_BAD_PARAM, call, "poolingDesc is not set");
  if (mode == nullptr || maxpoolingNanOpt == nullptr || windowHeight == nullptr || windowWidth == nullptr ||
      verticalPadding == nullptr || horizontalPadding == nullptr || verticalStride == nullptr ||
      horizontalStride == nullptr) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "an output pointer is NULL");
  }
  const standin_cudnn::Pooling& p = poolingDesc->value;
  *mode = p.mode;
  *maxpoolingNanOpt = p.nan;
  *windowHeight = p.window[0];
  *windowWidth = p.window[1];
  *verticalPadding = p.pad[0];
  *horizontalPadding = p.pad[1];
  *verticalStride = p.stride[0];
  *horizontalStride = p.stride[1];
  return CUDNN_STATUS_SUCCESS;
}

// cudnnGetPooling2dForwardOutputDim(): outputDim = 1 + (inputDim + 2 * padding - windowDim) / stride;
// BAD_PARAM for an unset descriptor, a non-4-d input or a window larger than the padded input.
cudnnStatus_t cudnnGetPooling2dForwardOutputDim(const cudnnPoolingDescriptor_t poolingDesc,
                                                const cudnnTensorDescriptor_t inputTensorDesc, int* n, int* c, int* h,
                                                int* w) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnGetPooling2dForwardOutputDim";
  if (poolingDesc == nullptr || !poolingDesc->value.set)
    return fail(CUDNN_STATUS_BAD_PARAM, call, "poolingDesc is not set");
  if (inputTensorDesc == nullptr || !inputTensorDesc->value.set || inputTensorDesc->value.nb != 4) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "inputTensorDesc is not a set 4-d tensor");
  }
  if (n == nullptr || c == nullptr || h == nullptr || w == nullptr) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "an output pointer is NULL");
  }
  const standin_cudnn::Pooling& p = poolingDesc->value;
  const Tensor& x = inputTensorDesc->value;
  int out[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    const int padded = x.dim[2 + i] + 2 * p.pad[i];
    if (padded < p.window[i]) {
      return fail(CUDNN_STATUS_BAD_PARAM, call, "the pooling window is larger than the padded input");
    }
    out[i] = 1 + (padded - p.window[i]) / p.stride[i];
  }
  *n = x.dim[0];
  *c = x.dim[1];
  *h = out[0];
  *w = out[1];
  return CUDNN_STATUS_SUCCESS;
}

// --- activations ---------------------------------------------------------------------------------

cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* activationDesc) {
  STANDIN_COUNT_CALL();
  return create("cudnnCreateActivationDescriptor", activationDesc);
}
cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t activationDesc) {
  STANDIN_COUNT_CALL();
  return destroy(activationDesc);
}

// cudnnSetActivationDescriptor(): BAD_PARAM when mode or reluNanOpt is not a valid enumerant.
// coef: the ceiling of CLIPPED_RELU, the alpha of ELU.
cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t activationDesc, cudnnActivationMode_t mode,
                                           cudnnNanPropagation_t reluNanOpt, double coef) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnSetActivationDescriptor";
  if (activationDesc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "activationDesc is NULL");
  if (mode < CUDNN_ACTIVATION_SIGMOID || mode > CUDNN_ACTIVATION_SWISH) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "mode is not a cudnnActivationMode_t");
  }
  if (!valid_nan(reluNanOpt)) return fail(CUDNN_STATUS_BAD_PARAM, call, "reluNanOpt is invalid");
  standin_cudnn::Activation& a = activationDesc->value;
  a.set = true;
  a.mode = mode;
  a.nan = reluNanOpt;
  a.coef = coef;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetActivationDescriptor(const cudnnActivationDescriptor_t activationDesc,
                                           cudnnActivationMode_t* mode, cudnnNanPropagation_t* reluNanOpt,
                                           double* coef) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnGetActivationDescriptor";
  if (activationDesc == nullptr || !activationDesc->value.set) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "activationDesc is not set");
  }
  if (mode == nullptr || reluNanOpt == nullptr || coef == nullptr) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "an output pointer is NULL");
  }
  *mode = activationDesc->value.mode;
  *reluNanOpt = activationDesc->value.nan;
  *coef = activationDesc->value.coef;
  return CUDNN_STATUS_SUCCESS;
}

// --- op-tensor operations -----------------------------------------------------------------------

cudnnStatus_t cudnnCreateOpTensorDescriptor(cudnnOpTensorDescriptor_t* opTensorDesc) {
  STANDIN_COUNT_CALL();
  return create("cudnnCreateOpTensorDescriptor", opTensorDesc);
}
cudnnStatus_t cudnnDestroyOpTensorDescriptor(cudnnOpTensorDescriptor_t opTensorDesc) {
  STANDIN_COUNT_CALL();
  return destroy(opTensorDesc);
}

// cudnnSetOpTensorDescriptor(): BAD_PARAM when opTensorOp, opTensorCompType or opTensorNanOpt is
// not a valid enumerant. Which compute type suits which data types is cudnnOpTensor's rule, checked
// there (its NOT_SUPPORTED), not here.
cudnnStatus_t cudnnSetOpTensorDescriptor(cudnnOpTensorDescriptor_t opTensorDesc, cudnnOpTensorOp_t opTensorOp,
                                         cudnnDataType_t opTensorCompType, cudnnNanPropagation_t opTensorNanOpt) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnSetOpTensorDescriptor";
  if (opTensorDesc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "opTensorDesc is NULL");
  if (opTensorOp < CUDNN_OP_TENSOR_ADD || opTensorOp > CUDNN_OP_TENSOR_NOT) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "opTensorOp is not a cudnnOpTensorOp_t");
  }
  if (!valid_type(opTensorCompType)) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "opTensorCompType is not a cudnnDataType_t");
  }
  if (!valid_nan(opTensorNanOpt)) return fail(CUDNN_STATUS_BAD_PARAM, call, "opTensorNanOpt is invalid");
  standin_cudnn::OpTensor& o = opTensorDesc->value;
  o.set = true;
  o.op = opTensorOp;
  o.compute = opTensorCompType;
  o.nan = opTensorNanOpt;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetOpTensorDescriptor(const cudnnOpTensorDescriptor_t opTensorDesc, cudnnOpTensorOp_t* opTensorOp,
                                         cudnnDataType_t* opTensorCompType, cudnnNanPropagation_t* opTensorNanOpt) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnGetOpTensorDescriptor";
  if (opTensorDesc == nullptr || !opTensorDesc->value.set) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "opTensorDesc is not set");
  }
  if (opTensorOp == nullptr || opTensorCompType == nullptr || opTensorNanOpt == nullptr) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "an output pointer is NULL");
  }
  *opTensorOp = opTensorDesc->value.op;
  *opTensorCompType = opTensorDesc->value.compute;
  *opTensorNanOpt = opTensorDesc->value.nan;
  return CUDNN_STATUS_SUCCESS;
}

// --- batch normalization parameters --------------------------------------------------------------

// cudnnDeriveBNTensorDescriptor(): 1xCx1x1 (SPATIAL) or 1xCxHxW (PER_ACTIVATION), packed NCHW; the
// type is FLOAT for HALF data, else the data type. BAD_PARAM for an invalid mode.
cudnnStatus_t cudnnDeriveBNTensorDescriptor(cudnnTensorDescriptor_t derivedBnDesc, const cudnnTensorDescriptor_t xDesc,
                                            cudnnBatchNormMode_t mode) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnDeriveBNTensorDescriptor";
  if (derivedBnDesc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "derivedBnDesc is NULL");
  if (xDesc == nullptr || !xDesc->value.set) return fail(CUDNN_STATUS_BAD_PARAM, call, "xDesc is not set");
  if (mode != CUDNN_BATCHNORM_SPATIAL && mode != CUDNN_BATCHNORM_PER_ACTIVATION &&
      mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "mode is not a cudnnBatchNormMode_t");
  }
  const Tensor& x = xDesc->value;
  if (x.nb != 4 && x.nb != 5) return fail(CUDNN_STATUS_BAD_PARAM, call, "xDesc must be 4-d or 5-d");
  int dims[CUDNN_DIM_MAX] = {};
  std::int64_t strides[CUDNN_DIM_MAX] = {};
  for (int i = 0; i < x.nb; ++i)
    dims[i] = (i == 1 || (i >= 2 && mode == CUDNN_BATCHNORM_PER_ACTIVATION)) ? x.dim[i] : 1;
  dims[0] = 1;
  strides[x.nb - 1] = 1;
  for (int i = x.nb - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  const cudnnDataType_t type = x.type == CUDNN_DATA_HALF ? CUDNN_DATA_FLOAT : x.type;
  return set_tensor(call, derivedBnDesc, type, x.nb, dims, strides);
}

}  // extern "C"
