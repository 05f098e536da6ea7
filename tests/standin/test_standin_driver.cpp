// The stand-in's driver API for modules (driver.cpp) against what NVIDIA documents, with the CUDA 12
// backend's own PTX (kernels_ptx.h, made by NVRTC 12.0 at build time): that PTX loads on every
// driver that supports CUDA 12.0 or newer and on every GPU from compute capability 5.0, a PTX of a
// newer ISA than a driver reads is refused with CUDA_ERROR_UNSUPPORTED_PTX_VERSION and the JIT
// log saying so, and a launch through cuLaunchKernel runs the kernel's contract on a runtime
// stream. The driver and GPU played are emulated_driver.h's environment variables, set per test.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cudnn/kernels_ptx.h"
#include "graph/pointwise_op.h"

namespace {

// Sets the emulated driver and GPU for one test, and restores the defaults after it.
class StandinDriver : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("INFER_STANDIN_DRIVER_CUDA");
    unsetenv("INFER_STANDIN_CC");
  }
  static void play(int driver_cuda, int cc) {
    setenv("INFER_STANDIN_DRIVER_CUDA", std::to_string(driver_cuda).c_str(), 1);
    setenv("INFER_STANDIN_CC", std::to_string(cc).c_str(), 1);
  }
  // cuModuleLoadDataEx with the JIT error log, as kernels_driver.cpp calls it.
  static CUresult load(const char* ptx, CUmodule* module, std::string* log) {
    std::array<char, 1024> buffer{};
    std::array<CUjit_option, 2> options = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    std::array<void*, 2> values = {buffer.data(), reinterpret_cast<void*>(static_cast<std::uintptr_t>(buffer.size()))};
    const CUresult r = cuModuleLoadDataEx(module, ptx, 2, options.data(), values.data());
    *log = buffer.data();
    return r;
  }
};

// The PTX as it came out of NVRTC, with its .version line replaced.
std::string with_version(const std::string& version) {
  std::string ptx = infer::cudnn::kKernelsPtx;
  const std::size_t at = ptx.find("\n.version ");
  const std::size_t end = ptx.find('\n', at + 1);
  return ptx.replace(at + 1, end - at - 1, ".version " + version);
}

TEST_F(StandinDriver, TheBackendsPtxIsIsa80ForCompute50) {
  const std::string ptx = infer::cudnn::kKernelsPtx;
  EXPECT_NE(ptx.find("\n.version 8.0\n"), std::string::npos);
  EXPECT_NE(ptx.find("\n.target sm_50\n"), std::string::npos);
}

TEST_F(StandinDriver, ItLoadsOnEveryCuda12DriverAndEveryGpuFromMaxwell) {
  for (const int driver : {12000, 12040, 12090, 13000}) {
    for (const int cc : {50, 60, 70, 75, 90, 120}) {
      play(driver, cc);
      CUmodule module = nullptr;
      std::string log;
      ASSERT_EQ(load(infer::cudnn::kKernelsPtx, &module, &log), CUDA_SUCCESS)
          << "driver " << driver << ", cc " << cc << ": " << log;
      for (const infer::cudnn::KernelName& k : infer::cudnn::kKernelNames) {
        CUfunction f = nullptr;
        EXPECT_EQ(cuModuleGetFunction(&f, module, k.ptx), CUDA_SUCCESS) << k.source << " as " << k.ptx;
      }
      CUfunction none = nullptr;
      EXPECT_EQ(cuModuleGetFunction(&none, module, "not_a_kernel"), CUDA_ERROR_NOT_FOUND);
      EXPECT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
    }
  }
}

TEST_F(StandinDriver, APtxNewerThanTheDriverReadsIsRefusedWithTheJitLog) {
  play(12000, 90);
  CUmodule module = nullptr;
  std::string log;
  EXPECT_EQ(load(with_version("8.1").c_str(), &module, &log), CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
  EXPECT_NE(log.find("Unsupported .version 8.1; current version is '8.0'"), std::string::npos) << log;
  play(12010, 90);  // CUDA 12.1's driver reads ISA 8.1
  ASSERT_EQ(load(with_version("8.1").c_str(), &module, &log), CUDA_SUCCESS) << log;
  EXPECT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
  play(11080, 90);  // a CUDA 11.8 driver reads ISA 7.8: not the CUDA 12 backend's PTX
  EXPECT_EQ(load(infer::cudnn::kKernelsPtx, &module, &log), CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
}

TEST_F(StandinDriver, ALaunchThroughTheDriverRunsTheKernelsContractOnARuntimeStream) {
  play(12000, 60);
  CUmodule module = nullptr;
  std::string log;
  ASSERT_EQ(load(infer::cudnn::kKernelsPtx, &module, &log), CUDA_SUCCESS) << log;
  const char* name = nullptr;
  for (const infer::cudnn::KernelName& k : infer::cudnn::kKernelNames) {
    if (std::strcmp(k.source, "infer::cudnn::kernels::pointwise_kernel") == 0) name = k.ptx;
  }
  ASSERT_NE(name, nullptr);
  CUfunction f = nullptr;
  ASSERT_EQ(cuModuleGetFunction(&f, module, name), CUDA_SUCCESS);
  const std::vector<float> x = {-2.5f, -0.25f, 0.0f, 0.75f, 3.0f};
  void* dx = nullptr;
  ASSERT_EQ(cudaMalloc(&dx, x.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  int op = static_cast<int>(infer::PointwiseOp::Sigmoid), half = 0;
  float a = 0.0f, b = 0.0f;
  std::size_t count = x.size();
  void* args[] = {&op, &a, &b, &dx, &dx, &count, &half};
  ASSERT_EQ(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, stream, args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<float> y(x.size());
  ASSERT_EQ(cudaMemcpy(y.data(), dx, y.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  for (std::size_t i = 0; i < x.size(); ++i) {
    // The stand-in computes in double and rounds once: within one float ulp of the exact value.
    const double want = 1.0 / (1.0 + std::exp(-static_cast<double>(x[i])));
    EXPECT_NEAR(y[i], want, std::ldexp(std::abs(want), -23)) << "x = " << x[i];
  }
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, stream, args, reinterpret_cast<void**>(args)),
            CUDA_ERROR_INVALID_VALUE)
      << "arguments through `extra` are not taken";
  cudaStreamDestroy(stream);
  cudaFree(dx);
  EXPECT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
}

}  // namespace
