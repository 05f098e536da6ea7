// Private to the CPU stand-in for cuDNN 9.19 (test infrastructure, not NVIDIA's library): the
// structs behind the opaque descriptor handles, and the helpers every operation file shares.
//
// Every compute call validates its arguments synchronously, copies the descriptors it uses BY VALUE
// (the structs below are plain values) and enqueues the work through standin::enqueue: a descriptor
// re-set after the call changes neither queued nor graph-captured work.
//
// Element access: tensors are read into logical row-major order (dimension 0 outermost) as float
// (binary16 and binary32 both convert exactly), results are computed in double and rounded once,
// to nearest even, into the destination type.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/standin/device.h"

namespace standin_cudnn {

struct Tensor {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int nb = 0;
  int dim[CUDNN_DIM_MAX] = {};
  std::int64_t stride[CUDNN_DIM_MAX] = {};
};

struct Filter {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  int nb = 0;
  int dim[CUDNN_DIM_MAX] = {};  // K, C, then the spatial dimensions, whatever the format
};

struct Convolution {
  bool set = false;
  int pad[2] = {0, 0};
  int stride[2] = {1, 1};
  int dilation[2] = {1, 1};
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  int groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

struct Pooling {
  bool set = false;
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
  cudnnNanPropagation_t nan = CUDNN_PROPAGATE_NAN;
  int window[2] = {0, 0};
  int pad[2] = {0, 0};
  int stride[2] = {0, 0};
};

struct Activation {
  bool set = false;
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
  cudnnNanPropagation_t nan = CUDNN_PROPAGATE_NAN;
  double coef = 0.0;
};

struct OpTensor {
  bool set = false;
  cudnnOpTensorOp_t op = CUDNN_OP_TENSOR_ADD;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnNanPropagation_t nan = CUDNN_PROPAGATE_NAN;
};

// --- status and last error (status.cpp) ---------------------------------------------------------

// Records "call: detail" as this thread's last error (cudnnGetLastErrorString) and returns s.
cudnnStatus_t fail(cudnnStatus_t s, const char* call, const std::string& detail);

// Maps a non-zero result of standin::enqueue / standin::synchronize to a cuDNN status.
cudnnStatus_t cuda_failure(int cuda_error, const char* call);

// The stream bound to the handle (nullptr: the legacy default stream).
void* stream_of(cudnnHandle_t handle);

// Whether INFER_STANDIN_CUDNN_DECLINE (read on each call) contains `what`.
bool decline_requested(const char* what);

// --- tensors (tensor_io.cpp) --------------------------------------------------------------------

// Bytes per element of FLOAT / HALF (the only data types the stand-in computes with), else 0.
std::size_t element_size(cudnnDataType_t type);
bool computable(cudnnDataType_t type);
std::int64_t element_count(const Tensor& t);
// Bytes from the first to one past the last element the descriptor can address:
// (1 + sum_i (dim_i - 1) * stride_i) * element size.
std::size_t extent_bytes(const Tensor& t);
bool same_dims(const Tensor& a, const Tensor& b);
bool same_strides(const Tensor& a, const Tensor& b);
// 4-d layouts: fully packed NCHW / NHWC, and "HW-packed" (w stride 1, h stride W).
bool is_packed_nchw(const Tensor& t);
bool is_packed_nhwc(const Tensor& t);
bool is_hw_packed(const Tensor& t);
std::string describe(const Tensor& t);  // "HALF [1,3,28,28] strides [2352,784,28,1]"

// Element offsets (in elements) of every element, in logical row-major order.
std::vector<std::int64_t> offsets(const Tensor& t);
// Reads every element (logical row-major order) as float.
std::vector<float> load(const Tensor& t, const void* base);
// y[i] = alpha * result[i] + beta * y[i] (prior y not read when beta == 0), rounded to y's type.
void store_blend(const Tensor& t, void* base, const double* result, double alpha, double beta);

// Host scalar (alpha, beta): checked with standin::require_host, read as float (FLOAT and HALF data).
double host_scalar(const char* call, const void* p, const char* arg);

// Validates a tensor descriptor handle given to a compute call: non-null, set, FLOAT or HALF.
cudnnStatus_t check_tensor(const char* call, cudnnTensorDescriptor_t desc, const char* arg);

}  // namespace standin_cudnn

// The opaque structs the cuDNN headers declare.
struct cudnnContext {
  void* stream = nullptr;
};
struct cudnnTensorStruct {
  standin_cudnn::Tensor value;
};
struct cudnnFilterStruct {
  standin_cudnn::Filter value;
};
struct cudnnConvolutionStruct {
  standin_cudnn::Convolution value;
};
struct cudnnPoolingStruct {
  standin_cudnn::Pooling value;
};
struct cudnnActivationStruct {
  standin_cudnn::Activation value;
};
struct cudnnOpTensorStruct {
  standin_cudnn::OpTensor value;
};

// --- convolution internals shared by convolution.cpp and conv_algorithms.cpp --------------------

namespace standin_cudnn {

// Everything a forward convolution needs, copied by value at call time.
struct ConvProblem {
  Tensor x, y;
  Filter w;
  Convolution conv;
  int out_h = 0, out_w = 0;
};

// Checks descriptors and data types of a forward convolution (cudnnConvolutionForward's
// BAD_PARAM / NOT_SUPPORTED rules that do not depend on the algorithm); fills p.
cudnnStatus_t make_problem(const char* call, cudnnTensorDescriptor_t xDesc, cudnnFilterDescriptor_t wDesc,
                           cudnnConvolutionDescriptor_t convDesc, cudnnTensorDescriptor_t yDesc, ConvProblem& p);

// Whether `algo` supports the problem (the stand-in's reading of "Supported algorithms for
// cudnnConvolutionForward()"); on NOT_SUPPORTED `why` says which rule.
cudnnStatus_t algo_supports(const ConvProblem& p, cudnnConvolutionFwdAlgo_t algo, std::string& why);

// Bytes of workspace `algo` needs for the problem (call only when supported).
std::size_t workspace_bytes(const ConvProblem& p, cudnnConvolutionFwdAlgo_t algo);

// The operands of one enqueued convolution.
struct ConvOperands {
  const void* x = nullptr;
  const void* w = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;  // the algorithm's requirement (scribbled over)
};

// Computes conv(x, w) for the problem into `out` (logical NCHW order of y, double).
void compute_convolution(const ConvProblem& p, const ConvOperands& ops, std::vector<double>& out);

// The plain forward convolution after validation: enqueues y = alpha*conv + beta*y.
cudnnStatus_t enqueue_convolution(const char* call, cudnnHandle_t handle, const ConvProblem& p,
                                  cudnnConvolutionFwdAlgo_t algo, const void* x, const void* w, void* workSpace,
                                  std::size_t workSpaceSizeInBytes, double alpha, double beta, void* y);

}  // namespace standin_cudnn
