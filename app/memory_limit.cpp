#include "app/memory_limit.h"

#include <cctype>
#include <cmath>
#include <string>

#include "infer/errors.h"
#include "platform/byte_size.h"

namespace infer::app {
namespace {

constexpr const char* kUnits = "KMGT";

// The smallest whole number of the largest unit that holds `bytes`: a --max-memory value to suggest.
std::string size_option(std::uint64_t bytes) {
  for (int i = 3; i >= 0; --i) {
    const std::uint64_t unit = std::uint64_t{1} << (10 * (i + 1));
    if (bytes >= unit || i == 0) return std::to_string(bytes / unit + (bytes % unit != 0)) + kUnits[i];
  }
  return std::to_string(bytes);
}

}  // namespace

std::optional<std::uint64_t> parse_size(std::string_view text) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    return i > start;
  };
  if (!digits()) return std::nullopt;
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (!digits()) return std::nullopt;
  }
  const std::string number(text.substr(0, i));
  std::string_view unit = text.substr(i);
  long double scale = 1.0L;
  if (!unit.empty()) {
    const char letter = static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
    for (int u = 0; kUnits[u] != '\0'; ++u) {
      if (letter == kUnits[u]) scale = std::ldexp(1.0L, 10 * (u + 1));
    }
    if (scale != 1.0L) unit.remove_prefix(1);
    if (unit == "B" || unit == "b" || (scale != 1.0L && (unit == "iB" || unit == "ib"))) unit = {};
    if (!unit.empty()) return std::nullopt;
  }
  long double value = 0.0L;
  try {
    value = std::stold(number);
  } catch (const std::out_of_range&) {  // thousands of digits
    return std::nullopt;
  }
  const long double bytes = std::floor(value * scale);
  if (bytes < 1.0L || bytes > 18446744073709551615.0L) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

std::string memory_limit_message(const MemoryLimitError& e) {
  return e.file() + ": the model needs " + bytes_string(e.needed()) + " of memory for one sample (" + e.breakdown() +
         "), more than the --max-memory limit of " + bytes_string(e.limit()) + ": raise the limit (--max-memory " +
         size_option(e.needed()) + ") if this machine has that much memory, or use a smaller input or fewer channels";
}

std::string batch_reduced_message(const Notice& n) {
  return "--batch " + std::to_string(n.requested_batch) + " would need " + bytes_string(n.needed) +
         " of memory, more than the --max-memory limit of " + bytes_string(n.limit) + "; running batches of " +
         std::to_string(n.batch);
}

}  // namespace infer::app
