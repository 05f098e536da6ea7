// The machines of issue 28, against the shipped VERSIONS.toml (schema 2: a CUDA 13 and a CUDA 12
// backend): which backend `infer --check` finds running, what it says of the other, and which one
// infer loads (--version, --json's backend field). Each machine is the project's CPU stand-in
// (tests/standin) playing a driver of CUDA 12.0 (525), 12.4 (550), 12.9 (575) or 13.0 (580) and a
// GPU of compute capability 6.0, 7.0 or 7.5 (emulated_driver.h), with the CUDA 12 runtime, the
// CUDA 13 one or both in its library folder, and a cuDNN built for either major. This machine's own
// CUDA libraries are hidden in a mount namespace (unshare -rm), so that the folder is all there is.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/loader_dir.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

namespace fs = std::filesystem;

const std::string kManifest = shipped_file("VERSIONS.toml");
const fs::path kStandin = (exe_dir() / INFER_STANDIN_LIBRARY_DIR).lexically_normal();

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

struct Machine {
  int driver = 13000;    // cuDriverGetVersion
  int cc = 75;           // 10 * major + minor
  bool cu13 = true;      // libcudart.so.13 in the library folder
  bool cu12 = true;      // libcudart.so.12
  int cudnn_cudart = 0;  // the CUDA cuDNN says it was built for; 0: the runtime's beside it
};

struct MachineRun {
  ProcessResult check;  // infer --check --json
  nlohmann::json report;
  ProcessResult version;   // infer --version
  ProcessResult classify;  // infer --json sample
  std::string row(const std::string& item, const char* field) const {
    for (const auto& r : report["items"]) {
      if (r["item"] == item) return r.value(field, std::string());
    }
    return "<no row>";
  }
  const nlohmann::json* backend(const std::string& name) const {
    for (const auto& b : report["backends"]) {
      if (b["name"] == name) return &b;
    }
    return nullptr;
  }
};

class Backends : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kStandin / "libcudart.so.12")) GTEST_SKIP() << "built without the CUDA 12 backend's stand-in";
    if (run_process("/usr/bin/unshare", {"-rm", "true"}).exit_code != 0) GTEST_SKIP() << "needs unshare -rm";
    fs::create_directories(dir_ / "empty");
    // This machine's CUDA 13 runtime and cuDNN, hidden: the stand-in's folder is all there is.
    for (const char* soname : {"libcudart.so.13", "libcudnn.so.9"}) {
      const fs::path real = loader_dir(soname);
      if (!real.empty() && real != fs::canonical(kStandin)) {
        mounts_ += (mounts_.empty() ? "" : " && ") + std::string("mount --bind ") + (dir_ / "empty").string() + " " +
                   real.string();
      }
    }
  }

  MachineRun on(const Machine& m) {
    const fs::path lib = dir_ / ("lib-" + std::to_string(++machines_));
    fs::create_directories(lib);
    std::vector<std::string> names = {"libcuda.so.1", "libnvidia-ml.so.1", "libcudnn.so.9"};
    for (const char* sub :
         {"graph", "ops", "cnn", "adv", "heuristic", "engines_precompiled", "engines_runtime_compiled"})
      names.push_back(std::string("libcudnn_") + sub + ".so.9");
    if (m.cu13) names.push_back("libcudart.so.13");
    if (m.cu12) names.push_back("libcudart.so.12");
    for (const std::string& n : names) fs::create_symlink(fs::canonical(kStandin / n), lib / n);
    std::vector<std::string> env = {"LD_LIBRARY_PATH=" + lib.string(),
                                    "INFER_STANDIN_DRIVER_CUDA=" + std::to_string(m.driver),
                                    "INFER_STANDIN_CC=" + std::to_string(m.cc)};
    if (m.cudnn_cudart != 0) env.push_back("INFER_STANDIN_CUDNN_CUDART=" + std::to_string(m.cudnn_cudart));
    MachineRun r;
    r.check = in_namespace({"--check", "--json", "--manifest", kManifest}, env);
    r.report = nlohmann::json::parse(r.check.out, nullptr, false);
    r.version = in_namespace({"--version"}, env);
    r.classify = in_namespace({"--json", shipped_file("samples/bag.png")}, env);
    return r;
  }

  ProcessResult in_namespace(const std::vector<std::string>& args, const std::vector<std::string>& env) const {
    std::string command = (mounts_.empty() ? std::string("true") : mounts_) + " && exec " + infer_exe();
    for (const std::string& a : args) command += " '" + a + "'";
    return run_process("/usr/bin/unshare", {"-rm", "/bin/sh", "-c", command}, env);
  }

  TempDir dir_;
  std::string mounts_;
  int machines_ = 0;
};

