// The check words its findings for the system the probe describes (manifest/platform_words.h):
// the same synthetic machine, described as Linux and as Windows, gets LD_LIBRARY_PATH and dlopen
// on one and PATH and LoadLibraryExW on the other, never a mix. Runs on Linux and under wine.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "manifest/check.h"
#include "manifest/manifest.h"
#include "manifest/probe.h"
#include "manifest/report.h"
#include "platform/nvidia_versions.h"
#include "tests/support/temp_dir.h"

namespace {

namespace manifest = infer::manifest;
using manifest::Platform;

// cuDNN 9 is not on the loader's path; a copy sits in a conda environment; cuDNN's graph
// sub-library of another install was loaded from another folder of the search path.
manifest::MachineProbe machine(Platform p) {
  const bool win = p == Platform::Windows;
  manifest::MachineProbe m;
  m.platform = p;
  m.os = win ? "Windows 10.0 (build 22631)" : "Debian GNU/Linux 12 (bookworm)";
  m.arch = "x86_64";
  m.libcuda.soname = win ? "nvcuda.dll" : "libcuda.so.1";
  m.libcuda.error = "not found";
  m.libnvml.soname = win ? "nvml.dll" : "libnvidia-ml.so.1";
  m.libnvml.error = "not found";
  m.cudart.soname = win ? "cudart64_13.dll" : "libcudart.so.13";
  m.cudart.error = "not found";
  m.cudnn.soname = win ? "cudnn64_9.dll" : "libcudnn.so.9";
  m.cudnn.error = "not found";
  // Forward slashes, which Windows takes too, so the folder splits off on both systems.
  const std::string conda = win ? "C:/miniconda3/envs/dl/Library/bin" : "/opt/conda/envs/dl/lib";
  m.cudnn.copies.push_back({m.cudnn.soname, conda + "/" + m.cudnn.soname, "conda env dl", false, "9.19.0", ""});
  return m;
}

std::string report_text(Platform p) {
  infer::test::TempDir dir;
  const auto file = dir.path() / "VERSIONS.toml";
  std::ofstream(file) << "schema = 1\n[driver]\ncuda = \">=13.0\"\n[cuda]\nruntime = \"13.*\"\n"
                         "[cudnn]\nversion = \">=9.19, <10\"\nsingle_copy = \"advisory\"\n";
  const manifest::Report r = manifest::check(manifest::read_manifest(file), machine(p));
  return manifest::to_json(r);
}

TEST(CheckWording, LinuxProbeGetsLinuxWords) {
  const std::string text = report_text(Platform::Linux);
  EXPECT_NE(text.find("export LD_LIBRARY_PATH=/opt/conda/envs/dl/lib"), std::string::npos) << text;
  EXPECT_NE(text.find("dlopen"), std::string::npos) << text;
  EXPECT_EQ(text.find("LoadLibraryExW"), std::string::npos) << text;
  EXPECT_EQ(text.find("set PATH="), std::string::npos) << text;
}

TEST(CheckWording, WindowsProbeGetsWindowsWordsOnly) {
  const std::string text = report_text(Platform::Windows);
  EXPECT_NE(text.find("set PATH=C:/miniconda3/envs/dl/Library/bin;%PATH%"), std::string::npos) << text;
  EXPECT_NE(text.find("LoadLibraryExW"), std::string::npos) << text;
  EXPECT_NE(text.find("nvcuda.dll comes with the driver"), std::string::npos) << text;
  for (const char* linux_word : {"LD_LIBRARY_PATH", "dlopen", "ldconfig", ".so.", "/proc/driver", "kernel module"})
    EXPECT_EQ(text.find(linux_word), std::string::npos) << linux_word << " in\n" << text;
}

// cuInit's CUDA_ERROR_SYSTEM_DRIVER_MISMATCH while NVML works: the libcuda loaded is not the
// driver's. Said with what was read, and never as a kernel module to reboot into.
TEST(CheckWording, SystemDriverMismatchWithAWorkingNvmlBlamesTheLibcudaLoaded) {
  manifest::MachineProbe m = machine(Platform::Linux);
  m.libcuda.loaded = m.libnvml.loaded = true;
  m.libcuda.error = m.libnvml.error = "";
  m.libcuda.path = "/usr/local/cuda-12.8/compat/libcuda.so.1";
  m.libnvml.path = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1";
  m.cuda_init = 803;
  m.cuda_init_error = "cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)";
  m.nvml_init = 0;
  m.driver_release = "580.82.07";
  m.driver_release_source = "nvmlSystemGetDriverVersion (" + m.libnvml.path + ")";
  infer::test::TempDir dir;
  const auto file = dir.path() / "VERSIONS.toml";
  std::ofstream(file) << "schema = 1\n[driver]\nrelease = \">=580.65.06\"\ncuda = \">=13.0\"\n";
  const manifest::Report r = manifest::check(manifest::read_manifest(file), m);
  const std::string text = manifest::to_json(r);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].status, manifest::Status::Ok) << text;  // driver.release: NVML's 580.82.07
  const std::string& found = r.rows[1].found;
  EXPECT_NE(found.find("libcuda.so.1 is not the driver's: cuInit in " + m.libcuda.path), std::string::npos) << found;
  EXPECT_NE(found.find("CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)"), std::string::npos) << found;
  EXPECT_NE(found.find("reports driver 580.82.07"), std::string::npos) << found;
  EXPECT_NE(r.rows[1].fix.find("cuda-compat"), std::string::npos) << r.rows[1].fix;
  for (const char* wrong : {"reboot", "/proc/driver/nvidia/version", "of another release but"})
    EXPECT_EQ(text.find(wrong), std::string::npos) << wrong << " in\n" << text;
}

TEST(CheckWording, VersionNumbersAreReadWithTheirOwnCount) {
  EXPECT_EQ(infer::cudnn_version_string(8200), "8.2.0");  // cuDNN 8: major*1000 + minor*100 + patch
  EXPECT_EQ(infer::cudnn_version_string(91900), "9.19.0");
  EXPECT_EQ(infer::cudnn_version_major(8200), 8);
  EXPECT_EQ(infer::cudnn_version_major(91900), 9);
  EXPECT_EQ(infer::cudnn_version_major(42), 0);
  EXPECT_EQ(infer::cuda_version_string(11030), "11.3");
  EXPECT_EQ(infer::driver_release_in_file_name("libcuda.so.580.82.07"), "580.82.07");
  EXPECT_EQ(infer::driver_release_in_file_name("libcuda.so.575.57"), "575.57");
  EXPECT_EQ(infer::driver_release_in_file_name("libcuda.so.1"), "");
  EXPECT_EQ(infer::driver_release_in_file_name("libcuda.so.1.1"), "");
  EXPECT_EQ(infer::driver_release_in_file_name("libcuda.so"), "");
}

}  // namespace
