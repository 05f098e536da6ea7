// manifest/windows/dll_search.h on folder trees of fake DLLs (tests/support/pe_builder.h), on any system: the
// installs of the Windows guide — a complete cuDNN 9 on PATH, its graph DLL missing, an older
// cudnn64_9.dll earlier on PATH, a sub-DLL taken from the application's folder, an x86 copy, a
// cuDNN 8 install missing cudnn_ops_infer64_8.dll. tests/windows/ compares the prediction with
// LoadLibraryExW's own result under wine.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "manifest/windows/dll_search.h"
#include "manifest/windows/pe_file.h"
#include "tests/support/pe_builder.h"
#include "tests/support/temp_dir.h"

namespace infer::test {
namespace {

namespace fs = std::filesystem;
using manifest::diagnose_load;
using manifest::DllSearchOrder;
using manifest::LoadDiagnosis;

class DllSearch : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(windows() / "System32");
    fs::create_directories(app());
    fs::create_directories(cudnn());
    // Windows' own DLLs, in lower case as a Windows install has them; imports name them in capitals.
    dll(windows() / "System32" / "kernel32.dll", {});
    dll(windows() / "System32" / "msvcrt.dll", {"kernel32.dll"});
    for (const char* sub : {"cudnn_graph64_9.dll", "cudnn_ops64_9.dll"}) dll(cudnn() / sub, {"KERNEL32.dll"});
    dll(cudnn() / "cudnn64_9.dll", {"cudnn_graph64_9.dll", "KERNEL32.dll", "api-ms-win-crt-runtime-l1-1-0.dll"},
        {9, 19, 0, 56});
  }
  fs::path windows() const { return dir_.path() / "Windows"; }
  fs::path app() const { return dir_.path() / "app"; }
  fs::path cudnn() const { return dir_.path() / "CUDNN" / "v9.19" / "bin"; }
  static void dll(const fs::path& path, std::vector<std::string> imports,
                  std::vector<std::uint16_t> version = {1, 0, 0, 0}, std::uint16_t machine = 0x8664) {
    PeSpec spec;
    spec.imports = std::move(imports);
    spec.machine = machine;
    for (int i = 0; i < 4; ++i) spec.version[i] = version[static_cast<std::size_t>(i)];
    const std::vector<unsigned char> bytes = PeBuilder::build(spec).bytes;
    write_file(path, std::string(bytes.begin(), bytes.end()));
  }
  DllSearchOrder order(std::vector<fs::path> path) const {
    return DllSearchOrder::standard(app(), windows(), dir_.path() / "cwd", path);
  }

  TempDir dir_;
};

TEST_F(DllSearch, ACompleteInstallOnPathLoads) {
  const LoadDiagnosis d = diagnose_load("cudnn64_9.dll", order({cudnn()}));
  EXPECT_TRUE(d.loads) << d.describe();
  ASSERT_GE(d.resolved.size(), 2u);
  EXPECT_EQ(d.resolved[0].path, cudnn() / "cudnn64_9.dll");
  EXPECT_EQ(d.resolved[0].role, "PATH entry 1");
  EXPECT_EQ(d.resolved[1].path, cudnn() / "cudnn_graph64_9.dll");
  // KERNEL32.dll is found in System32 by its lower-case file name; the API set is no file.
  EXPECT_EQ(d.resolved.back().role, "System32");
}

TEST_F(DllSearch, AMissingGraphDllIsNamedWithTheChainThatNeedsIt) {
  fs::remove(cudnn() / "cudnn_graph64_9.dll");
  const LoadDiagnosis d = diagnose_load("cudnn64_9.dll", order({cudnn()}));
  EXPECT_FALSE(d.loads);
  EXPECT_EQ(d.missing, "cudnn_graph64_9.dll");
  EXPECT_EQ(d.chain, (std::vector<std::string>{"cudnn64_9.dll", "cudnn_graph64_9.dll"}));
  EXPECT_EQ(d.describe(), "cudnn64_9.dll needs cudnn_graph64_9.dll, which no folder of the search order holds");
}

TEST_F(DllSearch, CudnnNotOnPathIsMissingItself) {
  const LoadDiagnosis d = diagnose_load("cudnn64_9.dll", order({}));
  EXPECT_FALSE(d.loads);
  EXPECT_EQ(d.missing, "cudnn64_9.dll");
  EXPECT_EQ(d.describe(), "cudnn64_9.dll: no folder of the search order holds it");
}