// The backend infer loaded, from --version's "run time:" line ("cu12"), or "none".
std::string loaded(const MachineRun& r) {
  for (const std::string& line : ProcessResult::lines(r.version.out)) {
    if (line.rfind("  run time:     cu", 0) == 0) return line.substr(16, 4);
  }
  return "none";
}

// The JSON line's backend field of the classified sample.
std::string json_backend(const MachineRun& r) {
  const nlohmann::json j = nlohmann::json::parse(r.classify.out, nullptr, false);
  return j.is_object() ? j.value("backend", std::string()) : "<no JSON line: " + r.classify.err + ">";
}

TEST_F(Backends, EveryCuda12DriverRunsTheCuda12BackendAndHearsWhat580WouldAdd) {
  for (const int driver : {12000, 12040, 12090}) {
    for (const int cc : {60, 70, 75}) {
      SCOPED_TRACE("driver CUDA " + std::to_string(driver) + ", compute capability " + std::to_string(cc));
      const MachineRun r = on({driver, cc});
      EXPECT_EQ(r.check.exit_code, 0) << r.check.out << r.check.err;
      EXPECT_EQ(r.report.value("backend", std::string()), "cu12");
      const nlohmann::json* cu13 = r.backend("cu13");
      ASSERT_NE(cu13, nullptr) << r.check.out;
      EXPECT_FALSE((*cu13)["runs"].get<bool>());
      EXPECT_TRUE(has((*cu13)["first_failure"].get<std::string>(), "cu13.driver.release")) << (*cu13)["first_failure"];
      EXPECT_TRUE(has((*cu13)["fix"].get<std::string>(), "580.65.06")) << (*cu13)["fix"];
      // The table: the result names the backend, and the CUDA 13 one gets one line, not a failure.
      const ProcessResult table = in_namespace(
          {"--check", "--manifest", kManifest},
          {"LD_LIBRARY_PATH=" + (dir_ / ("lib-" + std::to_string(machines_))).string(),
           "INFER_STANDIN_DRIVER_CUDA=" + std::to_string(driver), "INFER_STANDIN_CC=" + std::to_string(cc)});
      EXPECT_TRUE(has(table.out, "result: ok: runs the CUDA 12 backend (cu12)")) << table.out;
      EXPECT_TRUE(has(table.out, "backend cu13 (CUDA 13) does not run here: cu13.driver.release")) << table.out;
      EXPECT_FALSE(has(table.out, "    fix: this driver supports CUDA up to"))
          << "no fix line under the other backend's rows";
      EXPECT_EQ(loaded(r), "cu12") << r.version.out;
      EXPECT_EQ(json_backend(r).rfind("gpu (cu12): ", 0), 0u) << json_backend(r);
    }
  }
}

TEST_F(Backends, A580DriverRunsCuda13FromComputeCapability75AndCuda12Below) {
  for (const int cc : {60, 70, 75}) {
    SCOPED_TRACE("compute capability " + std::to_string(cc));
    const MachineRun r = on({13000, cc});
    const std::string want = cc >= 75 ? "cu13" : "cu12";
    EXPECT_EQ(r.check.exit_code, 0) << r.check.out << r.check.err;
    EXPECT_EQ(r.report.value("backend", std::string()), want);
    EXPECT_EQ(loaded(r), want) << r.version.out;
    EXPECT_EQ(json_backend(r).rfind("gpu (" + want + "): ", 0), 0u) << json_backend(r);
    if (cc < 75) {
      EXPECT_EQ(r.row("cu13.gpu.compute_capability", "status"), "FAIL");
      EXPECT_TRUE(has(r.backend("cu13")->value("first_failure", std::string()), "cu13.gpu.compute_capability"));
      EXPECT_TRUE(has(r.version.out, "cu13: the GPU is compute capability " + std::to_string(cc / 10) + "." +
                                         std::to_string(cc % 10) + "; CUDA 13 supports 7.5 and newer"))
          << r.version.out;
    }
  }
}

