#include "app/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

namespace infer::app {

std::size_t stdout_terminal_width() {
  if (isatty(STDOUT_FILENO) != 1) return 0;
  if (const std::size_t columns = columns_from_environment()) return columns;
  struct winsize size {};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return kDefaultTerminalWidth;  // a serial line, say, that knows no size
}

}  // namespace infer::app