TEST_F(DllSearch, AnOlderCopyEarlierOnPathWins) {
  const fs::path old = dir_.path() / "CUDNN" / "v9.1" / "bin";
  fs::create_directories(old);
  dll(old / "cudnn64_9.dll", {"cudnn_graph64_9.dll"}, {9, 1, 0, 70});
  dll(old / "cudnn_graph64_9.dll", {}, {9, 1, 0, 70});
  const LoadDiagnosis d = diagnose_load("cudnn64_9.dll", order({old, cudnn()}));
  EXPECT_TRUE(d.loads);
  ASSERT_FALSE(d.resolved.empty());
  EXPECT_EQ(d.resolved[0].path, old / "cudnn64_9.dll");
  EXPECT_EQ(d.resolved[0].role, "PATH entry 1");
  EXPECT_EQ(manifest::read_pe_file(d.resolved[0].path).version->file_version(), "9.1.0.70");
}

TEST_F(DllSearch, TheApplicationsFolderComesBeforePath) {
  // A sub-DLL of another install copied beside the program: it wins over cuDNN's own folder.
  dll(app() / "cudnn_graph64_9.dll", {}, {9, 1, 0, 70});
  const LoadDiagnosis d = diagnose_load("cudnn64_9.dll", order({cudnn()}));
  ASSERT_GE(d.resolved.size(), 2u);
  EXPECT_EQ(d.resolved[1].path, app() / "cudnn_graph64_9.dll");
  EXPECT_EQ(d.resolved[1].role, "the application's folder");
}

TEST_F(DllSearch, AnX86DependentIsNamed) {
  dll(cudnn() / "cudnn_graph64_9.dll", {}, {9, 19, 0, 56}, 0x14c);
  const LoadDiagnosis d = diagnose_load("cudnn64_9.dll", order({cudnn()}));
  EXPECT_FALSE(d.loads);
  EXPECT_TRUE(d.missing.empty());
  EXPECT_NE(d.problem.find("cudnn_graph64_9.dll: is x86, not x64"), std::string::npos) << d.problem;
  EXPECT_EQ(d.chain.back(), "cudnn_graph64_9.dll");
}

TEST_F(DllSearch, ABrokenDependentIsNamed) {
  write_file(cudnn() / "cudnn_graph64_9.dll", "not a DLL");
  const LoadDiagnosis d = diagnose_load("cudnn64_9.dll", order({cudnn()}));
  EXPECT_FALSE(d.loads);
  EXPECT_NE(d.problem.find("cudnn_graph64_9.dll: not a Windows DLL or program"), std::string::npos) << d.problem;
}

TEST_F(DllSearch, TheGuidesMissingCudnnOpsInfer8) {
  // cuDNN 8 for Windows: the front imports nothing of its own; a program (or the front, at run
  // time) asks for cudnn_ops_infer64_8.dll, which the install lacks.
  const fs::path v8 = dir_.path() / "CUDNN" / "v8.9" / "bin";
  fs::create_directories(v8);
  dll(v8 / "cudnn64_8.dll", {"KERNEL32.dll"}, {8, 9, 7, 29});
  dll(v8 / "cudnn_cnn_infer64_8.dll", {"cudnn_ops_infer64_8.dll", "KERNEL32.dll"}, {8, 9, 7, 29});
  EXPECT_TRUE(diagnose_load("cudnn64_8.dll", order({v8})).loads);
  const LoadDiagnosis d = diagnose_load("cudnn_cnn_infer64_8.dll", order({v8}));
  EXPECT_EQ(d.missing, "cudnn_ops_infer64_8.dll");
}

TEST_F(DllSearch, AlteredSearchPutsTheDllsFolderFirst) {
  fs::remove(cudnn() / "cudnn_graph64_9.dll");
  const fs::path other = dir_.path() / "other";
  fs::create_directories(other);
  dll(other / "cudnn64_9.dll", {"cudnn_graph64_9.dll"});
  dll(other / "cudnn_graph64_9.dll", {});
  const std::string path = (other / "cudnn64_9.dll").u8string();
  const DllSearchOrder altered = DllSearchOrder::altered(other, windows(), dir_.path() / "cwd", {cudnn()});
  const LoadDiagnosis d = diagnose_load(path, altered);
  EXPECT_TRUE(d.loads) << d.describe();
  ASSERT_GE(d.resolved.size(), 2u);
  EXPECT_EQ(d.resolved[1].role, "the DLL's own folder");
  // The standard order does not look in the DLL's folder for its dependents.
  EXPECT_EQ(diagnose_load(path, order({cudnn()})).missing, "cudnn_graph64_9.dll");
}

}  // namespace
}  // namespace infer::test
