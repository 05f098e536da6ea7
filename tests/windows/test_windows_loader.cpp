// manifest/windows/dll_search.h against Windows' own loader (wine's, here): the fake cuDNN front DLL
// (fakes/) loaded with LoadLibraryExW and LOAD_WITH_ALTERED_SEARCH_PATH, its graph DLL absent, beside
// it, then only on PATH. The prediction made from the files must agree with what the loader did.
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "manifest/windows/dll_search.h"
#include "tests/support/temp_dir.h"

namespace infer::test {
namespace {

namespace fs = std::filesystem;

std::wstring environment(const wchar_t* name) {
  std::vector<wchar_t> buf(32768);
  const DWORD n = GetEnvironmentVariableW(name, buf.data(), static_cast<DWORD>(buf.size()));
  return std::wstring(buf.data(), n < buf.size() ? n : 0);
}

std::vector<fs::path> path_entries() {
  std::vector<fs::path> out;
  const std::wstring path = environment(L"PATH");
  for (std::size_t start = 0; start <= path.size();) {
    const std::size_t end = std::min(path.find(L';', start), path.size());
    if (end > start) out.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

manifest::DllSearchOrder altered(const fs::path& dll_dir) {
  wchar_t windows[MAX_PATH];
  const UINT n = GetWindowsDirectoryW(windows, MAX_PATH);
  return manifest::DllSearchOrder::altered(dll_dir, fs::path(std::wstring(windows, n)), fs::current_path(),
                                           path_entries());
}

// LoadLibraryExW's result: 0 when it loaded (and was freed), else GetLastError().
DWORD load(const fs::path& dll) {
  const HMODULE m = LoadLibraryExW(dll.c_str(), nullptr, LOAD_WITH_ALTERED_SEARCH_PATH);
  if (m == nullptr) return GetLastError();
  FreeLibrary(m);
  return 0;
}

class WindowsLoader : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.path() / "cudnn");
    fs::copy_file(fakes() / "cudnn64_9.dll", front());
  }
  void TearDown() override { SetEnvironmentVariableW(L"PATH", saved_path_.c_str()); }
  static fs::path fakes() { return fs::path(INFER_FAKE_CUDNN_DIR); }
  fs::path front() const { return dir_.path() / "cudnn" / "cudnn64_9.dll"; }

  TempDir dir_;
  std::wstring saved_path_ = environment(L"PATH");
};

TEST_F(WindowsLoader, TheGraphDllMissingIsError126AndNamed) {
  EXPECT_EQ(load(front()), static_cast<DWORD>(ERROR_MOD_NOT_FOUND));
  const manifest::LoadDiagnosis d = manifest::diagnose_load(front().u8string(), altered(front().parent_path()));
  EXPECT_FALSE(d.loads);
  EXPECT_EQ(d.missing, "cudnn_graph64_9.dll") << d.describe();
}

TEST_F(WindowsLoader, TheGraphDllBesideItLoads) {
  fs::copy_file(fakes() / "cudnn_graph64_9.dll", dir_.path() / "cudnn" / "cudnn_graph64_9.dll");
  EXPECT_EQ(load(front()), 0u);
  const manifest::LoadDiagnosis d = manifest::diagnose_load(front().u8string(), altered(front().parent_path()));
  EXPECT_TRUE(d.loads) << d.describe();
}

TEST_F(WindowsLoader, TheGraphDllOnlyOnPathLoadsFromThere) {
  const fs::path elsewhere = dir_.path() / "elsewhere";
  fs::create_directories(elsewhere);
  fs::copy_file(fakes() / "cudnn_graph64_9.dll", elsewhere / "cudnn_graph64_9.dll");
  SetEnvironmentVariableW(L"PATH", (elsewhere.wstring() + L";" + saved_path_).c_str());
  EXPECT_EQ(load(front()), 0u);
  const manifest::LoadDiagnosis d = manifest::diagnose_load(front().u8string(), altered(front().parent_path()));
  ASSERT_TRUE(d.loads) << d.describe();
  const auto graph = std::find_if(d.resolved.begin(), d.resolved.end(), [](const manifest::FoundDll& f) {
    return f.path.filename() == "cudnn_graph64_9.dll";
  });
  ASSERT_NE(graph, d.resolved.end());
  EXPECT_EQ(graph->path, elsewhere / "cudnn_graph64_9.dll");
  EXPECT_EQ(graph->role, "PATH entry 1");
}

}  // namespace
}  // namespace infer::test
