// Runs a Plan on the GPU: device selection, the cuDNN handle and stream, device buffers for every
// activation and weight (folded and converted to the plan's precision once, on the host), one
// convolution algorithm per convolution step and a shared workspace, all set up once in the
// constructor. forward() and top_k() create no descriptor and allocate nothing, except in one case:
// the first pass at a batch size whose convolutions need more workspace than n = 1 and max_batch
// (which cuDNN does not rule out) grows the workspace once. With CUDA graphs
// (GpuOptions::cuda_graphs) each distinct pass is captured once and replayed. Every pass records
// four CUDA events around its copies; last_timing() reports the last completed pass's device time.
// Every device call goes through the typed wrappers of calls.h, on the views of buffers.h: the
// buffers it writes (activations, workspace, scratch) are DeviceBuffers, the ones it only reads
// (weights, biases, the zero operands) ConstantBuffers.
//
// Thread safety: none; one forward() or top_k() at a time per executor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "backends/cudnn/buffers.h"
#include "backends/cudnn/calls.h"
#include "backends/cudnn/check.h"
#include "backends/cudnn/plan.h"
#include "backends/cudnn/startup_timer.h"
#include "graph/network.h"

namespace infer::cudnn {

// Largest workspace one convolution algorithm may ask for. Algorithms that need more are skipped
// in favour of the next one cuDNN's heuristics suggest (or the next measured one, with autotune).
constexpr std::size_t kWorkspaceLimitBytes = std::size_t{256} << 20;

// Instantiated CUDA graphs kept per executor (one per distinct batch size, layer count and k);
// the least recently used one is dropped beyond this.
constexpr std::size_t kMaxGraphs = 32;

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
  std::size_t workspace_bytes = 0;    // the most either algorithm needs, at any batch size
  std::string source = "heuristics";  // "heuristics", "cache" or "measured" (autotune)
  double time_ms = -1.0;              // measured time of the whole-step algorithm; < 0 when not measured
  // Fp16 only: every half NHWC algorithm declined, so the step runs in float NCHW (Step::fallback)
  // on the executor's float scratch, between conversion kernels (convolution.cpp).
  bool float_fallback = false;
};

// Device memory of one layer's parameters, written once at build time; empty buffers for
// parameters the layer does not have. Convolution weights and biases are in the plan's storage type
// (half for Fp16, filters in K, R, S, C order for NHWC); batch-norm parameters are always float.
struct LayerWeights {
  ConstantBuffer weight;         // conv [K, C/g, R, S], linear [out, in], batch-norm and layernorm gamma [C]
  ConstantBuffer bias;           // [K] / [out] / batch-norm and layernorm beta [C]
  ConstantBuffer running_mean;   // batch-norm only, [C]
  ConstantBuffer running_var;    // batch-norm only, [C]
  ConstantBuffer folded_weight;  // the first layer of a step with folded_bn: fold.h's weight
  ConstantBuffer folded_bias;    // and bias (always present)
  // A step that falls back to float (ConvolutionChoice::float_fallback): the same four as float,
  // filters KCRS; empty otherwise.
  ConstantBuffer float_weight;
  ConstantBuffer float_bias;
  ConstantBuffer float_folded_weight;
  ConstantBuffer float_folded_bias;
};

class Executor {
 public:
  // Uses CUDA device 0 (the first of $CUDA_VISIBLE_DEVICES when set: the runtime renumbers the
  // visible devices from 0). The network must outlive the executor; options.log, if set, is
  // called on the calling thread during construction and forward()/top_k().
  // Throws GpuUnavailableError (no driver, no device, driver too old, cuDNN unusable: one line
  // naming the failing call and its error string), GpuError (a call failed on a usable GPU),
  // ModelError (the plan cannot match the network), std::invalid_argument (max_batch < 1).
  Executor(const Network& network, int max_batch, const GpuOptions& options = {});

  // Runs layers [0, layer_count) on n samples (see backend.h for the layouts). Throws
  // std::invalid_argument for n outside [1, max_batch] or layer_count outside [1, layers],
  // GpuError when a call fails. After an error that leaves the CUDA context unusable (an illegal
  // address, a device-side assert, ...), every later forward() and top_k() throws GpuError without
  // running: the process must be restarted.
  void forward(const float* input, int n, float* output, std::size_t layer_count);

