# The dependencies of the Windows build, as the same imported targets the Linux build gets from
# Debian's packages (top-level CMakeLists.txt), so that no target differs.
#
# Native, with MSVC (docs/windows.md; built only on Windows, untested here): every dependency
# through find_package, e.g. from vcpkg (nlohmann-json, tomlplusplus, cli11, stb, zlib, gtest) with
# -DCMAKE_TOOLCHAIN_FILE=<vcpkg>/scripts/buildsystems/vcpkg.cmake.
if(NOT CMAKE_CROSSCOMPILING)
  find_package(nlohmann_json 3.10 CONFIG REQUIRED)
  find_package(tomlplusplus 3 CONFIG REQUIRED)
  find_package(CLI11 2 CONFIG REQUIRED)
  find_package(ZLIB REQUIRED)
  find_package(Threads REQUIRED)
  find_path(Stb_INCLUDE_DIR stb_image.h PATH_SUFFIXES stb REQUIRED)
  add_library(Stb::Stb INTERFACE IMPORTED)
  target_include_directories(Stb::Stb SYSTEM INTERFACE ${Stb_INCLUDE_DIR})
  if(INFER_BUILD_TESTS)
    find_package(GTest REQUIRED)
  endif()
  return()
endif()

# Cross-compiled with mingw-w64 (cmake/mingw-w64.cmake), from Debian's packages.
# Header-only libraries (nlohmann-json, toml++, CLI11, stb) come from Debian's packages, but their
# folders are copied into the build tree first: /usr/include itself must never be on the mingw
# include path (glibc's headers would shadow mingw's). toml++ is compiled header-only here
# (TOML_HEADER_ONLY=1; on Linux it is Debian's shared library). zlib is Debian's mingw build
# (libz-mingw-w64-dev), linked statically. GoogleTest is built from Debian's sources
# (/usr/src/googletest) with this compiler. SHA-256 uses Windows' BCrypt (manifest/windows/sha256_bcrypt.cpp).
set(_staged ${PROJECT_BINARY_DIR}/deps/include)
function(infer_stage_headers from to)
  if(NOT EXISTS ${from})
    message(FATAL_ERROR "${from} not found: install Debian's headers (tools/dev/install-deps.sh)")
  endif()
  file(COPY ${from}/ DESTINATION ${_staged}/${to})
endfunction()
infer_stage_headers(/usr/include/nlohmann nlohmann)
infer_stage_headers(/usr/include/toml++ toml++)
infer_stage_headers(/usr/include/CLI CLI)
infer_stage_headers(/usr/include/stb stb)

add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
target_include_directories(nlohmann_json::nlohmann_json SYSTEM INTERFACE ${_staged})
add_library(tomlplusplus::tomlplusplus INTERFACE IMPORTED)
target_include_directories(tomlplusplus::tomlplusplus SYSTEM INTERFACE ${_staged})
target_compile_definitions(tomlplusplus::tomlplusplus INTERFACE TOML_HEADER_ONLY=1)
add_library(CLI11::CLI11 INTERFACE IMPORTED)
target_include_directories(CLI11::CLI11 SYSTEM INTERFACE ${_staged})
add_library(Stb::Stb INTERFACE IMPORTED)
target_include_directories(Stb::Stb SYSTEM INTERFACE ${_staged}/stb)
set(Stb_INCLUDE_DIR ${_staged}/stb)

find_library(INFER_MINGW_ZLIB NAMES libz.a REQUIRED)   # the static archive, not zlib1.dll's import library
find_path(INFER_MINGW_ZLIB_INCLUDE zlib.h REQUIRED)
add_library(ZLIB::ZLIB STATIC IMPORTED)
set_target_properties(ZLIB::ZLIB PROPERTIES IMPORTED_LOCATION ${INFER_MINGW_ZLIB}
                                            INTERFACE_INCLUDE_DIRECTORIES ${INFER_MINGW_ZLIB_INCLUDE})

find_package(Threads REQUIRED)

if(INFER_BUILD_TESTS)
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
  set(gtest_force_shared_crt ON CACHE BOOL "" FORCE)
  add_subdirectory(/usr/src/googletest ${PROJECT_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)  # GTest::gtest, GTest::gtest_main
endif()
