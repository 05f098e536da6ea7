#include "app/classify.h"

#include <filesystem>
#include <iostream>

#include "app/inputs.h"
#include "app/printer.h"
#include "app/progress.h"

namespace infer::app {

RunCounts classify_all(const Options& options, Classifier& classifier, std::ostream& out, std::ostream& err) {
  const auto batch = static_cast<std::size_t>(classifier.max_batch());
  // A model that does not end with a softmax gives scores, printed as such unless --softmax asked
  // for probabilities: no softmax is added silently.
  const bool scores = !classifier.outputs_probabilities();

  // The inputs of the current batch, in input order: the readable ones also in `paths`, for the
  // classifier; the others (a directory with no image, say) with their message. Printed together
  // after the batch, so --json keeps input order.
  std::vector<const Input*> taken;
  std::vector<std::filesystem::path> paths;
  taken.reserve(batch);
  paths.reserve(batch);

  Printer printer(options, classifier, out, err);
  RunCounts counts;
  std::vector<Input> all = expand_inputs(options.inputs);
  const std::size_t total = all.size();
  const std::vector<Input> inputs = select_shard(std::move(all), options.shard.index, options.shard.count);
  if (options.shard.count > 1) {
    err << "infer: shard " << options.shard.index << "/" << options.shard.count << ": " << inputs.size() << " of "
        << total << " inputs\n";
  }
  Progress progress(err, inputs.size(), &err == &std::cerr && stderr_is_terminal());
  std::size_t next = 0;
  while (next < inputs.size()) {
    progress.update(next);
    taken.clear();
    paths.clear();
    while (next < inputs.size() && paths.size() < batch) {
      const Input& in = inputs[next++];
      taken.push_back(&in);
      if (in.error.empty()) paths.push_back(arg_path(in.path));
    }
    const std::vector<Classification> results = classifier.classify_batch(paths, options.top_k);
    std::size_t slot = 0;
    for (const Input* in : taken) {
      const std::string error = in->error.empty() ? results[slot].error : in->path + ": " + in->error;
      if (in->error.empty()) ++slot;
      if (!error.empty()) {
        progress.clear();
        printer.error(*in, error);
        ++counts.failed;
        continue;
      }
      printer.result(*in, results[slot - 1].top, scores);
      ++counts.classified;
    }
    printer.flush();
  }
  progress.finish();
  return counts;
}

}  // namespace infer::app
