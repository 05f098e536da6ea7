// The Classifier: a model, its backend and the buffers of one batch, built once.
#include "infer/classifier.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/threads.h"
#include "image/load_image.h"
#include "image/preprocess.h"
#include "platform/install_layout.h"
#include "api/setup.h"

namespace infer {

struct Classifier::Impl {
  Impl(const std::filesystem::path& model_path, const ClassifierOptions& o)
      : manifest(start(o)),
        model(api::load_verified_model(model_path, manifest ? &*manifest : nullptr)),
        batch(api::batch_within_memory_limit(o, model)),
        input(api::effective_input(o.preprocessing, model.network.input())) {
    const Network& net = model.network;
    sample = net.input().dims.size();
    classes = net.output_dims().size();
    ends_with_softmax = net.layers().back().kind == LayerKind::Softmax;
    host_softmax = !ends_with_softmax && o.softmax;
    for (std::size_t i = 0; i < classes; ++i) {
      names.push_back(i < net.input().labels.size() ? net.input().labels[i] : "class " + std::to_string(i));
    }
    backend = api::choose_backend(o, net, batch, manifest ? &*manifest : nullptr);
    const auto b = static_cast<std::size_t>(backend->max_batch());
    samples.resize(b * sample);
    logits.resize(host_softmax ? b * classes : 0);
    top_classes.resize(b * classes);
    top_scores.resize(b * classes);
  }

  int checked_k(int k) const {
    if (k < 1) throw OptionError("k", "must be at least 1, found " + std::to_string(k));
    return static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(k), classes));
  }

  // The k best of the n samples in `samples`, into top_classes/top_scores (n x k).
  void select(const float* in, int n, int k) {
    if (!host_softmax) {
      backend->top_k(in, n, k, top_classes.data(), top_scores.data());
      return;
    }
    backend->forward(in, n, logits.data());
    for (int i = 0; i < n; ++i) {
      float* row = logits.data() + static_cast<std::size_t>(i) * classes;
      const float m = *std::max_element(row, row + classes);
      float sum = 0.0f;
      for (std::size_t c = 0; c < classes; ++c) sum += row[c] = std::exp(row[c] - m);
      for (std::size_t c = 0; c < classes; ++c) row[c] /= sum;
      const std::size_t at = static_cast<std::size_t>(i) * static_cast<std::size_t>(k);
      select_top_k(row, classes, k, top_classes.data() + at, top_scores.data() + at);
    }
  }

  std::vector<Prediction> predictions(int i, int k) const {
    std::vector<Prediction> out;
    out.reserve(static_cast<std::size_t>(k));
    for (int j = 0; j < k; ++j) {
      const std::size_t at = static_cast<std::size_t>(i) * static_cast<std::size_t>(k) + static_cast<std::size_t>(j);
      const int index = top_classes[at];
      out.push_back({index, names[static_cast<std::size_t>(index)], top_scores[at]});
    }
    return out;
  }

  void preprocess_into(const std::filesystem::path& image, float* out) const {
    infer::preprocess(load_image(image, input.dims.c, input.preprocessing.alpha), input, out);
  }

  // The threads are set before anything runs; then the manifest is read.
  static std::optional<manifest::Manifest> start(const ClassifierOptions& o) {
    set_cpu_threads(o.threads);
    return api::manifest_to_verify(o);
  }

  std::optional<manifest::Manifest> manifest;  // the one verified against; nothing when not verifying
  LoadedModel model;
  int batch;        // within the memory limit
  InputSpec input;  // the model's, with the overrides
  std::size_t sample = 0;
  std::size_t classes = 0;
  bool ends_with_softmax = false;
  bool host_softmax = false;
  std::vector<std::string> names;  // one per class
  std::unique_ptr<Backend> backend;
  // One batch, allocated once: the inputs, the logits (for a softmax on the host) and the k best.
  std::vector<float> samples;
  std::vector<float> logits;
  std::vector<int> top_classes;
  std::vector<float> top_scores;
};

Classifier::Classifier(const std::filesystem::path& model, const ClassifierOptions& options) {
  const std::lock_guard<std::mutex> lock(api::setup_mutex());
  impl_ = std::make_unique<Impl>(model, options);
}
Classifier::~Classifier() = default;
Classifier::Classifier(Classifier&&) noexcept = default;
Classifier& Classifier::operator=(Classifier&&) noexcept = default;

