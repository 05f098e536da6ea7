// A size in bytes for messages: the memory plan's sizes (backends/cpu/memory_plan.h) and the
// messages about them, the library's and the infer command's --max-memory.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace infer {

// Binary units with one decimal: "0 B", "1023 B", "1.5 KiB", "4.0 GiB", "7.3 TiB" (up to EiB).
inline std::string bytes_string(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  // 1023.96 KiB prints as "1.0 MiB", not "1024.0 KiB".
  while (value >= 1023.95 && unit + 1 < sizeof(units) / sizeof(units[0])) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f %s", value, units[unit]);
  return text;
}

}  // namespace infer
