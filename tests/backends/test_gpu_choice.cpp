// The choice of GPU backend (backends/gpu_choice.h) on the machines of issue 28: drivers of CUDA
// 12.0 (525), 12.4 (550), 12.9 (575) and 13.0 (580); GPUs of compute capability 6.0, 7.0 and 7.5;
// only the CUDA 12 libraries, only the CUDA 13 ones, both; cuDNN built for the wrong major. Each
// probe is what the loader's trial load would report on that machine.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/gpu_choice.h"
#include "infer/errors.h"

namespace infer {
namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A machine: the driver's CUDA, the GPU, and which backends' runtime and cuDNN load.
struct Machine {
  int driver = 13000;
  int cc = 90;
  bool cu13_libraries = true;  // libcudart.so.13 and cuDNN for CUDA 13 beside the module
  bool cu12_libraries = true;
};

// What the trial load of each module reports there. A runtime newer than the driver still loads
// and reads the driver's version, but cannot ask for the device (cudaErrorInsufficientDriver).
std::vector<GpuBackendProbe> probes_on(const Machine& m) {
  std::vector<GpuBackendProbe> out;
  for (const int major : {13, 12}) {
    GpuBackendProbe p;
    p.cuda_major = major;
    p.module = "/opt/infer/lib/infer/libinfer_cudnn_cu" + std::to_string(major) + ".so";
    const bool libraries = major == 13 ? m.cu13_libraries : m.cu12_libraries;
    if (!libraries) {
      p.load_failure = "cannot load the GPU backend: libcudart.so." + std::to_string(major) +
                       ": cannot open shared object file: No such file or directory";
    } else {
      p.driver_cuda = m.driver;
      p.runtime = major * 1000;
      p.cudnn = major == 13 ? 91900 : 91002;
      p.cudnn_cudart = major * 1000;
      if (m.driver / 1000 < major) {
        p.device_error = "cudaErrorInsufficientDriver";
      } else {
        p.device_count = 1;
        p.device_cc = m.cc;
      }
    }
    out.push_back(p);
  }
  return out;
}

TEST(GpuChoice, EachDriverAndGpuGetsTheNewestBackendBothSupport) {
  struct Case {
    int driver, cc, chosen;
  };
  const Case cases[] = {
      {12000, 60, 12}, {12000, 70, 12}, {12000, 75, 12},  // 525: every CUDA 12 driver runs the CUDA 12 backend
      {12040, 60, 12}, {12040, 70, 12}, {12040, 75, 12},  // 550
      {12090, 60, 12}, {12090, 70, 12}, {12090, 75, 12},  // 575
      {13000, 60, 12}, {13000, 70, 12}, {13000, 75, 13},  // 580: CUDA 13 from compute capability 7.5
  };
  for (const Case& c : cases) {
    const GpuChoice choice = choose_gpu_backend(probes_on({c.driver, c.cc}), 0);
    EXPECT_EQ(choice.chosen, c.chosen) << "driver " << c.driver << ", cc " << c.cc << ": " << choice.summary();
    const GpuBackendVerdict* cu13 = choice.verdict(13);
    ASSERT_NE(cu13, nullptr);
    if (c.driver < 13000) {
      EXPECT_TRUE(has(cu13->reason, "needs driver 580.65.06 or newer")) << cu13->reason;
      EXPECT_TRUE(has(choice.summary(), "CUDA 12 backend (automatic)")) << choice.summary();
    } else if (c.cc < 75) {
      EXPECT_TRUE(has(cu13->reason, "supports 7.5 and newer")) << cu13->reason;
    }
  }
}

TEST(GpuChoice, OnlyOneMajorsLibrariesMeansThatBackend) {
  Machine only12{13000, 90, false, true};
  GpuChoice c = choose_gpu_backend(probes_on(only12), 0);
  EXPECT_EQ(c.chosen, 12) << c.summary();
  EXPECT_TRUE(has(c.verdict(13)->reason, "libcudart.so.13: cannot open shared object file")) << c.verdict(13)->reason;
  // The GPU is known from the backend that could ask: cu13 is stopped by its libraries, not the GPU.
  EXPECT_EQ(c.device_cc, 90);

  Machine only13{13000, 90, true, false};
  c = choose_gpu_backend(probes_on(only13), 0);
  EXPECT_EQ(c.chosen, 13) << c.summary();

  // A 550 driver with only the CUDA 13 libraries: nothing runs, and each backend says why.
  Machine old_driver_only13{12040, 90, true, false};
  c = choose_gpu_backend(probes_on(old_driver_only13), 0);
  EXPECT_EQ(c.chosen, 0);
  EXPECT_TRUE(has(c.summary(), "no GPU backend can run: CUDA 13: the NVIDIA driver supports CUDA 12.4")) << c.summary();
  EXPECT_TRUE(has(c.summary(), "CUDA 12: cannot load the GPU backend: libcudart.so.12")) << c.summary();
}

TEST(GpuChoice, CudnnBuiltForAnotherMajorStopsThatBackend) {
  std::vector<GpuBackendProbe> probes = probes_on({});
  probes[0].cudnn_cudart = 12000;  // the CUDA 13 module found cuDNN for CUDA 12
  const GpuChoice c = choose_gpu_backend(probes, 0);
  EXPECT_EQ(c.chosen, 12) << c.summary();
  EXPECT_EQ(c.verdict(13)->reason, "the cuDNN it loaded (9.19.0) is built for CUDA 12; it needs cuDNN 9 for CUDA 13");
}

TEST(GpuChoice, AForcedBackendIsThatOneOrNone) {
  EXPECT_EQ(choose_gpu_backend(probes_on({}), 12).chosen, 12);
  EXPECT_EQ(choose_gpu_backend(probes_on({}), 13).chosen, 13);
  const GpuChoice c = choose_gpu_backend(probes_on({12040, 90}), 13);
  EXPECT_EQ(c.chosen, 0);
  EXPECT_EQ(c.summary(),
            "the CUDA 13 backend cannot run: CUDA 13: the NVIDIA driver supports CUDA 12.4; CUDA 13 needs driver "
            "580.65.06 or newer");
}

TEST(GpuChoice, NoDriverAndNoModuleAreNamed) {
  Machine none{0, 0};
  std::vector<GpuBackendProbe> probes = probes_on(none);
  for (GpuBackendProbe& p : probes) p.device_error = "cudaErrorInsufficientDriver";
  GpuChoice c = choose_gpu_backend(probes, 0);
  EXPECT_EQ(c.chosen, 0);
  EXPECT_EQ(c.verdict(12)->reason, "no NVIDIA driver (libcuda.so.1) was found");
  // Its libraries missing too: the driver, which the CUDA 13 module's child saw missing, comes first.
  probes[1].load_failure = "cannot load the GPU backend: libcudart.so.12: cannot open shared object file";
  c = choose_gpu_backend(probes, 0);
  EXPECT_EQ(c.verdict(12)->reason, "no NVIDIA driver (libcuda.so.1) was found");
  probes[1].module.clear();  // the CUDA 12 module is not installed
  c = choose_gpu_backend(probes, 0);
  EXPECT_TRUE(has(c.verdict(12)->reason, "not installed")) << c.verdict(12)->reason;
}

TEST(GpuChoice, CudaMajorsAreParsedOrRefusedByName) {
  EXPECT_EQ(parse_cuda_major("12", "--cuda"), 12);
  EXPECT_EQ(parse_cuda_major("cu13", "--cuda"), 13);
  EXPECT_EQ(parse_cuda_major("auto", "--cuda"), 0);
  try {
    parse_cuda_major("11", "INFER_CUDA");
    ADD_FAILURE() << "11 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "INFER_CUDA '11' is not a CUDA major of a GPU backend (13, 12 or auto)");
  }
}

}  // namespace
}  // namespace infer
