// One model as the server offers it: a Classifier behind a dynamic batcher, its tensors as the
// protocol names them, and its metrics.
//
// Tensors (Triton's model configuration, max_batch_size > 0, so every shape starts with the batch):
//   input  "input"   FP32  [-1, C, H, W]   preprocessed samples, as Classifier::run takes them
//   input  "image"   BYTES [-1, 1]         encoded images (PNG, JPEG, ...), preprocessed as the model declares
//   output "scores"  FP32  [-1, classes]   the network's outputs (probabilities when it ends with a softmax)
// A request sends exactly one of the two inputs. Asking for "scores" with the classification
// parameter k returns, per sample, the k best as Triton's "score:index[:label]" strings (BYTES).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "infer/classifier.h"
#include "serve/batcher.h"
#include "serve/metrics.h"
#include "serve/tensor_data.h"
#include "serve/tensors.h"
#include "serve/worker_pool.h"

namespace infer::serve {

inline constexpr const char* kTensorInput = "input";
inline constexpr const char* kImageInput = "image";
inline constexpr const char* kScoresOutput = "scores";
inline constexpr const char* kModelVersion = "1";

// A tensor of the model's metadata; shape -1 is the batch.
struct TensorDescription {
  std::string name;
  std::string datatype;
  std::vector<std::int64_t> shape;
};

class ServedModel {
 public:
  // Takes the Classifier (built by the caller, who decides device and options); the batch is at most
  // the Classifier's max_batch(). decoders and metrics outlive the model.
  ServedModel(std::string name, Classifier classifier, BatcherOptions batching, WorkerPool& decoders,
              ModelMetrics& metrics);
  ~ServedModel();  // stops its batcher; the metrics no longer read its queue

  // Runs a request for this model. Throws ServeError: InvalidArgument for a request the model cannot
  // take (it names the tensor, or the image element and its problem), NotFound for another version,
  // Unavailable when the queue is full, Internal when the backend fails.
  InferResponse infer(const InferRequest& request);

  const std::string& name() const { return name_; }
  std::vector<TensorDescription> inputs() const;
  std::vector<TensorDescription> outputs() const;
  int max_batch() const { return batching_.max_batch; }
  // What one request for this model may hold: a batch of samples, or of images.
  RequestLimits limits() const {
    const auto batch = static_cast<std::size_t>(batching_.max_batch);
    return {batch * classifier_.input_size(), batch};
  }
  const BatcherOptions& batching() const { return batching_; }
  const Classifier& classifier() const { return classifier_; }
  ModelMetrics& metrics() { return metrics_; }
  int queued_samples() const { return batcher_->queued_samples(); }  // waiting for a forward pass now

 private:
  void decode_images(const InputTensor& images, int n, float* samples);
  OutputTensor scores_output(const RequestedOutput& spec, const std::vector<float>& scores, int n) const;

  std::string name_;
  Classifier classifier_;
  BatcherOptions batching_;
  WorkerPool& decoders_;
  ModelMetrics& metrics_;
  std::unique_ptr<Batcher> batcher_;  // last: its thread stops before the Classifier goes
};

}  // namespace infer::serve
