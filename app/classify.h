// Classifying a list of images and printing the results.
#pragma once

#include <iosfwd>

#include "model/backend.h"
#include "model/model_file.h"
#include "options.h"

namespace infer::app {

struct RunCounts {
  int classified = 0;
  int failed = 0;  // inputs that could not be read or decoded; each was reported on stderr
};

// Expands directories, then decodes, preprocesses and classifies the images in batches of
// backend.max_batch(), printing one line (or JSON object) per image to out in input order and one
// line per bad input to err. A bad image does not stop the others. Throws GpuError if the GPU
// fails during the run.
RunCounts classify_all(const Options& options, const LoadedModel& model, Backend& backend, std::ostream& out,
                       std::ostream& err);

}  // namespace infer::app