  // Backend::top_k on the device (top_k.h): only n * k indices and scores come back. Throws
  // std::invalid_argument for a bad n or k, or a last layer beyond top_k.h's limits.
  void top_k(const float* input, int n, int k, int* classes, float* scores);

  // Backend::last_timing (backend.h): the device time of the last forward() or top_k() call,
  // graphed or direct; nullopt before the first call, after one that threw (a bad argument too),
  // or when its events could not be read (logged once).
  const std::optional<BatchTiming>& last_timing() const { return last_timing_; }

  // "NVIDIA H200 (sm_90), cuDNN 9.19.0, CUDA runtime 13.0"
  const std::string& description() const { return description_; }
  const Plan& plan() const { return plan_; }
  const std::vector<ConvolutionChoice>& convolutions() const { return convolutions_; }  // per step
  // Where the constructor spent its time (Backend::startup_phases), in order.
  const std::vector<StartupPhase>& startup_phases() const { return startup_.phases(); }

 private:
  // One distinct pass: what a CUDA graph captures. k == 0: forward() of layer_count layers.
  struct Pass {
    int n = 0;
    std::size_t layer_count = 0;
    int k = 0;
    bool operator<(const Pass& o) const {
      return n != o.n ? n < o.n : layer_count != o.layer_count ? layer_count < o.layer_count : k < o.k;
    }
  };
  struct GraphEntry {
    GraphExec exec;
    bool direct = false;  // capture or instantiation failed: this pass runs its calls directly
    std::uint64_t last_use = 0;
  };

  // Activation `activation` (Plan::activations()) at the plan's current batch size, to read or to
  // write; its whole buffer (max_batch samples).
  TensorIn tensor_in(std::size_t activation) const;
  TensorOut tensor_out(std::size_t activation);
  DeviceIn in(std::size_t activation) const;
  DeviceOut out(std::size_t activation);
  void log(const std::string& line) const;

  // weights.cpp: every layer's parameters on the device, once; and the float ones of a step that
  // falls back (synchronises the stream: the host copies are freed on return).
  void upload_weights();
  void upload_float_weights(const Step& step);

  // passes.cpp: one forward() or top_k() pass, direct or as a CUDA graph, and its timing.
  void execute(const Pass& pass, const float* input);  // staging in, run or replay, one sync
  // The CUDA graph path of execute(). True when it has already read the pass's timing (the first
  // call of a pass: read before the capture, which re-records the events as graph nodes).
  bool replay(const Pass& pass);
  GraphEntry capture(const Pass& pass);
  // Every copy, call, kernel and timing event of a pass; no sync. `capturing`: inside a stream
  // capture (the timing events must then become event-record nodes of the graph).
  void enqueue(const Pass& pass, bool capturing);
  // The top-k results of a pass (n x k classes and scores) into pinned staging, timed as its d2h copy.
  void copy_top_k(const Pass& pass, bool capturing);
  void record(cudaEvent_t event, bool capturing);  // one timing event on the stream
  void read_timing();                              // the events of the completed pass into last_timing_
  DeviceIn float_output(std::size_t activation, int n);

  // steps.cpp: the calls of one step.
  void run_step(std::size_t step_index, std::size_t layer_count, bool capturing);

