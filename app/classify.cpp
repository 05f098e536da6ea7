#include "classify.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <ostream>
#include <variant>

#include <nlohmann/json.hpp>

#include "model/errors.h"
#include "model/image.h"

namespace infer::app {
namespace {

namespace fs = std::filesystem;

// One entry per image to classify, or an input that already failed (with its message).
struct Input {
  std::string path;
  std::string error;  // empty when the path is to be decoded
};

bool has_image_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  const auto& known = image_extensions();
  return std::find(known.begin(), known.end(), ext) != known.end();
}

std::vector<Input> expand(const std::vector<std::string>& args) {
  std::vector<Input> inputs;
  for (const std::string& arg : args) {
    std::error_code ec;
    if (!fs::is_directory(arg, ec)) {
      inputs.push_back({arg, ""});  // a file: decoded by content, whatever its extension
      continue;
    }
    std::vector<std::string> found;
    for (fs::directory_iterator it(arg, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code type_ec;
      if (it->is_regular_file(type_ec) && has_image_extension(it->path())) found.push_back(it->path().string());
    }
    if (ec) {
      inputs.push_back({arg, "cannot list directory: " + ec.message()});
      continue;
    }
    if (found.empty()) {
      inputs.push_back({arg, "directory contains no images (looked for .png .jpg .jpeg .bmp .pgm .ppm .pnm .gif .tga)"});
      continue;
    }
    std::sort(found.begin(), found.end());
    for (std::string& f : found) inputs.push_back({std::move(f), ""});
  }
  return inputs;
}

class Printer {
 public:
  Printer(const Options& options, const LoadedModel& model, const Backend& backend, std::ostream& out,
          std::ostream& err)
      : options_(options), labels_(model.network.input().labels), out_(out), err_(err), device_(backend.device()),
        backend_(backend.description()) {
    tag_ = backend.device() == std::string("cpu") ? "[cpu]" : "[" + backend.description() + "]";
  }

  void error(const Input& input, const std::string& message) {
    err_ << "infer: " << message << '\n' << std::flush;
    if (options_.json) {
      nlohmann::json j{{"file", input.path}, {"error", message}};
      out_ << dump(j) << '\n';
    }
  }

  // Pushes what was printed to the output; throws OutputError when it cannot be written.
  void flush() {
    errno = 0;
    out_.flush();
    if (!out_) throw OutputError(errno ? std::strerror(errno) : "write failed");
  }

  // The k best classes of one image, best first, with their probabilities.
  void result(const Input& input, const int* classes, const float* probs, int k) {
    if (options_.json) {
      nlohmann::json top = nlohmann::json::array();
      for (int i = 0; i < k; ++i) {
        const auto index = static_cast<std::size_t>(classes[i]);
        top.push_back({{"label", label(index)}, {"index", index}, {"prob", probs[i]}});
      }
      out_ << dump(nlohmann::json{{"file", input.path}, {"device", device_}, {"backend", backend_}, {"top", top}}) << '\n';
      return;
    }
    out_ << input.path << ':';
    for (int i = 0; i < k; ++i) {
      char prob[32];
      std::snprintf(prob, sizeof prob, "%.3f", static_cast<double>(probs[i]));
      out_ << (i ? " | " : " ") << label(static_cast<std::size_t>(classes[i])) << ' ' << prob;
    }
    out_ << "   " << tag_ << '\n';
  }

 private:
  static std::string dump(const nlohmann::json& j) {
    // Invalid UTF-8 in a file name is replaced rather than thrown: a line is always whole.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::string label(std::size_t index) const {
    return index < labels_.size() ? labels_[index] : "class " + std::to_string(index);
  }

  const Options& options_;
  const std::vector<std::string>& labels_;
  std::ostream& out_;
  std::ostream& err_;
  std::string device_;
  std::string backend_;  // "gpu: NVIDIA H200 (sm_90), cuDNN 9.19.0, ...": names the GPU, or the CPU stand-in in tests
  std::string tag_;
};

// "infer: 1200/10000 images" on stderr, rewritten in place with \r, when stderr is a terminal and the
// run has taken over a second; at most ten updates a second. Cleared before any other stderr line.
class Progress {
 public:
  Progress(std::ostream& err, std::size_t total)
      : err_(err), total_(total), enabled_(&err == &std::cerr && isatty(STDERR_FILENO) == 1) {}
  ~Progress() {
    if (shown_) err_ << '\n' << std::flush;
  }
  void update(std::size_t done) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - start_ < std::chrono::seconds(1) || now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    shown_ = true;
    err_ << "\rinfer: " << done << '/' << total_ << " images" << std::flush;
  }
  void clear() {
    if (shown_) err_ << "\r\033[K";
    shown_ = false;
  }

 private:
  std::ostream& err_;
  std::size_t total_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_;
};

// Turns logits into probabilities in place, for models that do not end with a softmax layer.
void softmax_rows(float* x, int rows, std::size_t classes) {
  for (int r = 0; r < rows; ++r) {
    float* row = x + static_cast<std::size_t>(r) * classes;
    const float m = *std::max_element(row, row + classes);
    float sum = 0.0f;
    for (std::size_t c = 0; c < classes; ++c) sum += row[c] = std::exp(row[c] - m);
    for (std::size_t c = 0; c < classes; ++c) row[c] /= sum;
  }
}

}  // namespace

