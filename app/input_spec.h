// The model's input description with the command line's preprocessing overrides applied.
#pragma once

#include "model/network.h"
#include "options.h"

namespace infer::app {

// model with --invert, --resize, --resize-size, --channel-order, --mean and --std applied. Throws
// std::invalid_argument (a usage error) naming the option when a value does not fit the model: a
// --mean or --std with another number of values than the model has channels, a --std that is not
// positive, a --resize-size smaller than the input or given without crop.
InputSpec effective_input(const Options& options, const InputSpec& model);

}  // namespace infer::app
