// Classifying the command line's images and printing the results.
#pragma once

#include <iosfwd>
#include <stdexcept>
#include <string>

#include "infer/classifier.h"
#include "app/options.h"

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

// Expands directories, then classifies the images in batches of classifier.max_batch(), printing
// one line (or JSON object) per image to out in input order and one line per bad input to err; in
// --json mode a bad input's error object takes its place among the results. A bad image does not
// stop the others. out is flushed after every batch: a write that fails stops the run with
// OutputError, so a closed output costs at most one batch of work. Throws GpuError if the GPU fails
// during the run.
RunCounts classify_all(const Options& options, Classifier& classifier, std::ostream& out, std::ostream& err);

}  // namespace infer::app
