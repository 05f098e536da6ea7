// The stand-in's cuDNN against cuDNN's documented contract, with hand-computed goldens (no code of
// the project's CPU backend): convolution values in both modes and all layouts, alpha/beta
// blending, the fused call, operand rounding (binary16 and TF32), pooling, softmax, batch norm,
// op-tensor arithmetic with broadcasting, statuses, the copy-descriptors-at-call-time rule and the
// pointer checks that end the process.
// Links both stand-in libraries directly (BUILD_RPATH to their folder), not NVIDIA's.
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tests/standin/half.h"

namespace {

#define CUDNN_OK(call) ASSERT_EQ((call), CUDNN_STATUS_SUCCESS) << #call

// Device memory holding `bytes`, freed at scope end.
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(std::size_t bytes) { EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

DeviceBuffer* upload(const std::vector<float>& v) {
  auto* b = new DeviceBuffer(v.size() * sizeof(float));
  EXPECT_EQ(cudaMemcpy(b->p, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  return b;
}

std::vector<float> download(const void* p, std::size_t count) {
  std::vector<float> v(count);
  EXPECT_EQ(cudaMemcpy(v.data(), p, count * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

struct Fixture : ::testing::Test {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t xd = nullptr, yd = nullptr, zd = nullptr, bd = nullptr;
  cudnnFilterDescriptor_t wd = nullptr;
  cudnnConvolutionDescriptor_t cd = nullptr;
  cudnnActivationDescriptor_t ad = nullptr;
  cudnnPoolingDescriptor_t pd = nullptr;
  void SetUp() override {
    ASSERT_EQ(cudnnCreate(&handle), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateTensorDescriptor(&xd), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateTensorDescriptor(&yd), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateTensorDescriptor(&zd), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateTensorDescriptor(&bd), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateFilterDescriptor(&wd), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateConvolutionDescriptor(&cd), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateActivationDescriptor(&ad), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreatePoolingDescriptor(&pd), CUDNN_STATUS_SUCCESS);
  }
  void TearDown() override {
    cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyTensorDescriptor(zd);
    cudnnDestroyTensorDescriptor(bd);
    cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyConvolutionDescriptor(cd);
    cudnnDestroyActivationDescriptor(ad);
    cudnnDestroyPoolingDescriptor(pd);
    cudnnDestroy(handle);
  }
  // x = 1x1x4x4 holding 1..16 row by row, w = 1x1x3x3 [1 2 0; 0 1 0; 0 0 3], FMA math.
  void set_small_conv(int pad, cudnnConvolutionMode_t mode) {
    ASSERT_EQ(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 4, 4), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 1, 1, 3, 3), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetConvolution2dDescriptor(cd, pad, pad, 1, 1, 1, 1, mode, CUDNN_DATA_FLOAT), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH), CUDNN_STATUS_SUCCESS);
    int n = 0, c = 0, h = 0, w = 0;
    ASSERT_EQ(cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &n, &c, &h, &w), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w), CUDNN_STATUS_SUCCESS);
  }
  static std::vector<float> small_x() {
    std::vector<float> v(16);
    for (int i = 0; i < 16; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i + 1);
    return v;
  }
  static std::vector<float> small_w() { return {1, 2, 0, 0, 1, 0, 0, 0, 3}; }
};

const float kOne = 1.0f, kZero = 0.0f;

using StandinCudnn = Fixture;

TEST_F(StandinCudnn, NamesItselfAndReportsVersions) {
  void* lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr) << "the test links the stand-in's libcudnn.so.9";
  using Identity = const char* (*)();
  auto identity = reinterpret_cast<Identity>(dlsym(lib, "infer_standin_identity"));
  ASSERT_NE(identity, nullptr);
  EXPECT_NE(std::strstr(identity(), "stand-in for cuDNN"), nullptr) << identity();
  dlclose(lib);
  EXPECT_EQ(cudnnGetVersion(), static_cast<size_t>(CUDNN_VERSION));
  EXPECT_EQ(cudnnGetCudartVersion(), 13000u);
  int major = 0;
  EXPECT_EQ(cudnnGetProperty(MAJOR_VERSION, &major), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(major, 9);
  EXPECT_STREQ(cudnnGetErrorString(CUDNN_STATUS_NOT_SUPPORTED), "CUDNN_STATUS_NOT_SUPPORTED");
}

// Each library counts the calls to its entry points, by name and in all (call_count.h), whatever
// they return; the other library's calls are not counted here.
TEST_F(StandinCudnn, CountsTheCallsToEachEntryPoint) {
  using Calls = std::uint64_t (*)(const char*);
  void* cudnn = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_NOLOAD);
  void* cudart = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(cudnn, nullptr);
  ASSERT_NE(cudart, nullptr);
  auto cudnn_calls = reinterpret_cast<Calls>(dlsym(cudnn, "infer_standin_cudnn_calls"));
  auto cudart_calls = reinterpret_cast<Calls>(dlsym(cudart, "infer_standin_cudart_calls"));
  ASSERT_NE(cudnn_calls, nullptr);
  ASSERT_NE(cudart_calls, nullptr);
  const std::uint64_t total = cudnn_calls(nullptr), sets = cudnn_calls("cudnnSetTensor4dDescriptor");
  const std::uint64_t versions = cudnn_calls("cudnnGetVersion"), runtime = cudart_calls(nullptr);
  EXPECT_EQ(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 4, 4), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 0, 4, 4), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnGetVersion(), static_cast<size_t>(CUDNN_VERSION));
  EXPECT_EQ(cudnn_calls("cudnnSetTensor4dDescriptor") - sets, 2u);
  EXPECT_EQ(cudnn_calls("cudnnGetVersion") - versions, 1u);
  EXPECT_EQ(cudnn_calls("cudnnNoSuchCall"), 0u);
  EXPECT_EQ(cudnn_calls(nullptr) - total, 3u);
  EXPECT_EQ(cudart_calls(nullptr), runtime);
  int devices = 0;
  EXPECT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  EXPECT_EQ(cudart_calls(nullptr) - runtime, 1u);
  EXPECT_EQ(cudnn_calls(nullptr) - total, 3u);
  dlclose(cudart);
  dlclose(cudnn);
}

TEST_F(StandinCudnn, LastErrorStringIsReadOnce) {
  EXPECT_EQ(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 0, 4, 4), CUDNN_STATUS_BAD_PARAM);
  char msg[256] = "unchanged";
  cudnnGetLastErrorString(msg, sizeof msg);
  EXPECT_NE(std::strstr(msg, "cudnnSetTensor4dDescriptor"), nullptr) << msg;
  cudnnGetLastErrorString(msg, sizeof msg);
  EXPECT_STREQ(msg, "") << "reading the last error clears it";
}

// y(i,j) = x(i,j) + 2 x(i,j+1) + x(i+1,j+1) + 3 x(i+2,j+2) with x(i,j) = 4i + j + 1
//        = 28 i + 7 j + 44: [44 51; 72 79].
TEST_F(StandinCudnn, CrossCorrelation3x3MatchesHandComputedValues) {
  set_small_conv(0, CUDNN_CROSS_CORRELATION);
  std::unique_ptr<DeviceBuffer> x(upload(small_x())), w(upload(small_w())), y(upload({-1, -1, -1, -1}));
  CUDNN_OK(cudnnConvolutionForward(handle, &kOne, xd, x->p, wd, w->p, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                   nullptr, 0, &kZero, yd, y->p));
  EXPECT_EQ(download(y->p, 4), (std::vector<float>{44, 51, 72, 79}));
}

// Padding 1: 4x4 output. y(0,0) sees x(0,0) (weight 1 at kernel (1,1)) and x(1,1) = 6 (weight 3
// at kernel (2,2)): 1 + 18 = 19. y(3,3) starts at x(2,2); its (2,2) tap falls in the padding:
// x(2,2) + 2 x(2,3) + x(3,3) = 11 + 24 + 16 = 51.
TEST_F(StandinCudnn, PaddingContributesZeros) {
  set_small_conv(1, CUDNN_CROSS_CORRELATION);
  std::unique_ptr<DeviceBuffer> x(upload(small_x())), w(upload(small_w())), y(upload(std::vector<float>(16, -1)));
  CUDNN_OK(cudnnConvolutionForward(handle, &kOne, xd, x->p, wd, w->p, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                   nullptr, 0, &kZero, yd, y->p));
  const std::vector<float> out = download(y->p, 16);
  EXPECT_EQ(out[0], 19.0f);
  EXPECT_EQ(out[15], 51.0f);
  EXPECT_EQ(out[5], 44.0f) << "y(1,1) with padding 1 is y(0,0) without";
}

