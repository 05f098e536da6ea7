#include "serve/served_model.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <numeric>

#include "serve/serve_error.h"
#include "serve/tensor_data.h"

namespace infer::serve {
namespace {

std::uint64_t ns(std::chrono::nanoseconds d) {
  return static_cast<std::uint64_t>(std::max<std::int64_t>(d.count(), 0));
}

// Triton's classification string: the score with 6 decimals, the index, and the label when the model has one.
std::string classification_entry(float score, int index, const std::vector<std::string>& labels) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%f:%d", static_cast<double>(score), index);
  std::string s = buf;
  if (static_cast<std::size_t>(index) < labels.size()) s += ":" + labels[static_cast<std::size_t>(index)];
  return s;
}

}  // namespace

ServedModel::ServedModel(std::string name, Classifier classifier, BatcherOptions batching, WorkerPool& decoders,
                         ModelMetrics& metrics)
    : name_(std::move(name)),
      classifier_(std::move(classifier)),
      batching_(batching),
      decoders_(decoders),
      metrics_(metrics) {
  batching_.max_batch = std::max(1, std::min(batching_.max_batch, classifier_.max_batch()));
  batching_.max_queue = std::max(batching_.max_queue, batching_.max_batch);
  batcher_ = std::make_unique<Batcher>([this](const float* in, int n, float* out) { classifier_.run(in, n, out); },
                                       classifier_.input_size(), classifier_.output_size(), batching_,
                                       [this](int n) { metrics_.batch_size.observe(static_cast<std::uint64_t>(n)); });
  metrics_.queued_samples = [this] { return batcher_->queued_samples(); };
}

ServedModel::~ServedModel() { metrics_.queued_samples = nullptr; }

std::vector<TensorDescription> ServedModel::inputs() const {
  const InputShape s = classifier_.input_shape();
  return {{kTensorInput, "FP32", {-1, s.channels, s.height, s.width}}, {kImageInput, "BYTES", {-1, 1}}};
}

std::vector<TensorDescription> ServedModel::outputs() const {
  return {{kScoresOutput, "FP32", {-1, static_cast<std::int64_t>(classifier_.output_size())}}};
}

void ServedModel::decode_images(const InputTensor& images, int n, float* samples) {
  const std::size_t size = classifier_.input_size();
  // Each element's failure as it was thrown: storing it allocates nothing, so a pool thread never
  // throws out of its task.
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  decoders_.parallel_for(static_cast<std::size_t>(n), [&](std::size_t i) {
    try {
      const std::string& bytes = images.bytes[i];
      classifier_.preprocess(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), samples + i * size,
                             "input \"" + images.name + "\" element " + std::to_string(i));
    } catch (...) {
      errors[i] = std::current_exception();
    }
  });
  for (const std::exception_ptr& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const InputError& x) {
      throw invalid(x.what());  // the first bad element names itself; the request fails, not the batch
    } catch (const std::exception& x) {
      throw ServeError(ErrorKind::Internal, std::string("decoding an image: ") + x.what());
    }
  }
}

OutputTensor ServedModel::scores_output(const RequestedOutput& spec, const std::vector<float>& scores, int n) const {
  const std::size_t classes = classifier_.output_size();
  OutputTensor t;
  t.name = kScoresOutput;
  t.binary = spec.binary;
  if (spec.classification == 0) {
    t.datatype = "FP32";
    t.shape = {n, static_cast<std::int64_t>(classes)};
    t.fp32 = scores;
    return t;
  }
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(spec.classification), classes);
  t.datatype = "BYTES";
  t.shape = {n, static_cast<std::int64_t>(k)};
  std::vector<int> order(classes);
  for (int i = 0; i < n; ++i) {
    const float* row = scores.data() + static_cast<std::size_t>(i) * classes;
    std::iota(order.begin(), order.end(), 0);
    // Best first; equal scores by index, so that the order does not depend on the sort.
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    for (std::size_t j = 0; j < k; ++j)
      t.bytes.push_back(classification_entry(row[order[j]], order[j], classifier_.labels()));
  }
  return t;
}

