# Cross-compiling infer for Windows x64 with Debian's mingw-w64 (gcc 12, POSIX threads), the tests
# run under wine (tools/dev/wine-run.sh as CMake's emulator). tools/dev/windows.sh uses it:
#
#   cmake -S . -B build-windows --preset windows      (CMakePresets.json names this file)
#
# Only the mingw sysroot is searched for libraries and headers: Debian's CMake configs for the
# header-only libraries point at /usr/include, which must never be on this compiler's include path
# (glibc's headers would shadow mingw's). cmake/WindowsDeps.cmake stages those headers instead.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(_mingw x86_64-w64-mingw32)

set(CMAKE_C_COMPILER ${_mingw}-gcc-posix)
set(CMAKE_CXX_COMPILER ${_mingw}-g++-posix)
set(CMAKE_RC_COMPILER ${_mingw}-windres)

set(CMAKE_FIND_ROOT_PATH /usr/${_mingw})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Each .exe carries its C++ runtime (libstdc++, libgcc, winpthread) instead of importing mingw's
# DLLs, which a Windows machine does not have (wine has some of them in its own System32, so a
# test could pass under wine and fail on Windows): tests/windows/check_imports.cmake checks it.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static")

# ctest, gtest_discover_tests and add_test run the .exe files through wine.
set(CMAKE_CROSSCOMPILING_EMULATOR ${CMAKE_CURRENT_LIST_DIR}/../tools/dev/wine-run.sh)
