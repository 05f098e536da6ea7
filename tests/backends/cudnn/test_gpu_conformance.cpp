// The torchvision architectures of tests/formats/test_torchvision.cpp on the GPU backend, against ONNX
// Runtime's outputs (conformance_data.h). Here they run at 64x64 on a few inputs: on the CPU
// stand-in of CI every convolution is a naive double-precision loop, and ResNet-18 at 224x224 takes
// minutes there. On a GPU runner (tools/release/gpu-check.sh) the same test runs whatever data
// INFER_CONFORMANCE_DIR names. Without a usable GPU it skips (a failure under INFER_REQUIRE_GPU=1).
#include <gtest/gtest.h>

#include "tests/support/conformance_data.h"
#include "infer/errors.h"
#include "backends/gpu_backend.h"

namespace infer::test {
namespace {

TEST(GpuConformance, GpuMatchesOnnxRuntime) {
  const std::vector<ConformanceModel> models = conformance_models();
  ASSERT_FALSE(models.empty());
  for (const ConformanceModel& m : models) {
    SCOPED_TRACE(m.name);
    const LoadedModel loaded = load_model(m.onnx);
    std::unique_ptr<Backend> gpu;
    try {
      gpu = make_gpu_backend(loaded.network, 2);
    } catch (const GpuUnavailableError& e) {
      INFER_GPU_UNUSABLE(e.what());
    }
    compare_with_ort(m, loaded.network, *gpu, m.count, 1);
  }
}

}  // namespace
}  // namespace infer::test