InferResponse ServedModel::infer(const InferRequest& request) {
  if (!request.version.empty() && request.version != kModelVersion)
    throw ServeError(ErrorKind::NotFound, "model \"" + name_ + "\" has no version \"" + request.version +
                                              "\" (its one version is " + kModelVersion + ")");
  if (request.inputs.size() != 1)
    throw invalid("model \"" + name_ + "\" takes one input, \"" + kTensorInput + "\" (FP32) or \"" + kImageInput +
                  "\" (BYTES); the request has " + std::to_string(request.inputs.size()));
  const InputTensor& in = request.inputs[0];
  const std::size_t size = classifier_.input_size();
  std::vector<float> decoded;
  const float* samples = nullptr;
  int n = 0;
  if (in.name == kTensorInput) {
    const InputShape s = classifier_.input_shape();
    const std::vector<std::int64_t> want = {s.channels, s.height, s.width};
    if (in.datatype != "FP32") throw invalid("input \"input\": datatype must be FP32, found " + in.datatype);
    if (in.shape.size() != 4 || !std::equal(want.begin(), want.end(), in.shape.begin() + 1))
      throw invalid("input \"input\": shape must be [n, " + std::to_string(s.channels) + ", " +
                    std::to_string(s.height) + ", " + std::to_string(s.width) + "], found " + shape_text(in.shape));
    n = static_cast<int>(std::min<std::int64_t>(in.shape[0], INT32_MAX));
    samples = in.fp32.data();
  } else if (in.name == kImageInput) {
    if (in.datatype != "BYTES") throw invalid("input \"image\": datatype must be BYTES, found " + in.datatype);
    if (in.shape.empty() || in.shape.size() > 2 || (in.shape.size() == 2 && in.shape[1] != 1))
      throw invalid("input \"image\": shape must be [n] or [n, 1], found " + shape_text(in.shape));
    n = static_cast<int>(std::min<std::int64_t>(in.shape[0], INT32_MAX));
  } else {
    throw invalid("model \"" + name_ + "\" has no input \"" + in.name + "\" (its inputs: \"" + kTensorInput +
                  "\" FP32, \"" + kImageInput + "\" BYTES)");
  }
  if (n < 1 || n > batching_.max_batch)
    throw invalid("input \"" + in.name + "\": batch " + std::to_string(n) + " is outside 1.." +
                  std::to_string(batching_.max_batch) + " (the model's max_batch_size)");
  for (const RequestedOutput& o : request.outputs) {
    if (o.name != kScoresOutput)
      throw invalid("model \"" + name_ + "\" has no output \"" + o.name + "\" (its output: \"" + kScoresOutput + "\")");
  }
  if (in.name == kImageInput) {
    decoded.resize(static_cast<std::size_t>(n) * size);
    decode_images(in, n, decoded.data());
    samples = decoded.data();
  }

  std::vector<float> scores(static_cast<std::size_t>(n) * classifier_.output_size());
  BatchTiming timing;
  bool ran = false;
  try {
    ran = batcher_->run(samples, n, scores.data(), timing);
  } catch (const std::exception& e) {
    throw ServeError(ErrorKind::Internal, "model \"" + name_ + "\": " + e.what());
  }
  if (!ran)
    throw ServeError(ErrorKind::Unavailable, "model \"" + name_ + "\": the queue is full (" +
                                                 std::to_string(batching_.max_queue) +
                                                 " samples, --max-queue); retry later");
  metrics_.queue_ns.observe(ns(timing.queued));
  metrics_.compute_ns.observe(ns(timing.compute));
  metrics_.images.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_relaxed);

  InferResponse r;
  r.model = name_;
  r.version = kModelVersion;
  r.id = request.id;
  if (request.outputs.empty()) {
    r.outputs.push_back(scores_output({kScoresOutput, 0, request.binary_output}, scores, n));
  } else {
    for (const RequestedOutput& o : request.outputs) r.outputs.push_back(scores_output(o, scores, n));
  }
  return r;
}

}  // namespace infer::serve
