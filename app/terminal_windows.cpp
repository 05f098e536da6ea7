#include "app/terminal.h"

#include <windows.h>

namespace infer::app {

std::size_t stdout_terminal_width() {
  // Fails for anything but a console: a pipe, a file (and a mintty window, which is a pipe).
  CONSOLE_SCREEN_BUFFER_INFO info;
  if (!GetConsoleScreenBufferInfo(GetStdHandle(STD_OUTPUT_HANDLE), &info)) return 0;
  if (const std::size_t columns = columns_from_environment()) return columns;
  // The visible window, not the screen buffer (as wide as 9999 columns on old consoles).
  const int columns = info.srWindow.Right - info.srWindow.Left + 1;
  return columns > 0 ? static_cast<std::size_t>(columns) : kDefaultTerminalWidth;
}

}  // namespace infer::app
