// torchvision's ResNet-18, MobileNetV2, MobileNetV3-small and EfficientNet-B0 (random weights,
// realistic batch-norm statistics), exported to ONNX by tools/train/torchvision_conformance.py at test
// time, through `infer`'s ONNX import on the CPU backend, against ONNX Runtime's outputs on the
// same inputs (conformance_data.h: the derived bound on one input, top-1 on every input). The GPU
// backend's run is tests/backends/cudnn/test_gpu_conformance.cpp.
#include <gtest/gtest.h>

#include "tests/support/conformance_data.h"
#include "backends/cpu/cpu_backend.h"

namespace infer::test {
namespace {

TEST(TorchvisionConformance, CpuMatchesOnnxRuntime) {
  const std::vector<ConformanceModel> models = conformance_models();
  ASSERT_FALSE(models.empty());
  for (const ConformanceModel& m : models) {
    SCOPED_TRACE(m.name);
    const LoadedModel loaded = load_model(m.onnx);
    ASSERT_EQ(loaded.network.output_dims().size(), static_cast<std::size_t>(m.classes));
    auto cpu = make_cpu_backend(loaded.network, 10);
    compare_with_ort(m, loaded.network, *cpu, m.count, 1);
  }
}

}  // namespace
}  // namespace infer::test
