#include "classify.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "inputs.h"
#include "model/errors.h"
#include "model/image.h"
#include "model/preprocess.h"
#include "printer.h"
#include "progress.h"

namespace infer::app {
namespace {

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

RunCounts classify_all(const Options& options, const LoadedModel& model, const InputSpec& spec, Backend& backend,
                       std::ostream& out, std::ostream& err) {
  const Network& net = model.network;
  const std::size_t sample = net.input().dims.size();
  const std::size_t classes = net.output_dims().size();
  const bool ends_with_softmax = net.layers().back().kind == LayerKind::Softmax;
  const int batch = backend.max_batch();

  const int k = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(options.top_k), classes));

  // A network ending with a softmax gives probabilities. Any other gives scores, printed as such
  // unless --softmax asks for probabilities: no softmax is added silently.
  const bool host_softmax = !ends_with_softmax && options.softmax;
  const bool scores = !ends_with_softmax && !options.softmax;

  // Allocated once for the whole run. The backend selects the k best itself (on the GPU only n*k
  // results come back), except for a softmax on the host, which needs every logit.
  std::vector<float> input(static_cast<std::size_t>(batch) * sample);
  std::vector<float> logits(host_softmax ? static_cast<std::size_t>(batch) * classes : 0);
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
  const std::vector<Input> inputs = expand_inputs(options.inputs);
  Progress progress(err, inputs.size(), &err == &std::cerr && isatty(STDERR_FILENO) == 1);
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
        const Image image = load_image(in.path, spec.dims.c);
        preprocess(image, spec, input.data() + static_cast<std::size_t>(n) * sample);
        taken.push_back({&in, ""});
        ++n;
      } catch (const InputError& e) {
        taken.push_back({&in, e.what()});
      }
    }
    if (n > 0 && !host_softmax) {
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
      printer.result(*t.input, top_classes.data() + at, top_probs.data() + at, k, scores);
      ++counts.classified;
    }
    printer.flush();
  }
  progress.finish();
  return counts;
}

}  // namespace infer::app