// CUDNN_CONVOLUTION flips the kernel: [3 0 0; 0 1 0; 0 2 1]; y(0,0) = 3*1 + 6 + 2*10 + 11 = 40.
TEST_F(StandinCudnn, ConvolutionModeFlipsTheKernel) {
  set_small_conv(0, CUDNN_CONVOLUTION);
  std::unique_ptr<DeviceBuffer> x(upload(small_x())), w(upload(small_w())), y(upload({-1, -1, -1, -1}));
  CUDNN_OK(cudnnConvolutionForward(handle, &kOne, xd, x->p, wd, w->p, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                   nullptr, 0, &kZero, yd, y->p));
  EXPECT_EQ(download(y->p, 1)[0], 40.0f);
}

// y = 2 * conv + 0.5 * 10; with beta = 0 a NaN already in y is not read.
TEST_F(StandinCudnn, AlphaBetaBlendAndBetaZeroIgnoresNan) {
  set_small_conv(0, CUDNN_CROSS_CORRELATION);
  std::unique_ptr<DeviceBuffer> x(upload(small_x())), w(upload(small_w())), y(upload({10, 10, 10, 10}));
  const float two = 2.0f, half = 0.5f;
  CUDNN_OK(cudnnConvolutionForward(handle, &two, xd, x->p, wd, w->p, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                   nullptr, 0, &half, yd, y->p));
  EXPECT_EQ(download(y->p, 4), (std::vector<float>{93, 107, 149, 163}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::unique_ptr<DeviceBuffer> poisoned(upload({nan, nan, nan, nan}));
  CUDNN_OK(cudnnConvolutionForward(handle, &kOne, xd, x->p, wd, w->p, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                   nullptr, 0, &kZero, yd, poisoned->p));
  EXPECT_EQ(download(poisoned->p, 4), (std::vector<float>{44, 51, 72, 79}));
}

// x 2x3x5x4 and w 4x3x3x3 (stride 2 on w, padding 1): the same values through packed NCHW, packed
// NHWC and padded strides (h stride W + 3).
TEST_F(StandinCudnn, LayoutsAndStridesGiveIdenticalValues) {
  const int n = 2, c = 3, h = 5, wd_ = 4, k = 4;
  auto value = [](int i) { return static_cast<float>((i * 37 % 23) - 11) / 8.0f; };
  std::vector<float> nchw(static_cast<std::size_t>(n * c * h * wd_)), nhwc(nchw.size());
  const int hs = wd_ + 3;  // padded row stride
  std::vector<float> strided(static_cast<std::size_t>(n * c * h * hs), std::numeric_limits<float>::quiet_NaN());
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < c; ++b)
      for (int i = 0; i < h; ++i)
        for (int j = 0; j < wd_; ++j) {
          const float v = value(((a * c + b) * h + i) * wd_ + j);
          nchw[static_cast<std::size_t>(((a * c + b) * h + i) * wd_ + j)] = v;
          nhwc[static_cast<std::size_t>(((a * h + i) * wd_ + j) * c + b)] = v;
          strided[static_cast<std::size_t>(((a * c + b) * h + i) * hs + j)] = v;
        }
  std::vector<float> wv(static_cast<std::size_t>(k * c * 9));
  for (std::size_t i = 0; i < wv.size(); ++i) wv[i] = value(static_cast<int>(i) + 5);
  CUDNN_OK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, 3, 3));
  CUDNN_OK(cudnnSetConvolution2dDescriptor(cd, 1, 1, 2, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CUDNN_OK(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH));
  std::unique_ptr<DeviceBuffer> w(upload(wv));
  std::vector<std::vector<float>> results;
  for (int layout = 0; layout < 3; ++layout) {
    if (layout == 0) {
      CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, wd_));
    } else if (layout == 1) {
      CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, c, h, wd_));
    } else {
      CUDNN_OK(cudnnSetTensor4dDescriptorEx(xd, CUDNN_DATA_FLOAT, n, c, h, wd_, c * h * hs, h * hs, hs, 1));
    }
    int on = 0, oc = 0, oh = 0, ow = 0;
    CUDNN_OK(cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &on, &oc, &oh, &ow));
    ASSERT_EQ(oh, 3);  // 1 + (5 + 2 - 3) / 2
    ASSERT_EQ(ow, 4);
    CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on, oc, oh, ow));
    std::unique_ptr<DeviceBuffer> x(upload(layout == 0 ? nchw : layout == 1 ? nhwc : strided));
    std::unique_ptr<DeviceBuffer> y(upload(std::vector<float>(static_cast<std::size_t>(on * oc * oh * ow), -7.0f)));
    CUDNN_OK(cudnnConvolutionForward(handle, &kOne, xd, x->p, wd, w->p, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                     nullptr, 0, &kZero, yd, y->p));
    results.push_back(download(y->p, static_cast<std::size_t>(on * oc * oh * ow)));
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
  for (float v : results[0]) EXPECT_TRUE(std::isfinite(v));
}

// y = relu(alpha1 * conv + alpha2 * z + bias) = relu([44 51 72 79] + 2 [1 2 3 4] - 50) = [0 5 28 37].
TEST_F(StandinCudnn, FusedCallAddsZAndBiasThenRelu) {
  set_small_conv(0, CUDNN_CROSS_CORRELATION);
  CUDNN_OK(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 1));
  CUDNN_OK(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  std::unique_ptr<DeviceBuffer> x(upload(small_x())), w(upload(small_w())), z(upload({1, 2, 3, 4})),
      bias(upload({-50})), y(upload({-1, -1, -1, -1}));
  size_t ws_bytes = 0;
  const auto algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  CUDNN_OK(cudnnGetConvolutionForwardWorkspaceSize(handle, xd, wd, cd, yd, algo, &ws_bytes));
  DeviceBuffer ws(ws_bytes);
  const float two = 2.0f;
  CUDNN_OK(cudnnConvolutionBiasActivationForward(handle, &kOne, xd, x->p, wd, w->p, cd, algo, ws.p, ws_bytes, &two, yd,
                                                 z->p, bd, bias->p, ad, yd, y->p));
  EXPECT_EQ(download(y->p, 4), (std::vector<float>{0, 5, 28, 37}));
  // z aliasing y (in place): relu(conv + 1 * y_prior - 50) = relu([-6, 6, 50, 66]).
  const float one_alpha2 = 1.0f;
  CUDNN_OK(cudnnConvolutionBiasActivationForward(handle, &kOne, xd, x->p, wd, w->p, cd, algo, ws.p, ws_bytes,
                                                 &one_alpha2, yd, y->p, bd, bias->p, ad, yd, y->p));
  EXPECT_EQ(download(y->p, 4), (std::vector<float>{0, 6, 50, 66}));
}

