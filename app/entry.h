// The infer command with its arguments in UTF-8: main() (main_posix.cpp) passes them as they came,
// wmain() (main_windows.cpp) converts them from UTF-16 first. Returns the exit status (exit_codes.h).
#pragma once

namespace infer::app {

int main_utf8(int argc, char** argv);

}  // namespace infer::app
