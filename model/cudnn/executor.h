// Runs a Plan on the GPU: device selection, the cuDNN handle and stream, device buffers for every
// activation and weight, one convolution algorithm per convolution step and a shared workspace,
// all set up once in the constructor. forward() allocates nothing and creates no descriptor.
//
// Thread safety: none; one forward() at a time per executor.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "../network.h"
#include "check.h"
#include "plan.h"

namespace infer::cudnn {

// Largest workspace one convolution algorithm may ask for. Algorithms that need more are skipped
// in favour of the next one cuDNN's heuristics suggest.
constexpr std::size_t kWorkspaceLimitBytes = std::size_t{256} << 20;

// How a Convolution step is executed, chosen once when the executor is built.
enum class ConvolutionMode {
  FusedRelu,      // cudnnConvolutionBiasActivationForward with ReLU (a step with fused_relu)
  FusedIdentity,  // cudnnConvolutionBiasActivationForward with identity: IMPLICIT_PRECOMP_GEMM only
  Separate,       // cudnnConvolutionForward, cudnnAddTensor (bias), cudnnActivationForward (ReLU)
};

struct ConvolutionChoice {
  ConvolutionMode mode = ConvolutionMode::Separate;
  cudnnConvolutionFwdAlgo_t fused_algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;  // Fused* modes
  cudnnConvolutionFwdAlgo_t plain_algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;  // Separate mode, partial runs
  std::size_t workspace_bytes = 0;  // the most either algorithm needs, at any batch size
};

// Device memory of one layer's parameters; empty buffers for parameters the layer does not have.
struct LayerWeights {
  DeviceBuffer weight;        // conv [K, C/g, R, S], linear [out, in], batch-norm gamma [C]
  DeviceBuffer bias;          // [K] / [out] / batch-norm beta [C]
  DeviceBuffer running_mean;  // batch-norm only, [C]
  DeviceBuffer running_var;   // batch-norm only, [C]
};

class Executor {
 public:
  // Uses CUDA device 0 (the first of $CUDA_VISIBLE_DEVICES when set: the runtime renumbers the
  // visible devices from 0). The network must outlive the executor.
  // Throws GpuUnavailableError (no driver, no device, driver too old, cuDNN unusable: one line
  // naming the failing call and its error string), GpuError (a call failed on a usable GPU),
  // ModelError (the plan cannot match the network), std::invalid_argument (max_batch < 1).
  Executor(const Network& network, int max_batch);

  // Runs layers [0, layer_count) on n samples (see backend.h for the layouts). Throws
  // std::invalid_argument for n outside [1, max_batch] or layer_count outside [1, layers],
  // GpuError when a call fails.
  void forward(const float* input, int n, float* output, std::size_t layer_count);

  // "NVIDIA H200 (sm_90), cuDNN 9.19.0, CUDA runtime 13.0"
  const std::string& description() const { return description_; }
  const Plan& plan() const { return plan_; }
  const std::vector<ConvolutionChoice>& convolutions() const { return convolutions_; }  // per step

 private:
  float* buffer(std::size_t activation) const;
  void run(const float* input, int n, float* output, std::size_t layer_count);  // forward(), checked
  void run_step(std::size_t step_index, bool whole);
  // convolution.cpp
  void choose_algorithms();
  // Probes: run the call once at n = max_batch and n = 1 with exactly `workspace` bytes.
  bool fused_call_runs(const Step& step, cudnnConvolutionFwdAlgo_t algo, bool relu, std::size_t workspace);
  bool plain_call_runs(const Step& step, cudnnConvolutionFwdAlgo_t algo, std::size_t workspace);
  bool call_runs(const Step& step, const char* name, const std::function<cudnnStatus_t()>& call);
  cudnnStatus_t conv_bias_activation(const Step& step, cudnnConvolutionFwdAlgo_t algo, bool relu,
                                     std::size_t workspace);
  cudnnStatus_t plain_convolution(const Step& step, cudnnConvolutionFwdAlgo_t algo, std::size_t workspace);
  void run_convolution(const Step& step, const ConvolutionChoice& choice, bool with_relu);

  // Declaration order is construction order: the device is selected before the stream and the
  // handle are created, and everything on the device is released before them.
  std::string description_;
  Stream stream_;
  CudnnHandle handle_;
  Plan plan_;
  std::vector<DeviceBuffer> buffers_;             // one per Plan::buffer_floats(), max_batch samples
  std::vector<LayerWeights> weights_;             // one per layer
  DeviceBuffer zero_bias_;                        // zeros for fused convolutions without a bias
  std::vector<ConvolutionChoice> convolutions_;   // one per step (used by Convolution steps only)
  DeviceBuffer workspace_;                        // shared by every convolution
  PinnedBuffer input_staging_;                    // max_batch input samples
  PinnedBuffer output_staging_;                   // max_batch samples of the largest layer output
};

}  // namespace infer::cudnn