std::vector<Prediction> Classifier::classify(const std::filesystem::path& image, int k) {
  k = impl_->checked_k(k);
  impl_->preprocess_into(image, impl_->samples.data());
  impl_->select(impl_->samples.data(), 1, k);
  return impl_->predictions(0, k);
}

std::vector<Classification> Classifier::classify_batch(const std::vector<std::filesystem::path>& images, int k) {
  k = impl_->checked_k(k);
  Impl& m = *impl_;
  std::vector<Classification> out(images.size());
  std::vector<std::size_t> slots;  // the image of each decoded sample in the batch
  slots.reserve(static_cast<std::size_t>(m.backend->max_batch()));
  std::size_t next = 0;
  while (next < images.size()) {
    slots.clear();
    while (next < images.size() && slots.size() < static_cast<std::size_t>(m.backend->max_batch())) {
      try {
        m.preprocess_into(images[next], m.samples.data() + slots.size() * m.sample);
        slots.push_back(next);
      } catch (const InputError& e) {
        out[next].error = e.what();
      }
      ++next;
    }
    if (slots.empty()) continue;
    m.select(m.samples.data(), static_cast<int>(slots.size()), k);
    for (std::size_t s = 0; s < slots.size(); ++s) out[slots[s]].top = m.predictions(static_cast<int>(s), k);
  }
  return out;
}

std::vector<Prediction> Classifier::classify(const float* sample, int k) {
  k = impl_->checked_k(k);
  impl_->select(sample, 1, k);
  return impl_->predictions(0, k);
}

std::vector<std::vector<Prediction>> Classifier::classify_samples(const float* samples, int n, int k) {
  if (n < 1) throw OptionError("n", "must be at least 1, found " + std::to_string(n));
  k = impl_->checked_k(k);
  std::vector<std::vector<Prediction>> out;
  out.reserve(static_cast<std::size_t>(n));
  const int batch = impl_->backend->max_batch();
  for (int done = 0; done < n; done += batch) {
    const int now = std::min(batch, n - done);
    impl_->select(samples + static_cast<std::size_t>(done) * impl_->sample, now, k);
    for (int i = 0; i < now; ++i) out.push_back(impl_->predictions(i, k));
  }
  return out;
}

void Classifier::preprocess(const std::filesystem::path& image, float* sample) const {
  impl_->preprocess_into(image, sample);
}

void Classifier::preprocess(const unsigned char* bytes, std::size_t size, float* sample,
                            const std::string& name) const {
  infer::preprocess(decode_image(name, bytes, size, impl_->input.dims.c, impl_->input.preprocessing.alpha),
                    impl_->input, sample);
}

void Classifier::run(const float* samples, int n, float* outputs) {
  if (n < 1) throw OptionError("n", "must be at least 1, found " + std::to_string(n));
  const int batch = impl_->backend->max_batch();
  for (int done = 0; done < n; done += batch) {
    const int now = std::min(batch, n - done);
    impl_->backend->forward(samples + static_cast<std::size_t>(done) * impl_->sample, now,
                            outputs + static_cast<std::size_t>(done) * impl_->classes);
  }
}

InputShape Classifier::input_shape() const {
  const Dims& d = impl_->input.dims;
  return {d.c, d.h, d.w};
}
std::size_t Classifier::input_size() const { return impl_->sample; }
std::size_t Classifier::output_size() const { return impl_->classes; }
const std::vector<std::string>& Classifier::labels() const { return impl_->model.network.input().labels; }
bool Classifier::outputs_probabilities() const { return impl_->ends_with_softmax || impl_->host_softmax; }
const char* Classifier::device() const { return impl_->backend->device(); }
std::string Classifier::backend() const { return impl_->backend->description(); }
int Classifier::max_batch() const { return impl_->backend->max_batch(); }
std::string Classifier::model_name() const { return impl_->model.network.name(); }
const std::filesystem::path& Classifier::model_path() const { return impl_->model.toml_path; }

void set_cpu_threads(int n) {
  if (n > 0) cpu::set_threads(n);
}

const std::vector<std::string>& image_file_extensions() { return image_extensions(); }

ModelInfo model_info(const std::filesystem::path& model) {
  ModelInfo info;
  info.path = model.empty() ? default_model_path() : model;
  const LoadedModel loaded = load_model(info.path);
  const Network& net = loaded.network;
  info.name = net.name();
  info.input = {net.input().dims.c, net.input().dims.h, net.input().dims.w};
  info.classes = net.output_dims().size();
  info.layers = net.layers().size();
  return info;
}

}  // namespace infer
