// --max-memory: the limit on the memory a run plans for its model (backends/cpu/memory_plan.h). The
// classifier keeps its batch within it (ClassifierOptions::max_memory), checked after the model is
// loaded and before a backend is built, so nothing that grows with the model's activations is
// allocated for a model that is refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "infer/classifier.h"

namespace infer::app {

// A size as --max-memory takes it: a number of bytes, whole or decimal, optionally followed by K, M,
// G or T (powers of 1024, either case, optionally followed by "B" or "iB"): "4G", "4GiB", "512m",
// "1.5G", "1048576". nullopt for anything else, for less than one byte and for more than 2^64 - 1.
std::optional<std::uint64_t> parse_size(std::string_view text);

// The classifier's MemoryLimitError, in the command line's words: the sizes, the --max-memory limit
// and the value that would do.
std::string memory_limit_message(const MemoryLimitError& e);
// The BatchReduced notice in the command line's words (--batch, --max-memory).
std::string batch_reduced_message(const Notice& n);

}  // namespace infer::app
