// manifest/windows/pe_file.h on real PE files that Windows' tools made: mingw-w64's DLLs with windres'
// version resources (fakes/), this test program itself, and a DLL of the system (under wine, wine's
// own). tests/manifest/windows/test_pe_file.cpp covers the same reader on images it writes, on every system.
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "manifest/windows/pe_file.h"

namespace infer::test {
namespace {

namespace fs = std::filesystem;

fs::path this_program() {
  wchar_t buf[32768];
  const DWORD n = GetModuleFileNameW(nullptr, buf, 32768);
  return fs::path(std::wstring(buf, n));
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return _stricmp(n.c_str(), name.c_str()) == 0; });
}

TEST(WindowsPe, AFakeCudnnFrontDllNamesItsGraphDllAndItsVersion) {
  const manifest::PeFile pe = manifest::read_pe_file(fs::path(INFER_FAKE_CUDNN_DIR) / "cudnn64_9.dll");
  EXPECT_EQ(pe.machine_name(), "x64");
  EXPECT_TRUE(pe.dll);
  EXPECT_TRUE(has(pe.imports, "cudnn_graph64_9.dll")) << ::testing::PrintToString(pe.imports);
  ASSERT_TRUE(pe.version.has_value());
  EXPECT_EQ(pe.version->file_version(), "9.19.0.56");
  EXPECT_EQ(pe.version->strings.at("FileVersion"), "9.19.0.56");
  EXPECT_EQ(pe.version->strings.at("FileDescription"), "infer test fake of cudnn64_9.dll (not NVIDIA's)");
}

TEST(WindowsPe, ThisProgramIsAnExeImportingKernel32AndBcrypt) {
  const manifest::PeFile pe = manifest::read_pe_file(this_program());
  EXPECT_EQ(pe.machine_name(), "x64");
  EXPECT_FALSE(pe.dll);
  EXPECT_TRUE(has(pe.imports, "KERNEL32.dll")) << ::testing::PrintToString(pe.imports);
  EXPECT_TRUE(has(pe.imports, "bcrypt.dll")) << ::testing::PrintToString(pe.imports);
  EXPECT_FALSE(has(pe.imports, "cudnn_graph64_9.dll"));
}

TEST(WindowsPe, ASystemDllIsRead) {
  wchar_t system[MAX_PATH];
  const UINT n = GetSystemDirectoryW(system, MAX_PATH);
  ASSERT_GT(n, 0u);
  const manifest::PeFile pe = manifest::read_pe_file(fs::path(std::wstring(system, n)) / "kernel32.dll");
  EXPECT_TRUE(pe.dll);
  EXPECT_EQ(pe.machine_name(), "x64");
}

}  // namespace
}  // namespace infer::test