// INFER_STANDIN_CUDNN_DECLINE=fused-call: the fused call declines, leaving y untouched; the
// separate convolution still runs.
TEST_F(StandinCudnn, FaultInjectionDeclinesTheFusedCall) {
  set_small_conv(0, CUDNN_CROSS_CORRELATION);
  CUDNN_OK(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 1));
  CUDNN_OK(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  std::unique_ptr<DeviceBuffer> x(upload(small_x())), w(upload(small_w())), z(upload({1, 2, 3, 4})),
      bias(upload({-50})), y(upload({-1, -1, -1, -1}));
  DeviceBuffer ws(1 << 16);
  const auto algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  ASSERT_EQ(setenv("INFER_STANDIN_CUDNN_DECLINE", "fused-call", 1), 0);
  EXPECT_EQ(cudnnConvolutionBiasActivationForward(handle, &kOne, xd, x->p, wd, w->p, cd, algo, ws.p, 1 << 16, &kOne, yd,
                                                  z->p, bd, bias->p, ad, yd, y->p),
            CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(download(y->p, 4), (std::vector<float>{-1, -1, -1, -1}));
  CUDNN_OK(cudnnConvolutionForward(handle, &kOne, xd, x->p, wd, w->p, cd, algo, ws.p, 1 << 16, &kZero, yd, y->p));
  EXPECT_EQ(download(y->p, 4), (std::vector<float>{44, 51, 72, 79}));
  ASSERT_EQ(unsetenv("INFER_STANDIN_CUDNN_DECLINE"), 0);
  CUDNN_OK(cudnnConvolutionBiasActivationForward(handle, &kOne, xd, x->p, wd, w->p, cd, algo, ws.p, 1 << 16, &kOne, yd,
                                                 z->p, bd, bias->p, ad, yd, y->p));
  EXPECT_EQ(download(y->p, 4), (std::vector<float>{0, 3, 25, 33}));
}

TEST_F(StandinCudnn, IdentityActivationOnlyWithImplicitPrecompGemm) {
  set_small_conv(0, CUDNN_CROSS_CORRELATION);
  CUDNN_OK(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 1));
  CUDNN_OK(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_IDENTITY, CUDNN_PROPAGATE_NAN, 0.0));
  std::unique_ptr<DeviceBuffer> x(upload(small_x())), w(upload(small_w())), z(upload({0, 0, 0, 0})),
      bias(upload({-50})), y(upload({-1, -1, -1, -1}));
  DeviceBuffer ws(1 << 16);
  EXPECT_EQ(cudnnConvolutionBiasActivationForward(handle, &kOne, xd, x->p, wd, w->p, cd,
                                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, ws.p, 1 << 16, &kZero, yd,
                                                  z->p, bd, bias->p, ad, yd, y->p),
            CUDNN_STATUS_NOT_SUPPORTED);
  CUDNN_OK(cudnnConvolutionBiasActivationForward(handle, &kOne, xd, x->p, wd, w->p, cd,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, ws.p, 1 << 16,
                                                 &kZero, yd, z->p, bd, bias->p, ad, yd, y->p));
  EXPECT_EQ(download(y->p, 4), (std::vector<float>{-6, 1, 22, 29}));
  EXPECT_EQ(cudnnActivationForward(handle, ad, &kOne, yd, y->p, &kZero, yd, y->p), CUDNN_STATUS_BAD_PARAM)
      << "IDENTITY does not work with cudnnActivationForward";
}

TEST(StandinHalf, RoundsToNearestEven) {
  using standin::half_from_float;
  EXPECT_EQ(half_from_float(1.0f + std::ldexp(1.0f, -11)), 0x3C00) << "tie between 1 and 1+2^-10 goes to even 1";
  EXPECT_EQ(half_from_float(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02) << "tie goes to even 1+2^-9";
  EXPECT_EQ(half_from_float(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  EXPECT_EQ(half_from_float(65504.0f), 0x7BFF);
  EXPECT_EQ(half_from_float(65519.0f), 0x7BFF);
  EXPECT_EQ(half_from_float(65520.0f), 0x7C00) << "halfway to 2^16 rounds to infinity";
  EXPECT_EQ(half_from_float(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(half_from_float(std::ldexp(1.0f, -25)), 0x0000) << "tie between 0 and 2^-24 goes to 0";
  EXPECT_EQ(half_from_float(std::ldexp(3.0f, -26)), 0x0001);
  EXPECT_EQ(half_from_float(std::ldexp(1023.0f, -24)), 0x03FF);
  EXPECT_EQ(half_from_float(std::ldexp(2047.0f, -25)), 0x0400) << "rounds up into the normals";
  EXPECT_EQ(half_from_float(-0.0f), 0x8000);
  EXPECT_EQ(half_from_float(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_TRUE(std::isnan(standin::half_to_float(half_from_float(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(standin::half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(standin::half_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(standin::half_to_float(0xC000), -2.0f);
}

// A HALF 1x1 convolution over 2 channels sums 1 + e exactly, then rounds the result to half:
// e = 2^-11 -> 1 (tie to even), e = 3 * 2^-11 -> 1 + 2^-9 (tie to even).
TEST_F(StandinCudnn, HalfResultsRoundToNearestEven) {
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 2, 2, 1, 1));
  CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 2, 1, 1, 1));
  CUDNN_OK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_HALF, CUDNN_TENSOR_NCHW, 1, 2, 1, 1));
  CUDNN_OK(cudnnSetConvolution2dDescriptor(cd, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  const std::uint16_t xs[4] = {standin::half_from_float(1.0f), standin::half_from_float(std::ldexp(1.0f, -11)),
                               standin::half_from_float(1.0f), standin::half_from_float(std::ldexp(3.0f, -11))};
  const std::uint16_t ws[2] = {standin::half_from_float(1.0f), standin::half_from_float(1.0f)};
  DeviceBuffer x(sizeof xs), w(sizeof ws), y(4);
  ASSERT_EQ(cudaMemcpy(x.p, xs, sizeof xs, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(w.p, ws, sizeof ws, cudaMemcpyHostToDevice), cudaSuccess);
  CUDNN_OK(cudnnConvolutionForward(handle, &kOne, xd, x.p, wd, w.p, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                   nullptr, 0, &kZero, yd, y.p));
  std::uint16_t out[2] = {};
  ASSERT_EQ(cudaMemcpy(out, y.p, sizeof out, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(out[0], 0x3C00);
  EXPECT_EQ(out[1], 0x3C02);
}

// 1 + 2^-12 survives FMA math; TF32 keeps 10 fraction bits, so TENSOR_OP math sees 1. And
// 1 + 2^-11 + 2^-23 is above the halfway point: TF32 rounds it up to 1 + 2^-10.
TEST_F(StandinCudnn, Tf32RoundingOnlyWithTensorOpMath) {
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 1, 1, 1));
  CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 1, 1, 1));
  CUDNN_OK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 1, 1, 1, 1));
  CUDNN_OK(cudnnSetConvolution2dDescriptor(cd, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  const float a = 1.0f + std::ldexp(1.0f, -12), b = 1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -23);
  std::unique_ptr<DeviceBuffer> x(upload({a, b})), w(upload({1.0f})), y(upload({0, 0}));
  CUDNN_OK(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH));
  CUDNN_OK(cudnnConvolutionForward(handle, &kOne, xd, x->p, wd, w->p, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                   nullptr, 0, &kZero, yd, y->p));
  EXPECT_EQ(download(y->p, 2), (std::vector<float>{a, b}));
  CUDNN_OK(cudnnSetConvolutionMathType(cd, CUDNN_TENSOR_OP_MATH));
  CUDNN_OK(cudnnConvolutionForward(handle, &kOne, xd, x->p, wd, w->p, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                   nullptr, 0, &kZero, yd, y->p));
  EXPECT_EQ(download(y->p, 2), (std::vector<float>{1.0f, 1.0f + std::ldexp(1.0f, -10)}));
}

// x = -(1..9) in 3x3, window 2x2, padding 1, stride 2 -> 2x2 windows over {x00}, {x01,x02},
// {x10,x20}, {x11,x12,x21,x22}. Max: padded zeros never win: [-1 -2 -4 -5]. Averages of 1..9:
// include padding /4: [0.25 1.25 2.75 7]; exclude: [1 2.5 5.5 7].
TEST_F(StandinCudnn, PoolingWithPadding) {
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 3, 3));
  std::vector<float> pos(9), neg(9);
  for (int i = 0; i < 9; ++i) {
    pos[static_cast<std::size_t>(i)] = static_cast<float>(i + 1);
    neg[static_cast<std::size_t>(i)] = -static_cast<float>(i + 1);
  }
  std::unique_ptr<DeviceBuffer> xp(upload(pos)), xn(upload(neg)), y(upload({0, 0, 0, 0}));
  const struct {
    cudnnPoolingMode_t mode;
    const DeviceBuffer* x;
    std::vector<float> expected;
  } cases[] = {{CUDNN_POOLING_MAX, xn.get(), {-1, -2, -4, -5}},
               {CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, xp.get(), {0.25f, 1.25f, 2.75f, 7}},
               {CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, xp.get(), {1, 2.5f, 5.5f, 7}}};
  for (const auto& c : cases) {
    CUDNN_OK(cudnnSetPooling2dDescriptor(pd, c.mode, CUDNN_PROPAGATE_NAN, 2, 2, 1, 1, 2, 2));
    int n = 0, ch = 0, h = 0, w = 0;
    CUDNN_OK(cudnnGetPooling2dForwardOutputDim(pd, xd, &n, &ch, &h, &w));
    ASSERT_EQ(h, 2);
    ASSERT_EQ(w, 2);
    CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, ch, h, w));
    CUDNN_OK(cudnnPoolingForward(handle, pd, &kOne, xd, c.x->p, &kZero, yd, y->p));
    EXPECT_EQ(download(y->p, 4), c.expected) << "mode " << c.mode;
  }
}

// x is 1x2x1x2: channel 0 = [0, 1], channel 1 = [ln 3, 1].
// CHANNEL: at w=0 [1, 3]/4 = [0.25, 0.75]; at w=1 [0.5, 0.5].
// INSTANCE: over all four: [1, e, 3, e] / (4 + 2e).
TEST_F(StandinCudnn, SoftmaxChannelAndInstance) {
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 1, 2));
  const float ln3 = std::log(3.0f);
  std::unique_ptr<DeviceBuffer> x(upload({0, 1, ln3, 1})), y(upload({0, 0, 0, 0}));
  CUDNN_OK(cudnnSoftmaxForward(handle, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &kOne, xd, x->p, &kZero, xd,
                               y->p));
  std::vector<float> out = download(y->p, 4);
  const float expected_channel[4] = {0.25f, 0.5f, 0.75f, 0.5f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out[static_cast<std::size_t>(i)], expected_channel[i], 1e-6f) << i;
  CUDNN_OK(cudnnSoftmaxForward(handle, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &kOne, xd, x->p, &kZero, xd,
                               y->p));
  out = download(y->p, 4);
  const double e = std::exp(1.0), total = 4.0 + 2.0 * e;
  const double expected_instance[4] = {1 / total, e / total, 3 / total, e / total};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out[static_cast<std::size_t>(i)], expected_instance[i], 1e-6) << i;
  CUDNN_OK(
      cudnnSoftmaxForward(handle, CUDNN_SOFTMAX_LOG, CUDNN_SOFTMAX_MODE_CHANNEL, &kOne, xd, x->p, &kZero, xd, y->p));
  out = download(y->p, 4);
  EXPECT_NEAR(out[0], std::log(0.25), 1e-6);
  EXPECT_NEAR(out[3], std::log(0.5), 1e-6);
}

