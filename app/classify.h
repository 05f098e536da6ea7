// Classifying a list of images and printing the results.
#pragma once

#include <iosfwd>
#include <stdexcept>
#include <string>

#include "model/backend.h"
#include "model/model_file.h"
#include "options.h"

namespace infer::app {

struct RunCounts {
  int classified = 0;
  int failed = 0;  // inputs that could not be read or decoded; each was reported on stderr
};

// The results could not be written (stdout closed, a full disk, a pipe whose reader left while
// SIGPIPE is ignored). what(): the system's reason, e.g. "No space left on device".
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Expands directories, then decodes, preprocesses and classifies the images in batches of
// backend.max_batch(), printing one line (or JSON object) per image to out in input order and one
// line per bad input to err; in --json mode a bad input's error object takes its place among the
// results. A bad image does not stop the others. out is flushed after every batch: a write that
// fails stops the run with OutputError, so a closed output costs at most one batch of work.
// Throws GpuError if the GPU fails during the run.
// `input`: the model's input description with the command line's overrides (input_spec.h).
RunCounts classify_all(const Options& options, const LoadedModel& model, const InputSpec& input, Backend& backend,
                       std::ostream& out, std::ostream& err);

}  // namespace infer::app