  // convolution.cpp (running the steps) and convolution_algorithms.cpp (choose_algorithms and its probes)
  // The operands of a convolution call covering the first `stop` layers of a step: the plan's own
  // descriptors and buffers, or (float_fallback) Step::fallback's on the float scratch buffers.
  struct ConvolutionOperands {
    TensorIn x;
    FilterIn w;
    cudnnConvolutionDescriptor_t convolution;
    TensorIn bias;  // the layer's, the folded one, or zero_bias_
    TensorIn z;     // the residual when add_z (fallback_z_ for a float fallback), else zero_z_; y's shape
    bool add_z;     // the step's residual add is among the `stop` layers: alpha2 = 1
    TensorOut y;
    TensorIn y_in;  // y's memory to read back (the in-place ReLU of the separate calls)
  };
  ConvolutionOperands convolution_operands(const Step& step, bool float_fallback, std::size_t stop);
  void choose_algorithms();
  // Uploads the float weights of a step that falls back and grows fallback_x_, fallback_y_ (and fallback_z_) for
  // it; grows the workspace to `bytes` while probing. Build time only (graphs keep the addresses).
  void prepare_float_fallback(const Step& step);
  void reserve_workspace(std::size_t bytes);
  void replace_workspace(std::size_t bytes);  // drains the stream, drops the CUDA graphs
  // The first pass at a batch size other than 1 and max_batch checks the chosen algorithms'
  // workspace there, and grows it if that size needs more (convolution_algorithms.cpp).
  void prepare_batch_size(int n);
  // Probes: run the call at n = max_batch and n = 1 (the plan's current one first) with exactly
  // `workspace` bytes.
  bool fused_call_runs(const Step& step, bool float_fallback, cudnnConvolutionFwdAlgo_t algo, std::size_t workspace);
  bool plain_call_runs(const Step& step, bool float_fallback, cudnnConvolutionFwdAlgo_t algo, std::size_t workspace);
  bool call_runs(const Step& step, const char* name, const std::function<cudnnStatus_t()>& call);
  // `stop`: the layers of the step that run (1 = the convolution alone; see run_convolution).
  cudnnStatus_t conv_bias_activation(const Step& step, bool float_fallback, cudnnConvolutionFwdAlgo_t algo,
                                     std::size_t stop, std::size_t workspace);
  cudnnStatus_t plain_convolution(const Step& step, bool float_fallback, cudnnConvolutionFwdAlgo_t algo,
                                  std::size_t stop, std::size_t workspace);
  // `capturing`: inside a stream capture, where a fused call that declines throws instead of being
  // recorded in fused_declined_ (the pass then runs directly, see capture()).
  void run_convolution(const Step& step, const ConvolutionChoice& choice, std::size_t stop, bool capturing);
  void convolution_calls(const Step& step, const ConvolutionChoice& choice, std::size_t stop, bool capturing);

  // Declaration order is construction order: the device is selected before the stream and the
  // handle are created, and everything on the device is released before them. The timer starts
  // first, so that its first phase covers the device selection.
  StartupTimer startup_;
  GpuOptions options_;
  std::string device_name_;  // "NVIDIA H200 (sm_90)"
  std::string description_;
  Stream stream_;
  // Timing events of a pass, in stream order: before and after the input copy, before and after
  // the result copy.
  Event h2d_start_;
  Event h2d_end_;
  Event d2h_start_;
  Event d2h_end_;
  CudnnHandle handle_;
  Kernels kernels_;  // the backend's own kernels, loaded for this device
  Plan plan_;
  std::vector<DeviceBuffer> buffers_;            // one per Plan::buffer_bytes(), max_batch samples
  std::vector<LayerWeights> weights_;            // one per layer
  ConstantBuffer zero_bias_;                     // zeros for fused convolutions without a bias
  ConstantBuffer zero_z_;                        // zeros: the fused convolutions' z (residual) operand
  std::vector<ConvolutionChoice> convolutions_;  // one per step (used by Convolution steps only)
  DeviceBuffer workspace_;                       // shared by every convolution
  DeviceBuffer fallback_x_;                      // float NCHW input of a step that falls back
  DeviceBuffer fallback_y_;                      // and its float NCHW output (both max_batch samples)
  DeviceBuffer fallback_z_;                      // and its residual converted to float NCHW
  DeviceBuffer input_float_;                     // Fp16: the float NCHW input before conversion
  DeviceBuffer output_float_;                    // Fp16: a half output converted to float NCHW
  DeviceBuffer top_classes_;                     // max_batch x output size ints
  DeviceBuffer top_scores_;                      // max_batch x output size floats
  PinnedBuffer input_staging_;                   // max_batch input samples
  PinnedBuffer output_staging_;                  // max_batch samples of the largest layer output
  PinnedBuffer top_staging_;                     // top_classes_ then top_scores_ (n * k of each used)
  // (first layer of a Convolution step, batch size) where the fused call declined during a forward
  // pass (convolution.cpp): that step runs its separate calls at that batch size from then on.
  std::set<std::pair<std::size_t, int>> fused_declined_;
  // Per batch size (index n): whether its workspace was checked (prepare_batch_size); allocated once.
  std::vector<bool> batch_size_ready_;
  std::map<Pass, GraphEntry> graphs_;
  std::uint64_t graph_clock_ = 0;
  std::optional<BatchTiming> last_timing_;
  bool timing_failure_logged_ = false;
  // Non-empty once a pass met an error that leaves the CUDA context unusable: that error, named.
  std::string broken_;
};

}  // namespace infer::cudnn