// SPATIAL, x 1x2x1x2: channel 0 [1, 3], channel 1 [2, 6]; mean [2, 4], variance [1, 4],
// scale [1, 2], bias [0, 1], epsilon 0: [(1-2)/1, (3-2)/1] = [-1, 1]; [2(2-4)/2+1, 2(6-4)/2+1] = [-1, 3].
TEST_F(StandinCudnn, BatchNormInferenceSpatial) {
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 1, 2));
  CUDNN_OK(cudnnDeriveBNTensorDescriptor(bd, xd, CUDNN_BATCHNORM_SPATIAL));
  std::unique_ptr<DeviceBuffer> x(upload({1, 3, 2, 6})), y(upload({0, 0, 0, 0})), mean(upload({2, 4})),
      var(upload({1, 4})), scale(upload({1, 2})), bias(upload({0, 1}));
  CUDNN_OK(cudnnBatchNormalizationForwardInference(handle, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, xd, x->p, xd, y->p,
                                                   bd, scale->p, bias->p, mean->p, var->p, 0.0));
  EXPECT_EQ(download(y->p, 4), (std::vector<float>{-1, 1, -1, 3}));
  EXPECT_EQ(cudnnBatchNormalizationForwardInference(handle, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, xd, x->p, xd, y->p,
                                                    bd, scale->p, bias->p, mean->p, var->p, -1e-5),
            CUDNN_STATUS_BAD_PARAM)
      << "epsilon below CUDNN_BN_MIN_EPSILON";
  cudnnTensorDescriptor_t half_x = nullptr;
  CUDNN_OK(cudnnCreateTensorDescriptor(&half_x));
  CUDNN_OK(cudnnSetTensor4dDescriptor(half_x, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 1, 2, 1, 2));
  CUDNN_OK(cudnnDeriveBNTensorDescriptor(bd, half_x, CUDNN_BATCHNORM_SPATIAL));
  cudnnDataType_t type = CUDNN_DATA_HALF;
  int dims[4] = {}, strides[4] = {}, nb = 0;
  CUDNN_OK(cudnnGetTensorNdDescriptor(bd, 4, &type, &nb, dims, strides));
  EXPECT_EQ(type, CUDNN_DATA_FLOAT) << "HALF data derives FLOAT parameters";
  EXPECT_EQ(dims[1], 2);
  EXPECT_EQ(dims[2], 1);
  cudnnDestroyTensorDescriptor(half_x);
}

// C (1x2x1x2) = [1 2 3 4] plus A (1x2x1x1) = [10 20] broadcast: [11 12 23 24].
TEST_F(StandinCudnn, AddTensorBroadcastsOnes) {
  CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 1, 2));
  CUDNN_OK(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 1, 1));
  std::unique_ptr<DeviceBuffer> a(upload({10, 20})), c(upload({1, 2, 3, 4}));
  CUDNN_OK(cudnnAddTensor(handle, &kOne, bd, a->p, &kOne, yd, c->p));
  EXPECT_EQ(download(c->p, 4), (std::vector<float>{11, 12, 23, 24}));
  CUDNN_OK(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 3, 1, 1));
  EXPECT_EQ(cudnnAddTensor(handle, &kOne, bd, a->p, &kOne, yd, c->p), CUDNN_STATUS_BAD_PARAM);
}

TEST_F(StandinCudnn, TransformTensorChangesLayoutNotType) {
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 1, 3));
  CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, 2, 1, 3));
  std::unique_ptr<DeviceBuffer> x(upload({1, 2, 3, 4, 5, 6})), y(upload(std::vector<float>(6, 0)));
  CUDNN_OK(cudnnTransformTensor(handle, &kOne, xd, x->p, &kZero, yd, y->p));
  EXPECT_EQ(download(y->p, 6), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 1, 2, 1, 3));
  EXPECT_EQ(cudnnTransformTensor(handle, &kOne, xd, x->p, &kZero, yd, y->p), CUDNN_STATUS_BAD_PARAM);
}

// Any strides on either side, the channel strides of one transposed: x [1, 2, 3, 1] packed holds
// element (i, j) at 3 i + j, y at i + 2 j, so y = [0 3 1 4 2 5] (a channel shuffle of 6 by 2 groups).
TEST_F(StandinCudnn, TransformTensorCopiesBetweenAnyStrides) {
  CUDNN_OK(cudnnSetTensor4dDescriptorEx(xd, CUDNN_DATA_FLOAT, 1, 2, 3, 1, 6, 3, 1, 1));
  CUDNN_OK(cudnnSetTensor4dDescriptorEx(yd, CUDNN_DATA_FLOAT, 1, 2, 3, 1, 6, 1, 2, 1));
  std::unique_ptr<DeviceBuffer> x(upload({0, 1, 2, 3, 4, 5})), y(upload(std::vector<float>(6, -1)));
  CUDNN_OK(cudnnTransformTensor(handle, &kOne, xd, x->p, &kZero, yd, y->p));
  EXPECT_EQ(download(y->p, 6), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

// A view that starts inside its buffer: x NHWC [1, 4, 1, 2] holds position p, channel c at 4 p + c;
// channels [1, 3) are the view [1, 2, 1, 2] with x's strides, one float in (a channel slice), so
// y (NHWC) = [1 2 11 12].
TEST_F(StandinCudnn, TransformTensorReadsAViewInsideItsBuffer) {
  CUDNN_OK(cudnnSetTensor4dDescriptorEx(xd, CUDNN_DATA_FLOAT, 1, 2, 1, 2, 8, 1, 8, 4));
  CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, 2, 1, 2));
  std::unique_ptr<DeviceBuffer> x(upload({0, 1, 2, 3, 10, 11, 12, 13})), y(upload(std::vector<float>(4, -1)));
  CUDNN_OK(cudnnTransformTensor(handle, &kOne, xd, static_cast<float*>(x->p) + 1, &kZero, yd, y->p));
  EXPECT_EQ(download(y->p, 4), (std::vector<float>{1, 2, 11, 12}));
}

// cudnnSetTensor: every element the descriptor names (a strided view leaves the rest), the value
// given in the tensor's own type (a half for half data).
TEST_F(StandinCudnn, SetTensorFillsOnlyTheViewWithTheValueInItsType) {
  // A 1x1x2x2 view with row stride 3 inside a 1x1x2x3 buffer: the third column stays.
  CUDNN_OK(cudnnSetTensor4dDescriptorEx(yd, CUDNN_DATA_FLOAT, 1, 1, 2, 2, 6, 6, 3, 1));
  std::unique_ptr<DeviceBuffer> y(upload({1, 2, 3, 4, 5, 6}));
  const float minus_inf = -std::numeric_limits<float>::infinity();
  CUDNN_OK(cudnnSetTensor(handle, yd, y->p, &minus_inf));
  EXPECT_EQ(download(y->p, 6), (std::vector<float>{minus_inf, minus_inf, 3, minus_inf, minus_inf, 6}));
  // Half: the value is read as a half (0xC200 is -3.0); a float there would be read as garbage.
  CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 1, 2, 1, 2));
  std::unique_ptr<DeviceBuffer> h(new DeviceBuffer(8));
  const std::uint16_t minus_three = 0xC200;
  CUDNN_OK(cudnnSetTensor(handle, yd, h->p, &minus_three));
  std::vector<std::uint16_t> got(4);
  ASSERT_EQ(cudaMemcpy(got.data(), h->p, 8, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got, (std::vector<std::uint16_t>{0xC200, 0xC200, 0xC200, 0xC200}));
  EXPECT_EQ(cudnnSetTensor(handle, yd, h->p, nullptr), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetTensor(nullptr, yd, h->p, &minus_three), CUDNN_STATUS_BAD_PARAM);
}

