// The typed device-memory views of the cuDNN backend (backends/cudnn/buffers.h, calls.h), checked at
// compile time: an output where an input belongs, or the reverse, does not compile, and neither
// view can be made from a raw pointer or from the other. Each group of negative checks has a
// positive one with the right types beside it, so that none passes because the wrapper is not
// callable at all. No GPU needed: nothing here calls the device (decltype only, and empty buffers,
// which allocate nothing).
#include <gtest/gtest.h>

#include <stdexcept>
#include <type_traits>

#include "backends/cudnn/calls.h"

namespace infer::cudnn {
namespace {

// --- the views: no conversion, no construction from raw pointers --------------------------------
static_assert(!std::is_convertible_v<DeviceOut, DeviceIn>, "an output view must not pass for an input");
static_assert(!std::is_convertible_v<DeviceIn, DeviceOut>, "an input view must not pass for an output");
static_assert(!std::is_constructible_v<DeviceIn, DeviceOut>);
static_assert(!std::is_constructible_v<DeviceOut, DeviceIn>);
static_assert(!std::is_constructible_v<DeviceIn, const void*, std::size_t>, "only the owners make views");
static_assert(!std::is_constructible_v<DeviceOut, void*, std::size_t>, "only the owners make views");
static_assert(!std::is_convertible_v<void*, DeviceOut>);
static_assert(!std::is_convertible_v<const void*, DeviceIn>);
static_assert(!std::is_convertible_v<TensorOut, TensorIn>);
static_assert(!std::is_convertible_v<TensorIn, TensorOut>);
static_assert(!std::is_constructible_v<TensorIn, cudnnTensorDescriptor_t, DeviceOut>);
static_assert(!std::is_constructible_v<TensorOut, cudnnTensorDescriptor_t, DeviceIn>);
static_assert(!std::is_constructible_v<TensorIn, cudnnTensorDescriptor_t, const void*>);
static_assert(!std::is_constructible_v<FilterIn, cudnnFilterDescriptor_t, DeviceOut>);
static_assert(std::is_constructible_v<TensorIn, cudnnTensorDescriptor_t, DeviceIn>);
static_assert(std::is_constructible_v<TensorOut, cudnnTensorDescriptor_t, DeviceOut>);
static_assert(std::is_constructible_v<FilterIn, cudnnFilterDescriptor_t, DeviceIn>);
// Explicit construction only: a brace list does not silently become a tensor view.
static_assert(!std::is_convertible_v<DeviceIn, TensorIn>);

// --- the owners hand out only what they should ---------------------------------------------------
template <typename T, typename = void>
struct has_out : std::false_type {};
template <typename T>
struct has_out<T, std::void_t<decltype(std::declval<T&>().out())>> : std::true_type {};
template <typename T, typename = void>
struct has_in : std::false_type {};
template <typename T>
struct has_in<T, std::void_t<decltype(std::declval<T&>().in())>> : std::true_type {};

static_assert(has_in<ConstantBuffer>::value && !has_out<ConstantBuffer>::value,
              "a constant buffer (weights, zero_z_, zero_bias_) hands out input views only");
static_assert(has_in<DeviceBuffer>::value && has_out<DeviceBuffer>::value);
static_assert(has_in<const DeviceBuffer>::value && !has_out<const DeviceBuffer>::value,
              "a const owner hands out input views only");
static_assert(std::is_same_v<decltype(std::declval<DeviceBuffer&>().in()), DeviceIn>);
static_assert(std::is_same_v<decltype(std::declval<DeviceBuffer&>().out()), DeviceOut>);
static_assert(!std::is_copy_constructible_v<DeviceBuffer> && std::is_nothrow_move_constructible_v<DeviceBuffer>);
static_assert(!std::is_copy_constructible_v<ConstantBuffer>);

// --- the wrappers --------------------------------------------------------------------------------
using Handle = cudnnHandle_t;
using Conv = cudnnConvolutionDescriptor_t;
using Algo = cudnnConvolutionFwdAlgo_t;
using Act = cudnnActivationDescriptor_t;

// The fused call: cuDNN's order ..., workspace, z, bias, activation, y. The bug this guards against
// gave the output as z and the zero buffer as y.
using Fused = decltype(&convolution_bias_activation_forward);
static_assert(std::is_invocable_v<Fused, Handle, TensorIn, FilterIn, Conv, Algo, DeviceOut, TensorIn, bool, TensorIn,
                                  Act, TensorOut>,
              "the right order compiles");
static_assert(!std::is_invocable_v<Fused, Handle, TensorIn, FilterIn, Conv, Algo, DeviceOut, TensorOut, bool, TensorIn,
                                   Act, TensorIn>,
              "z and y swapped (an output as z, an input as y) must not compile");
static_assert(!std::is_invocable_v<Fused, Handle, TensorIn, FilterIn, Conv, Algo, DeviceOut, TensorOut, bool, TensorIn,
                                   Act, TensorOut>,
              "an output as z must not compile");
static_assert(!std::is_invocable_v<Fused, Handle, TensorIn, FilterIn, Conv, Algo, DeviceOut, TensorIn, bool, TensorIn,
                                   Act, TensorIn>,
              "an input (the zero buffer) as y must not compile");
static_assert(!std::is_invocable_v<Fused, Handle, TensorOut, FilterIn, Conv, Algo, DeviceOut, TensorIn, bool, TensorIn,
                                   Act, TensorOut>,
              "an output as x must not compile");
static_assert(!std::is_invocable_v<Fused, Handle, TensorIn, FilterIn, Conv, Algo, DeviceIn, TensorIn, bool, TensorIn,
                                   Act, TensorOut>,
              "a read-only workspace must not compile");
static_assert(!std::is_invocable_v<Fused, Handle, TensorIn, FilterIn, Conv, Algo, DeviceOut, TensorIn, bool, TensorOut,
                                   Act, TensorOut>,
              "an output as bias must not compile");

using Plain = decltype(&convolution_forward);
static_assert(std::is_invocable_v<Plain, Handle, TensorIn, FilterIn, Conv, Algo, DeviceOut, TensorOut>);
static_assert(!std::is_invocable_v<Plain, Handle, TensorOut, FilterIn, Conv, Algo, DeviceOut, TensorIn>);
static_assert(!std::is_invocable_v<Plain, Handle, TensorIn, FilterIn, Conv, Algo, DeviceOut, TensorIn>);

using Add = decltype(&add_tensor);
static_assert(std::is_invocable_v<Add, Handle, TensorIn, TensorOut>);
static_assert(!std::is_invocable_v<Add, Handle, TensorOut, TensorIn>);
static_assert(!std::is_invocable_v<Add, Handle, TensorIn, TensorIn>);

using Activation = decltype(&activation_forward);
static_assert(std::is_invocable_v<Activation, Handle, Act, TensorIn, TensorOut>);
static_assert(!std::is_invocable_v<Activation, Handle, Act, TensorOut, TensorIn>);

using BatchNorm = decltype(&batch_norm_forward_inference);
static_assert(std::is_invocable_v<BatchNorm, Handle, TensorIn, TensorOut, const BatchNormParams&, double>);
static_assert(!std::is_invocable_v<BatchNorm, Handle, TensorOut, TensorIn, const BatchNormParams&, double>);
static_assert(
    !std::is_constructible_v<BatchNormParams, cudnnTensorDescriptor_t, DeviceOut, DeviceIn, DeviceIn, DeviceIn>,
    "batch-norm parameters are read only");

using Pool = decltype(&pooling_forward);
static_assert(std::is_invocable_v<Pool, Handle, cudnnPoolingDescriptor_t, TensorIn, TensorOut>);
static_assert(!std::is_invocable_v<Pool, Handle, cudnnPoolingDescriptor_t, TensorOut, TensorIn>);

using Softmax = decltype(&softmax_forward);
static_assert(std::is_invocable_v<Softmax, Handle, cudnnSoftmaxAlgorithm_t, cudnnSoftmaxMode_t, TensorIn, TensorOut>);
static_assert(!std::is_invocable_v<Softmax, Handle, cudnnSoftmaxAlgorithm_t, cudnnSoftmaxMode_t, TensorOut, TensorIn>);

using Transform = decltype(&transform_tensor);
static_assert(std::is_invocable_v<Transform, Handle, TensorIn, TensorOut>);
static_assert(!std::is_invocable_v<Transform, Handle, TensorOut, TensorIn>);

using Find = decltype(&find_convolution_forward_algorithms);
using Perf = std::vector<cudnnConvolutionFwdAlgoPerf_t>&;
static_assert(std::is_invocable_v<Find, Handle, TensorIn, FilterIn, Conv, TensorOut, DeviceOut, Perf>);
static_assert(!std::is_invocable_v<Find, Handle, TensorOut, FilterIn, Conv, TensorIn, DeviceOut, Perf>);
static_assert(!std::is_invocable_v<Find, Handle, TensorIn, FilterIn, Conv, TensorIn, DeviceOut, Perf>);

using ToDevice = decltype(&copy_to_device);
using ToHost = decltype(&copy_to_host);
static_assert(std::is_invocable_v<ToDevice, DeviceOut, const float*, std::size_t, cudaStream_t>);
static_assert(!std::is_invocable_v<ToDevice, DeviceIn, const float*, std::size_t, cudaStream_t>,
              "a copy into read-only memory must not compile");
static_assert(std::is_invocable_v<ToHost, float*, DeviceIn, std::size_t, cudaStream_t>);
static_assert(!std::is_invocable_v<ToHost, DeviceIn, float*, std::size_t, cudaStream_t>,
              "host and device swapped must not compile");
static_assert(!std::is_invocable_v<ToHost, float*, void*, std::size_t, cudaStream_t>,
              "a raw device pointer must not compile");
static_assert(std::is_invocable_v<decltype(&fill_zero), DeviceOut, cudaStream_t>);
static_assert(!std::is_invocable_v<decltype(&fill_zero), DeviceIn, cudaStream_t>);

using K = const Kernels&;
using ToHalf = decltype(&convert_float_nchw_to_half_nhwc);
static_assert(std::is_invocable_v<ToHalf, K, DeviceIn, DeviceOut, int, int, int, int, cudaStream_t>);
static_assert(!std::is_invocable_v<ToHalf, K, DeviceOut, DeviceIn, int, int, int, int, cudaStream_t>);
using ToFloat = decltype(&convert_half_nhwc_to_float_nchw);
static_assert(std::is_invocable_v<ToFloat, K, DeviceIn, DeviceOut, int, int, int, int, cudaStream_t>);
static_assert(!std::is_invocable_v<ToFloat, K, DeviceOut, DeviceIn, int, int, int, int, cudaStream_t>);
using Pointwise = decltype(&pointwise);
static_assert(
    std::is_invocable_v<Pointwise, K, int, float, float, DeviceIn, DeviceOut, std::size_t, bool, cudaStream_t>);
static_assert(
    !std::is_invocable_v<Pointwise, K, int, float, float, DeviceOut, DeviceIn, std::size_t, bool, cudaStream_t>);
using TopK = decltype(&select_top_k);
static_assert(std::is_invocable_v<TopK, K, DeviceIn, int, int, int, DeviceOut, DeviceOut, cudaStream_t>);
static_assert(!std::is_invocable_v<TopK, K, DeviceOut, int, int, int, DeviceIn, DeviceOut, cudaStream_t>);

// The run-time half: views carry their owner's size, and a sub-view larger than its view throws.
// Empty owners allocate nothing, so this runs without a GPU.
TEST(CudnnViews, ViewsCarryTheirOwnersSizeAndRefuseToGrow) {
  DeviceBuffer empty;
  EXPECT_EQ(empty.in().get(), nullptr);
  EXPECT_EQ(empty.in().bytes(), 0u);
  EXPECT_EQ(empty.out().bytes(), 0u);
  EXPECT_EQ(empty.out().first(0).bytes(), 0u);
  EXPECT_THROW(empty.out().first(1), std::logic_error);
  const ConstantBuffer constant;
  EXPECT_EQ(constant.in().bytes(), 0u);
  EXPECT_EQ(constant.bytes(), 0u);
}

}  // namespace
}  // namespace infer::cudnn