TEST_F(Backends, OnlyOneMajorsRuntimeRunsThatBackend) {
  MachineRun r = on({13000, 90, /*cu13=*/false, /*cu12=*/true});
  EXPECT_EQ(r.report.value("backend", std::string()), "cu12") << r.check.out;
  EXPECT_TRUE(has(r.backend("cu13")->value("first_failure", std::string()), "cu13.cuda.runtime")) << r.check.out;
  EXPECT_EQ(loaded(r), "cu12") << r.version.out;
  EXPECT_TRUE(has(r.version.out, "cu13: cannot load the GPU backend: libcudart.so.13")) << r.version.out;

  r = on({13000, 90, /*cu13=*/true, /*cu12=*/false});
  EXPECT_EQ(r.report.value("backend", std::string()), "cu13") << r.check.out;
  EXPECT_EQ(loaded(r), "cu13") << r.version.out;

  r = on({13000, 90, true, true});
  EXPECT_EQ(r.report.value("backend", std::string()), "cu13") << "both: the newest";
  EXPECT_EQ(loaded(r), "cu13") << r.version.out;
}

TEST_F(Backends, WhenNoBackendRunsEachNamesWhatStopsIt) {
  // A 550 driver with only the CUDA 13 runtime: the driver stops one, the missing runtime the other.
  const MachineRun r = on({12040, 75, /*cu13=*/true, /*cu12=*/false});
  EXPECT_EQ(r.check.exit_code, 5) << r.check.out;
  EXPECT_TRUE(r.report["backend"].is_null()) << r.check.out;
  EXPECT_TRUE(has(r.backend("cu13")->value("first_failure", std::string()), "cu13.driver.release: 550.54.15"))
      << r.check.out;
  EXPECT_TRUE(has(r.backend("cu12")->value("first_failure", std::string()), "cu12.cuda.runtime")) << r.check.out;
  EXPECT_EQ(loaded(r), "none");
  EXPECT_TRUE(has(r.version.out,
                  "no GPU backend can run: CUDA 13: the NVIDIA driver supports CUDA 12.4; CUDA 13 "
                  "needs driver 580.65.06 or newer; CUDA 12: cannot load the GPU backend: "
                  "libcudart.so.12"))
      << r.version.out;
  EXPECT_EQ(json_backend(r).rfind("cpu", 0), 0u) << json_backend(r);
  EXPECT_TRUE(has(r.classify.err, "infer: notice: running on the CPU: cu13.driver.release: 550.54.15"))
      << r.classify.err;
}

TEST_F(Backends, CudnnBuiltForTheOtherMajorStopsItsBackend) {
  // cuDNN built for CUDA 12 beside both runtimes: the CUDA 13 backend cannot use it.
  const MachineRun r = on({13000, 90, true, true, /*cudnn_cudart=*/12000});
  EXPECT_EQ(r.report.value("backend", std::string()), "cu12") << r.check.out;
  EXPECT_EQ(r.row("cu13.cudnn.cuda_major", "status"), "FAIL");
  EXPECT_EQ(loaded(r), "cu12") << r.version.out;
  EXPECT_TRUE(
      has(r.version.out, "cu13: the cuDNN it loaded (9.19.0) is built for CUDA 12; it needs cuDNN 9 for CUDA 13"))
      << r.version.out;
}

TEST_F(Backends, ForcingABackendTakesItOrFailsWithTheReason) {
  const MachineRun r = on({12040, 75});
  const std::string lib = (dir_ / ("lib-" + std::to_string(machines_))).string();
  const std::vector<std::string> env = {"LD_LIBRARY_PATH=" + lib, "INFER_STANDIN_DRIVER_CUDA=12040",
                                        "INFER_STANDIN_CC=75"};
  const ProcessResult forced13 = in_namespace({"--cuda", "13", shipped_file("samples/bag.png")}, env);
  EXPECT_EQ(forced13.exit_code, 4) << forced13.err;
  EXPECT_TRUE(has(forced13.err, "cu13.driver.release: 550.54.15")) << forced13.err;
  const ProcessResult forced12 = in_namespace({"--cuda", "12", "--json", shipped_file("samples/bag.png")}, env);
  EXPECT_EQ(forced12.exit_code, 0) << forced12.err;
  EXPECT_TRUE(has(forced12.out, "\"backend\":\"gpu (cu12): ")) << forced12.out;
  const ProcessResult check13 = in_namespace({"--check", "--cuda", "13", "--manifest", kManifest}, env);
  EXPECT_EQ(check13.exit_code, 5) << check13.out;
  EXPECT_FALSE(has(check13.out, "cu12.")) << "only the backend asked for is checked";
  EXPECT_EQ(in_namespace({"--cuda", "11", shipped_file("samples/bag.png")}, env).exit_code, 2);
}

}  // namespace
}  // namespace infer::test