TEST_F(StandinCudnn, ReluNanOption) {
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 3));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::unique_ptr<DeviceBuffer> x(upload({-2, nan, 3})), y(upload({9, 9, 9}));
  CUDNN_OK(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  CUDNN_OK(cudnnActivationForward(handle, ad, &kOne, xd, x->p, &kZero, xd, y->p));
  EXPECT_EQ(download(y->p, 3), (std::vector<float>{0, 0, 3}));
  CUDNN_OK(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  CUDNN_OK(cudnnActivationForward(handle, ad, &kOne, xd, x->p, &kZero, xd, y->p));
  EXPECT_TRUE(std::isnan(download(y->p, 3)[1]));
}

// The call copies its descriptors: re-setting them before the queued work runs changes nothing.
TEST_F(StandinCudnn, DescriptorChangedAfterEnqueueDoesNotChangeResult) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  CUDNN_OK(cudnnSetStream(handle, stream));
  set_small_conv(0, CUDNN_CROSS_CORRELATION);
  std::unique_ptr<DeviceBuffer> x(upload(small_x())), w(upload(small_w())), y(upload({-1, -1, -1, -1}));
  CUDNN_OK(cudnnConvolutionForward(handle, &kOne, xd, x->p, wd, w->p, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                   nullptr, 0, &kZero, yd, y->p));
  CUDNN_OK(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT));
  CUDNN_OK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, 1, 1, 1, 1));
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, 1, 2, 2));
  CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, 1, 1, 1));
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(download(y->p, 4), (std::vector<float>{44, 51, 72, 79}));
  cudnnSetStream(handle, nullptr);
  cudaStreamDestroy(stream);
}

TEST_F(StandinCudnn, WorkspaceIsCheckedAndScribbled) {
  set_small_conv(0, CUDNN_CROSS_CORRELATION);
  size_t need = 0;
  CUDNN_OK(cudnnGetConvolutionForwardWorkspaceSize(handle, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, &need));
  ASSERT_GT(need, 0u);
  std::unique_ptr<DeviceBuffer> x(upload(small_x())), w(upload(small_w())), y(upload({-1, -1, -1, -1}));
  DeviceBuffer ws(need);
  ASSERT_EQ(cudaMemset(ws.p, 0, need), cudaSuccess);
  EXPECT_EQ(cudnnConvolutionForward(handle, &kOne, xd, x->p, wd, w->p, cd, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, ws.p,
                                    need - 1, &kZero, yd, y->p),
            CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT);
  CUDNN_OK(cudnnConvolutionForward(handle, &kOne, xd, x->p, wd, w->p, cd, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, ws.p, need,
                                   &kZero, yd, y->p));
  std::vector<unsigned char> bytes(need);
  ASSERT_EQ(cudaMemcpy(bytes.data(), ws.p, need, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(bytes.front(), 0xFF);
  EXPECT_EQ(bytes.back(), 0xFF);
  EXPECT_EQ(cudnnConvolutionForward(handle, &kOne, xd, x->p, wd, w->p, cd, CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, ws.p,
                                    need, &kZero, yd, y->p),
            CUDNN_STATUS_NOT_SUPPORTED);
}

TEST_F(StandinCudnn, HeuristicListsEveryAlgorithmOnceSupportedFirst) {
  set_small_conv(1, CUDNN_CROSS_CORRELATION);
  int max_count = 0;
  CUDNN_OK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &max_count));
  ASSERT_EQ(max_count, CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(max_count));
  int returned = 0;
  CUDNN_OK(cudnnGetConvolutionForwardAlgorithm_v7(handle, xd, wd, cd, yd, max_count, &returned, perf.data()));
  ASSERT_EQ(returned, max_count);
  std::vector<int> seen(static_cast<std::size_t>(max_count), 0);
  bool unsupported_seen = false;
  for (const auto& p : perf) {
    ++seen[static_cast<std::size_t>(p.algo)];
    if (p.status != CUDNN_STATUS_SUCCESS) unsupported_seen = true;
    if (p.status == CUDNN_STATUS_SUCCESS) {
      EXPECT_FALSE(unsupported_seen) << "supported algorithms come first";
      EXPECT_EQ(p.mathType, CUDNN_FMA_MATH);
    }
    if (p.algo == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT) {
      EXPECT_EQ(p.status, CUDNN_STATUS_NOT_SUPPORTED);
    }
  }
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST_F(StandinCudnn, FindExRunsAndRanksAlgorithms) {
  set_small_conv(1, CUDNN_CROSS_CORRELATION);
  std::unique_ptr<DeviceBuffer> x(upload(small_x())), w(upload(small_w())), y(upload(std::vector<float>(16, -1)));
  DeviceBuffer ws(1 << 20);
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  int returned = 0;
  CUDNN_OK(cudnnFindConvolutionForwardAlgorithmEx(handle, xd, x->p, wd, w->p, cd, yd, y->p,
                                                  CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf.data(), ws.p,
                                                  1 << 20));
  ASSERT_GT(returned, 0);
  EXPECT_EQ(perf[0].status, CUDNN_STATUS_SUCCESS);
  EXPECT_GE(perf[0].time, 0.0f);
  EXPECT_EQ(download(y->p, 16)[0], 19.0f) << "FindEx writes y";
}

TEST_F(StandinCudnn, FaultInjectionDeclinesUnalignedHalfNhwc) {
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 1, 3, 4, 4));
  CUDNN_OK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, 8, 3, 3, 3));
  CUDNN_OK(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 1, 8, 4, 4));
  size_t need = 0;
  const auto algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  CUDNN_OK(cudnnGetConvolutionForwardWorkspaceSize(handle, xd, wd, cd, yd, algo, &need));
  ASSERT_EQ(setenv("INFER_STANDIN_CUDNN_DECLINE", "half-nhwc-unaligned", 1), 0);
  EXPECT_EQ(cudnnGetConvolutionForwardWorkspaceSize(handle, xd, wd, cd, yd, algo, &need), CUDNN_STATUS_NOT_SUPPORTED);
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  CUDNN_OK(cudnnGetConvolutionForwardAlgorithm_v7(handle, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned,
                                                  perf));
  for (int i = 0; i < returned; ++i) EXPECT_EQ(perf[i].status, CUDNN_STATUS_NOT_SUPPORTED) << perf[i].algo;
  ASSERT_EQ(unsetenv("INFER_STANDIN_CUDNN_DECLINE"), 0);
  EXPECT_EQ(cudnnGetConvolutionForwardWorkspaceSize(handle, xd, wd, cd, yd, algo, &need), CUDNN_STATUS_SUCCESS);
}

TEST_F(StandinCudnn, BadDescriptorValuesAreRejected) {
  EXPECT_EQ(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, -1, 2, 2), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetConvolution2dDescriptor(cd, -1, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetConvolution2dDescriptor(cd, 0, 0, 0, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetPooling2dDescriptor(pd, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, 0, 2, 0, 0, 1, 1),
            CUDNN_STATUS_BAD_PARAM);
  const int dims[3] = {1, 2, 3}, strides[3] = {6, 3, 1};
  EXPECT_EQ(cudnnSetTensorNdDescriptor(xd, CUDNN_DATA_FLOAT, 3, dims, strides), CUDNN_STATUS_NOT_SUPPORTED);
  // A convolution whose y does not have the output dimensions.
  set_small_conv(0, CUDNN_CROSS_CORRELATION);
  CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 3, 3));
  std::unique_ptr<DeviceBuffer> x(upload(small_x())), w(upload(small_w())), y(upload(std::vector<float>(9, 0)));
  EXPECT_EQ(cudnnConvolutionForward(handle, &kOne, xd, x->p, wd, w->p, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                    nullptr, 0, &kZero, yd, y->p),
            CUDNN_STATUS_BAD_PARAM);
}