RunCounts classify_all(const Options& options, const LoadedModel& model, Backend& backend, std::ostream& out,
                       std::ostream& err) {
  const Network& net = model.network;
  const std::size_t sample = net.input().dims.size();
  const std::size_t classes = net.output_dims().size();
  const bool ends_with_softmax = net.layers().back().kind == LayerKind::Softmax;
  const int batch = backend.max_batch();

  const int k = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(options.top_k), classes));

  // Allocated once for the whole run. A network ending with a softmax gives probabilities, and the
  // backend selects the k best itself (on the GPU only n*k results come back); otherwise every
  // logit is needed for the softmax denominators.
  std::vector<float> input(static_cast<std::size_t>(batch) * sample);
  std::vector<float> logits(ends_with_softmax ? 0 : static_cast<std::size_t>(batch) * classes);
  std::vector<int> top_classes(static_cast<std::size_t>(batch) * static_cast<std::size_t>(k));
  std::vector<float> top_probs(top_classes.size());
  // The inputs taken into the current batch, in input order: decoded ones have a slot in `input`,
  // failed ones their message. Printed together after the batch, so --json keeps input order.
  struct Taken {
    const Input* input;
    std::string error;  // empty: decoded into the next slot
  };
  std::vector<Taken> taken;
  taken.reserve(static_cast<std::size_t>(batch));

  Printer printer(options, model, backend, out, err);
  RunCounts counts;
  const std::vector<Input> inputs = expand(options.inputs);
  Progress progress(err, inputs.size());
  std::size_t next = 0;
  while (next < inputs.size()) {
    progress.update(next);
    taken.clear();
    int n = 0;
    while (next < inputs.size() && n < batch) {
      const Input& in = inputs[next++];
      if (!in.error.empty()) {
        taken.push_back({&in, in.path + ": " + in.error});
        continue;
      }
      try {
        const Image image = load_image(in.path, net.input().dims.c);
        preprocess(image, net.input(), options.invert, input.data() + static_cast<std::size_t>(n) * sample);
        taken.push_back({&in, ""});
        ++n;
      } catch (const InputError& e) {
        taken.push_back({&in, e.what()});
      }
    }
    if (n > 0 && ends_with_softmax) {
      backend.top_k(input.data(), n, k, top_classes.data(), top_probs.data());
    } else if (n > 0) {
      backend.forward(input.data(), n, logits.data());
      softmax_rows(logits.data(), n, classes);
      for (int i = 0; i < n; ++i) {
        const std::size_t at = static_cast<std::size_t>(i) * static_cast<std::size_t>(k);
        select_top_k(logits.data() + static_cast<std::size_t>(i) * classes, classes, k, top_classes.data() + at,
                     top_probs.data() + at);
      }
    }
    int slot = 0;
    for (const Taken& t : taken) {
      if (!t.error.empty()) {
        progress.clear();
        printer.error(*t.input, t.error);
        ++counts.failed;
        continue;
      }
      const std::size_t at = static_cast<std::size_t>(slot++) * static_cast<std::size_t>(k);
      printer.result(*t.input, top_classes.data() + at, top_probs.data() + at, k);
      ++counts.classified;
    }
    printer.flush();
  }
  return counts;
}

}  // namespace infer::app
