// Where a Classifier runs, and in which arithmetic.
#pragma once

namespace infer {

// Auto: the GPU when the environment check passes and the GPU backend sets up, else the CPU, with a
// notice saying why (Notice::Kind::CpuFallback). Gpu: the GPU or an error (GpuUnavailableError,
// GpuError). Cpu: the CPU; the GPU and its libraries are never touched.
enum class Device { Auto, Gpu, Cpu };

// Arithmetic of the GPU backend. The CPU backend always runs Fp32.
//   Fp32  float32 data and FMA math: results within 1e-4 (relative) of the CPU's
//   Tf32  float32 data, convolutions on tensor cores with TF32 products (10-bit mantissas)
//   Fp16  half storage of activations and weights, float accumulation, tensor cores
enum class Precision { Fp32, Tf32, Fp16 };

// "fp32", "tf32", "fp16": the names the infer command's --precision takes.
inline const char* precision_name(Precision p) {
  switch (p) {
    case Precision::Fp32: return "fp32";
    case Precision::Tf32: return "tf32";
    case Precision::Fp16: return "fp16";
  }
  return "unknown";
}

}  // namespace infer