// --- cudnnOpTensor -------------------------------------------------------------------------------

struct OpTensorFixture : Fixture {
  cudnnOpTensorDescriptor_t od = nullptr;
  void SetUp() override {
    Fixture::SetUp();
    ASSERT_EQ(cudnnCreateOpTensorDescriptor(&od), CUDNN_STATUS_SUCCESS);
  }
  void TearDown() override {
    cudnnDestroyOpTensorDescriptor(od);
    Fixture::TearDown();
  }
};

using StandinCudnnOpTensor = OpTensorFixture;

// Fresh random multiples of 1/4 in [-8, 8]: the sums and products below are exact in float (and in
// half where they stay under 2^11 quarter units), so every expected value is exact whatever the
// order of operations. The seed is in every failure message.
struct Quarters {
  unsigned seed = std::random_device{}();
  std::mt19937 rng{seed};
  std::vector<float> operator()(std::size_t n) {
    std::uniform_int_distribution<int> k(-32, 32);
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(k(rng)) / 4.0f;
    return v;
  }
};

DeviceBuffer* upload_half(const std::vector<float>& v) {
  std::vector<std::uint16_t> h(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) h[i] = standin::half_from_float(v[i]);
  auto* b = new DeviceBuffer(h.size() * 2);
  EXPECT_EQ(cudaMemcpy(b->p, h.data(), h.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  return b;
}

std::vector<std::uint16_t> download_half(const void* p, std::size_t count) {
  std::vector<std::uint16_t> v(count);
  EXPECT_EQ(cudaMemcpy(v.data(), p, count * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

// Element-wise equality where NaN equals NaN.
void expect_same(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "] is " << got[i] << ", want NaN";
    } else {
      EXPECT_EQ(got[i], want[i]) << what << " [" << i << "]";
    }
  }
}

// C (2x3x2x2, NCHW) = 2 A + (-0.5) B + 0.25 C, with A stored NHWC and B 2x3x1x1: one value per
// sample and channel, broadcast over h and w.
TEST_F(StandinCudnnOpTensor, AddBroadcastsBOverSpatialDimensions) {
  Quarters random;
  SCOPED_TRACE("random seed " + std::to_string(random.seed));
  const int kN = 2, kC = 3, kH = 2, kW = 2, count = kN * kC * kH * kW;
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, kN, kC, kH, kW));
  CUDNN_OK(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, kN, kC, 1, 1));
  CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, kN, kC, kH, kW));
  CUDNN_OK(cudnnSetOpTensorDescriptor(od, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
  const std::vector<float> a = random(count), b = random(kN * kC), c = random(count);  // a in NHWC order
  std::unique_ptr<DeviceBuffer> da(upload(a)), db(upload(b)), dc(upload(c));
  const float alpha1 = 2.0f, alpha2 = -0.5f, beta = 0.25f;
  CUDNN_OK(cudnnOpTensor(handle, od, &alpha1, xd, da->p, &alpha2, bd, db->p, &beta, yd, dc->p));
  const std::vector<float> out = download(dc->p, count);
  for (int n = 0; n < kN; ++n)
    for (int ch = 0; ch < kC; ++ch)
      for (int h = 0; h < kH; ++h)
        for (int w = 0; w < kW; ++w) {
          const int nchw = ((n * kC + ch) * kH + h) * kW + w, nhwc = ((n * kH + h) * kW + w) * kC + ch;
          const double want = 2.0 * a[nhwc] - 0.5 * b[n * kC + ch] + 0.25 * c[nchw];
          EXPECT_EQ(out[nchw], static_cast<float>(want)) << "n " << n << " c " << ch << " h " << h << " w " << w;
        }
}

// C (2x3x2x2, NHWC) = (-2 A) * (0.5 B) with B 1x3x1x1: one value per channel, broadcast over n, h
// and w. A has padded rows (h stride W + 2, NaN in the padding) in a buffer of exactly its extent.
// beta = 0: the NaN C starts with is never read.
TEST_F(StandinCudnnOpTensor, MulBroadcastsBOverBatchAndSpatialDimensions) {
  Quarters random;
  SCOPED_TRACE("random seed " + std::to_string(random.seed));
  const int kN = 2, kC = 3, kH = 2, kW = 2, kRow = kW + 2, count = kN * kC * kH * kW;
  CUDNN_OK(cudnnSetTensor4dDescriptorEx(xd, CUDNN_DATA_FLOAT, kN, kC, kH, kW, kC * kH * kRow, kH * kRow, kRow, 1));
  CUDNN_OK(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, kC, 1, 1));
  CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, kN, kC, kH, kW));
  CUDNN_OK(cudnnSetOpTensorDescriptor(od, CUDNN_OP_TENSOR_MUL, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> values = random(count), b = random(kC);  // values in NCHW order
  const int extent = (kN * kC * kH - 1) * kRow + kW;                // the last row is not padded
  std::vector<float> a(static_cast<std::size_t>(extent), nan);
  for (int i = 0; i < count; ++i) a[(i / kW) * kRow + i % kW] = values[i];
  std::unique_ptr<DeviceBuffer> da(upload(a)), db(upload(b)), dc(upload(std::vector<float>(count, nan)));
  const float alpha1 = -2.0f, alpha2 = 0.5f;
  CUDNN_OK(cudnnOpTensor(handle, od, &alpha1, xd, da->p, &alpha2, bd, db->p, &kZero, yd, dc->p));
  const std::vector<float> out = download(dc->p, count);
  for (int n = 0; n < kN; ++n)
    for (int ch = 0; ch < kC; ++ch)
      for (int h = 0; h < kH; ++h)
        for (int w = 0; w < kW; ++w) {
          const int nchw = ((n * kC + ch) * kH + h) * kW + w, nhwc = ((n * kH + h) * kW + w) * kC + ch;
          EXPECT_EQ(out[nhwc], -values[nchw] * b[ch]) << "n " << n << " c " << ch << " h " << h << " w " << w;
        }
}

// alpha2 = -1 scales B before the op: -B = [-2, -5, NaN, NaN] against A = [1, NaN, 3, NaN].
// MIN and MAX follow opTensorNanOpt; ADD propagates NaN whatever the option.
TEST_F(StandinCudnnOpTensor, MinMaxFollowTheNanOptionAddPropagatesNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 4));
  std::unique_ptr<DeviceBuffer> a(upload({1, nan, 3, nan})), b(upload({2, 5, nan, nan})), c(upload({9, 9, 9, 9}));
  const float minus_one = -1.0f;
  const struct {
    cudnnOpTensorOp_t op;
    cudnnNanPropagation_t nan_opt;
    std::vector<float> want;
    const char* what;
  } cases[] = {
      {CUDNN_OP_TENSOR_MIN, CUDNN_PROPAGATE_NAN, {-2, nan, nan, nan}, "MIN, PROPAGATE_NAN"},
      {CUDNN_OP_TENSOR_MIN, CUDNN_NOT_PROPAGATE_NAN, {-2, -5, 3, nan}, "MIN, NOT_PROPAGATE_NAN"},
      {CUDNN_OP_TENSOR_MAX, CUDNN_PROPAGATE_NAN, {1, nan, nan, nan}, "MAX, PROPAGATE_NAN"},
      {CUDNN_OP_TENSOR_MAX, CUDNN_NOT_PROPAGATE_NAN, {1, -5, 3, nan}, "MAX, NOT_PROPAGATE_NAN"},
      {CUDNN_OP_TENSOR_ADD, CUDNN_NOT_PROPAGATE_NAN, {-1, nan, nan, nan}, "ADD, NOT_PROPAGATE_NAN"},
  };
  for (const auto& k : cases) {
    CUDNN_OK(cudnnSetOpTensorDescriptor(od, k.op, CUDNN_DATA_FLOAT, k.nan_opt));
    ASSERT_EQ(cudaMemcpy(c->p, std::vector<float>(4, 9.0f).data(), 16, cudaMemcpyHostToDevice), cudaSuccess);
    CUDNN_OK(cudnnOpTensor(handle, od, &kOne, xd, a->p, &minus_one, xd, b->p, &kZero, xd, c->p));
    expect_same(download(c->p, 4), k.want, k.what);
  }
}

