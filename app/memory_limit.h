// --max-memory: the limit on the memory a run plans for its model (model/memory_plan.h), and the
// batch size that keeps within it. Checked after the model is loaded and before a backend is built,
// so nothing that grows with the model's activations is allocated for a model that is refused.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string_view>

#include "model/model_file.h"
#include "options.h"

namespace infer::app {

// A size as --max-memory takes it: a number of bytes, whole or decimal, optionally followed by K, M,
// G or T (powers of 1024, either case, optionally followed by "B" or "iB"): "4G", "4GiB", "512m",
// "1.5G", "1048576". nullopt for anything else, for less than one byte and for more than 2^64 - 1.
std::optional<std::uint64_t> parse_size(std::string_view text);

// The batch size to build the backend for: options.batch when the model's memory plan at that batch
// is within options.max_memory; else the largest batch that is, with a one-line notice on err (the
// results do not depend on the batch size). Throws InputError naming the model TOML, with the bytes
// one sample needs, the limit and how to raise it, when even one sample is over the limit.
int batch_within_memory_limit(const Options& options, const LoadedModel& model, std::ostream& err);

}  // namespace infer::app
