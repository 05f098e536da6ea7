// How wide the terminal is that standard output writes to, for the tables the command prints
// (manifest::format_table, infer --version): those are wrapped on a terminal, to its width, and
// never into a pipe or a file, where a script reads each row as one line (as ls and git do).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <string>

namespace infer::app {

// Columns of the terminal on stdout; 0 when stdout is not a terminal (a pipe, a file): no wrapping.
// On a terminal the COLUMNS environment variable, when a positive number, is the width (as for
// ls); else the terminal's own (TIOCGWINSZ; the console window's on Windows), 80 when it says none.
// terminal_posix.cpp, terminal_windows.cpp.
std::size_t stdout_terminal_width();

// COLUMNS as a width: a decimal number from 1 to 100000; 0 (none) for anything else.
inline std::size_t columns_from_environment() {
  const char* value = std::getenv("COLUMNS");
  if (value == nullptr || *value < '0' || *value > '9') return 0;
  char* end = nullptr;
  const unsigned long columns = std::strtoul(value, &end, 10);
  return *end == '\0' && columns >= 1 && columns <= 100000 ? columns : 0;
}

// The width a terminal that reports none is taken to have.
constexpr std::size_t kDefaultTerminalWidth = 80;

}  // namespace infer::app