// In place, as the reference allows it: C == A (B broadcast), and C == A == B. B == C alone, and an
// alias described otherwise than C, are refused before anything runs.
TEST_F(StandinCudnnOpTensor, InPlaceUse) {
  Quarters random;
  SCOPED_TRACE("random seed " + std::to_string(random.seed));
  const int kC = 3, kHW = 4, count = 2 * kC * kHW;
  CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, kC, 2, 2));
  CUDNN_OK(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, kC, 1, 1));
  const std::vector<float> c0 = random(count), b = random(kC);
  std::unique_ptr<DeviceBuffer> c(upload(c0)), db(upload(b));

  // C = 1 * C + 1 * B + 1 * C.
  CUDNN_OK(cudnnSetOpTensorDescriptor(od, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
  CUDNN_OK(cudnnOpTensor(handle, od, &kOne, yd, c->p, &kOne, bd, db->p, &kOne, yd, c->p));
  std::vector<float> want(count);
  for (int i = 0; i < count; ++i) want[i] = 2.0f * c0[i] + b[(i / kHW) % kC];
  const std::vector<float> c1 = download(c->p, count);
  expect_same(c1, want, "C == A, ADD");

  // C = (1 * C) * (1 * C) - 1 * C.
  CUDNN_OK(cudnnSetOpTensorDescriptor(od, CUDNN_OP_TENSOR_MUL, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
  const float minus_one = -1.0f;
  CUDNN_OK(cudnnOpTensor(handle, od, &kOne, yd, c->p, &kOne, yd, c->p, &minus_one, yd, c->p));
  for (int i = 0; i < count; ++i) want[i] = c1[i] * c1[i] - c1[i];
  const std::vector<float> c2 = download(c->p, count);
  expect_same(c2, want, "C == A == B, MUL");

  std::unique_ptr<DeviceBuffer> other(upload(random(count)));
  EXPECT_EQ(cudnnOpTensor(handle, od, &kOne, yd, other->p, &kOne, yd, c->p, &kZero, yd, c->p), CUDNN_STATUS_BAD_PARAM)
      << "B == C needs A == C";
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 2, kC, 2, 2));
  EXPECT_EQ(cudnnOpTensor(handle, od, &kOne, xd, c->p, &kOne, bd, db->p, &kZero, yd, c->p), CUDNN_STATUS_BAD_PARAM)
      << "A aliases C with other strides";
  expect_same(download(c->p, count), c2, "C after the refused calls");
}

// Binary16 storage, computed wider and rounded once: 1 + 2^-11 is halfway between 1 and 1 + 2^-10
// and rounds to even 1 (0x3C00); 1 + 2^-10 + 2^-11 rounds to even 1 + 2^-9 (0x3C02). HALF A and B
// into a FLOAT C keep the sum exactly; FLOAT A and B into a HALF C round the same way.
TEST_F(StandinCudnnOpTensor, HalfDataRoundsOnceToNearestEven) {
  const float e = std::ldexp(1.0f, -11), one_ulp = std::ldexp(1.0f, -10);
  CUDNN_OK(cudnnSetOpTensorDescriptor(od, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 1, 1, 1, 2));
  CUDNN_OK(cudnnSetTensor4dDescriptor(zd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 2));
  std::unique_ptr<DeviceBuffer> ha(upload_half({1.0f, 1.0f + one_ulp})), hb(upload_half({e, e})),
      hc(upload_half({-3.0f, -3.0f})), fa(upload({1.0f, 1.0f + one_ulp})), fb(upload({e, e})), fc(upload({-3, -3}));
  CUDNN_OK(cudnnOpTensor(handle, od, &kOne, xd, ha->p, &kOne, xd, hb->p, &kZero, xd, hc->p));
  EXPECT_EQ(download_half(hc->p, 2), (std::vector<std::uint16_t>{0x3C00, 0x3C02})) << "HALF, HALF -> HALF";
  CUDNN_OK(cudnnOpTensor(handle, od, &kOne, xd, ha->p, &kOne, xd, hb->p, &kZero, zd, fc->p));
  EXPECT_EQ(download(fc->p, 2), (std::vector<float>{1.0f + e, 1.0f + one_ulp + e})) << "HALF, HALF -> FLOAT";
  CUDNN_OK(cudnnOpTensor(handle, od, &kOne, zd, fa->p, &kOne, zd, fb->p, &kZero, xd, hc->p));
  EXPECT_EQ(download_half(hc->p, 2), (std::vector<std::uint16_t>{0x3C00, 0x3C02})) << "FLOAT, FLOAT -> HALF";
}

// HALF through strides: A NCHW, B 1xCx1x1, C NHWC with a blend, on fresh random quarters (every
// product and sum below stays exact in binary16).
TEST_F(StandinCudnnOpTensor, HalfDataWithBroadcastAndLayouts) {
  Quarters random;
  SCOPED_TRACE("random seed " + std::to_string(random.seed));
  const int kC = 3, kHW = 4, count = 2 * kC * kHW;
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 2, kC, 2, 2));
  CUDNN_OK(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 1, kC, 1, 1));
  CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 2, kC, 2, 2));
  CUDNN_OK(cudnnSetOpTensorDescriptor(od, CUDNN_OP_TENSOR_MUL, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
  const std::vector<float> a = random(count), b = random(kC), c = random(count);  // c in NHWC order
  std::unique_ptr<DeviceBuffer> da(upload_half(a)), db(upload_half(b)), dc(upload_half(c));
  const float half_scale = 0.5f;
  CUDNN_OK(cudnnOpTensor(handle, od, &kOne, xd, da->p, &kOne, bd, db->p, &half_scale, yd, dc->p));
  const std::vector<std::uint16_t> out = download_half(dc->p, count);
  for (int n = 0; n < 2; ++n)
    for (int ch = 0; ch < kC; ++ch)
      for (int hw = 0; hw < kHW; ++hw) {
        const int nchw = (n * kC + ch) * kHW + hw, nhwc = (n * kHW + hw) * kC + ch;
        const double want = static_cast<double>(a[nchw]) * b[ch] + 0.5 * c[nhwc];
        EXPECT_EQ(out[nhwc], standin::half_from_double(want)) << "n " << n << " c " << ch << " hw " << hw;
      }
}

// Every refusal, with its status; none of them touches C.
TEST_F(StandinCudnnOpTensor, StatusesForWhatIsRefused) {
  const std::vector<float> prior = {1, 2, 3, 4, 5, 6};
  std::unique_ptr<DeviceBuffer> a(upload(prior)), b(upload(prior)), c(upload(prior));
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 1, 3));  // A
  CUDNN_OK(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 1, 1));  // B
  CUDNN_OK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 1, 3));  // C
  auto run = [&](cudnnTensorDescriptor_t adesc, cudnnTensorDescriptor_t bdesc, cudnnTensorDescriptor_t cdesc) {
    return cudnnOpTensor(handle, od, &kOne, adesc, a->p, &kOne, bdesc, b->p, &kZero, cdesc, c->p);
  };
  EXPECT_EQ(run(xd, bd, yd), CUDNN_STATUS_BAD_PARAM) << "opTensorDesc created but never set";
  CUDNN_OK(cudnnSetOpTensorDescriptor(od, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
  EXPECT_EQ(cudnnOpTensor(nullptr, od, &kOne, xd, a->p, &kOne, bd, b->p, &kZero, yd, c->p), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(run(xd, nullptr, yd), CUDNN_STATUS_BAD_PARAM) << "bDesc NULL";

  CUDNN_OK(cudnnSetTensor4dDescriptor(zd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 1, 2));
  EXPECT_EQ(run(zd, bd, yd), CUDNN_STATUS_BAD_PARAM) << "A 1x2x1x2, C 1x2x1x3";
  char msg[512] = "";
  cudnnGetLastErrorString(msg, sizeof msg);
  EXPECT_NE(std::strstr(msg, "cudnnOpTensor"), nullptr) << msg;
  EXPECT_NE(std::strstr(msg, "aDesc"), nullptr) << msg;
  EXPECT_EQ(run(xd, zd, yd), CUDNN_STATUS_BAD_PARAM) << "B's last dimension 2 is neither 3 nor 1";
  const int dims5[5] = {1, 2, 1, 3, 1}, strides5[5] = {6, 3, 3, 1, 1};
  CUDNN_OK(cudnnSetTensorNdDescriptor(zd, CUDNN_DATA_FLOAT, 5, dims5, strides5));
  EXPECT_EQ(run(zd, bd, yd), CUDNN_STATUS_BAD_PARAM) << "A 5-d, C 4-d";

  CUDNN_OK(cudnnSetTensor4dDescriptor(zd, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 1, 2, 1, 1));
  EXPECT_EQ(run(xd, zd, yd), CUDNN_STATUS_BAD_PARAM) << "A FLOAT, B HALF";
  CUDNN_OK(cudnnSetTensor4dDescriptor(zd, CUDNN_TENSOR_NCHW, CUDNN_DATA_DOUBLE, 1, 2, 1, 3));
  EXPECT_EQ(run(xd, bd, zd), CUDNN_STATUS_BAD_PARAM) << "A and B FLOAT, C DOUBLE";
  CUDNN_OK(cudnnSetOpTensorDescriptor(od, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_DOUBLE, CUDNN_PROPAGATE_NAN));
  EXPECT_EQ(run(zd, zd, zd), CUDNN_STATUS_NOT_SUPPORTED) << "DOUBLE data (not computed by the stand-in)";
  EXPECT_EQ(run(xd, bd, yd), CUDNN_STATUS_NOT_SUPPORTED) << "FLOAT data with a DOUBLE compute type";
  CUDNN_OK(cudnnSetTensor4dDescriptor(zd, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 1, 2, 1, 3));
  CUDNN_OK(cudnnSetOpTensorDescriptor(od, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_HALF, CUDNN_PROPAGATE_NAN));
  EXPECT_EQ(run(zd, zd, zd), CUDNN_STATUS_NOT_SUPPORTED) << "HALF data with a HALF compute type";
  CUDNN_OK(cudnnSetTensor4dDescriptor(zd, CUDNN_TENSOR_NCHW, CUDNN_DATA_INT8, 1, 2, 1, 3));
  CUDNN_OK(cudnnSetOpTensorDescriptor(od, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
  EXPECT_EQ(run(zd, zd, zd), CUDNN_STATUS_NOT_SUPPORTED) << "INT8 data (not computed by the stand-in)";

  const int dims6[6] = {1, 2, 1, 3, 1, 1}, strides6[6] = {6, 3, 3, 1, 1, 1};
  CUDNN_OK(cudnnSetTensorNdDescriptor(zd, CUDNN_DATA_FLOAT, 6, dims6, strides6));
  EXPECT_EQ(run(zd, zd, zd), CUDNN_STATUS_NOT_SUPPORTED) << "more than 5 dimensions";
  for (cudnnOpTensorOp_t op : {CUDNN_OP_TENSOR_SQRT, CUDNN_OP_TENSOR_NOT}) {
    CUDNN_OK(cudnnSetOpTensorDescriptor(od, op, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
    EXPECT_EQ(run(xd, bd, yd), CUDNN_STATUS_NOT_SUPPORTED) << "op " << op << " (not implemented by the stand-in)";
  }
  expect_same(download(c->p, prior.size()), prior, "C after the refused calls");

  // The descriptor itself: an invalid op, a NULL descriptor, and a round trip.
  EXPECT_EQ(cudnnSetOpTensorDescriptor(od, static_cast<cudnnOpTensorOp_t>(6), CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetOpTensorDescriptor(nullptr, CUDNN_OP_TENSOR_MAX, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN),
            CUDNN_STATUS_BAD_PARAM);
  CUDNN_OK(cudnnSetOpTensorDescriptor(od, CUDNN_OP_TENSOR_MAX, CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN));
  cudnnOpTensorOp_t op = CUDNN_OP_TENSOR_ADD;
  cudnnDataType_t type = CUDNN_DATA_HALF;
  cudnnNanPropagation_t nan_opt = CUDNN_PROPAGATE_NAN;
  CUDNN_OK(cudnnGetOpTensorDescriptor(od, &op, &type, &nan_opt));
  EXPECT_EQ(op, CUDNN_OP_TENSOR_MAX);
  EXPECT_EQ(type, CUDNN_DATA_FLOAT);
  EXPECT_EQ(nan_opt, CUDNN_NOT_PROPAGATE_NAN);
  cudnnOpTensorDescriptor_t unset = nullptr;
  CUDNN_OK(cudnnCreateOpTensorDescriptor(&unset));
  EXPECT_EQ(cudnnGetOpTensorDescriptor(unset, &op, &type, &nan_opt), CUDNN_STATUS_BAD_PARAM);
  CUDNN_OK(cudnnDestroyOpTensorDescriptor(unset));
}

using StandinCudnnDeathTest = Fixture;

TEST_F(StandinCudnnDeathTest, OutputSmallerThanItsDescriptorEndsTheProcess) {
  set_small_conv(0, CUDNN_CROSS_CORRELATION);
  std::unique_ptr<DeviceBuffer> x(upload(small_x())), w(upload(small_w())), y(upload({0, 0, 0}));  // needs 4
  EXPECT_DEATH(
      {
        cudnnConvolutionForward(handle, &kOne, xd, x->p, wd, w->p, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                nullptr, 0, &kZero, yd, y->p);
        cudaDeviceSynchronize();
      },
      "cudnnConvolutionForward.*y");
}

TEST_F(StandinCudnnDeathTest, HostInputEndsTheProcess) {
  set_small_conv(0, CUDNN_CROSS_CORRELATION);
  std::vector<float> host_x = small_x();
  std::unique_ptr<DeviceBuffer> w(upload(small_w())), y(upload({0, 0, 0, 0}));
  EXPECT_DEATH(
      {
        cudnnConvolutionForward(handle, &kOne, xd, host_x.data(), wd, w->p, cd,
                                CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &kZero, yd, y->p);
        cudaDeviceSynchronize();
      },
      "cudnnConvolutionForward.*x");
}

TEST_F(StandinCudnnDeathTest, DeviceAlphaEndsTheProcess) {
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 3));
  std::unique_ptr<DeviceBuffer> x(upload({1, 2, 3})), y(upload({0, 0, 0})), alpha(upload({1}));
  CUDNN_OK(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  EXPECT_DEATH(cudnnActivationForward(handle, ad, alpha->p, xd, x->p, &kZero, xd, y->p), "alpha");
}

TEST_F(StandinCudnnDeathTest, FusedZMustBeADeviceRangeOfYsExtent) {
  set_small_conv(0, CUDNN_CROSS_CORRELATION);
  CUDNN_OK(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 1));
  CUDNN_OK(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  std::unique_ptr<DeviceBuffer> x(upload(small_x())), w(upload(small_w())), z(upload({0, 0})), bias(upload({0})),
      y(upload({0, 0, 0, 0}));
  DeviceBuffer ws(1 << 16);
  EXPECT_DEATH(
      {
        cudnnConvolutionBiasActivationForward(handle, &kOne, xd, x->p, wd, w->p, cd,
                                              CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, ws.p, 1 << 16, &kZero,
                                              yd, z->p, bd, bias->p, ad, yd, y->p);
        cudaDeviceSynchronize();
      },
      "z");
}

using StandinCudnnOpTensorDeathTest = OpTensorFixture;

// B 1x3x1x1 needs 3 floats; its buffer holds 2.
TEST_F(StandinCudnnOpTensorDeathTest, BroadcastBSmallerThanItsDescriptorEndsTheProcess) {
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 3, 1, 2));
  CUDNN_OK(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 3, 1, 1));
  CUDNN_OK(cudnnSetOpTensorDescriptor(od, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
  std::unique_ptr<DeviceBuffer> a(upload({1, 2, 3, 4, 5, 6})), b(upload({1, 2})), c(upload({0, 0, 0, 0, 0, 0}));
  EXPECT_DEATH(
      {
        cudnnOpTensor(handle, od, &kOne, xd, a->p, &kOne, bd, b->p, &kZero, xd, c->p);
        cudaDeviceSynchronize();
      },
      "cudnnOpTensor: argument 'B' out of bounds");
}

// C 1x1x2x2 with rows 4 apart spans 6 floats (1 + 1 * 4 + 1 * 1); its buffer holds the 4 a packed
// layout would need.
TEST_F(StandinCudnnOpTensorDeathTest, StridedCExtentIsChecked) {
  CUDNN_OK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 2, 2));
  CUDNN_OK(cudnnSetTensor4dDescriptorEx(yd, CUDNN_DATA_FLOAT, 1, 1, 2, 2, 8, 8, 4, 1));
  CUDNN_OK(cudnnSetOpTensorDescriptor(od, CUDNN_OP_TENSOR_MUL, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
  std::unique_ptr<DeviceBuffer> a(upload({1, 2, 3, 4})), c(upload({0, 0, 0, 0}));
  EXPECT_DEATH(
      {
        cudnnOpTensor(handle, od, &kOne, xd, a->p, &kOne, xd, a->p, &kZero, yd, c->p);
        cudaDeviceSynchronize();
      },
      "cudnnOpTensor: argument 'C' out of bounds");
}

}  // namespace
