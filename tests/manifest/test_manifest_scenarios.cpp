// Broken environments of issue 10, built the way real installs look: real NVIDIA files (this
// machine's cuDNN and CUDA runtime, the toolkit's stub libcuda, libraries from NVIDIA's PyPI wheels
// fetched by tools/dev/fetch_wheel.py into a cache outside the repository), damaged copies of them, and
// the project's fakes. Each runs `infer` in a child process; a mount namespace (unshare -rm) hides
// the system copy where a scenario needs a machine without it.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "tests/support/loader_dir.h"
#include "tests/support/process.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

namespace fs = std::filesystem;

// One backend's diagnosis, in schema 1 (the shipped VERSIONS.toml, schema 2, has its own tests in
// test_manifest_backends.cpp).
const std::string kManifest = test_file("tests/data/VERSIONS.schema1.toml");
const fs::path kFakes = (exe_dir() / INFER_FAKE_LIBRARY_DIR).lexically_normal();
const fs::path kStandin = (exe_dir() / INFER_STANDIN_LIBRARY_DIR).lexically_normal();

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

struct Report {
  ProcessResult process;
  std::map<std::string, nlohmann::json> rows;
  std::string field(const std::string& item, const char* name) const {
    const auto it = rows.find(item);
    return it == rows.end() || !it->second.contains(name) ? "" : it->second[name].get<std::string>();
  }
};

Report check_json(const std::vector<std::string>& env) {
  Report r;
  r.process = run_process(infer_exe(), {"--check", "--json", "--manifest", kManifest}, env);
  const nlohmann::json j = nlohmann::json::parse(r.process.out, nullptr, false);
  if (j.is_object()) {
    for (const auto& row : j["items"]) r.rows[row["item"].get<std::string>()] = row;
  }
  return r;
}

// A folder holding only the stand-in's driver libraries: a driver that passes every driver and GPU
// row, so that the cuDNN and CUDA runtime rows are where the first failure is.
fs::path good_driver(const TempDir& dir) {
  if (!fs::exists(kStandin / "libcuda.so.1")) return "/nonexistent-standin";
  const fs::path d = dir / "driver";
  fs::create_directories(d);
  for (const char* lib : {"libcuda.so.1", "libnvidia-ml.so.1"})
    fs::create_symlink(fs::canonical(kStandin / lib), d / lib);
  return d;
}

// The one-line notice of a normal run under --device auto: the first failure.
std::string notice(const std::vector<std::string>& env) {
  const ProcessResult r =
      run_process(infer_exe(), {"--manifest", kManifest, shipped_file("samples/ankle-boot.png")}, env);
  for (const std::string& line : ProcessResult::lines(r.err)) {
    if (line.rfind("infer: notice: running on the CPU", 0) == 0) return line;
  }
  return "exit " + std::to_string(r.exit_code) + ", no notice; stderr: " + r.err;
}

// Fetches members of an NVIDIA wheel from PyPI into the cache (outside the repository).
fs::path wheel_file(const std::string& project, const std::string& version, const std::string& member) {
  const ProcessResult r = run_process("/usr/bin/env", {"python3", INFER_SOURCE_DIR "/tools/dev/fetch_wheel.py", project,
                                                       version, "manylinux_x86_64", member});
  const std::vector<std::string> lines = r.out_lines();
  return r.exit_code == 0 && !lines.empty() ? fs::path(lines.back()) : fs::path();
}

bool can_unshare() { return run_process("/usr/bin/unshare", {"-rm", "true"}).exit_code == 0; }

// Runs infer inside a private mount namespace after `mounts` (shell commands, e.g. bind mounts).
ProcessResult infer_in_namespace(const std::string& mounts, const std::vector<std::string>& args,
                                 const std::vector<std::string>& env) {
  std::string command = mounts + " && exec " + infer_exe();
  for (const std::string& a : args) command += " '" + a + "'";
  return run_process("/usr/bin/unshare", {"-rm", "/bin/sh", "-c", command}, env);
}

// Mount commands that give the namespace a /proc/driver/nvidia/version of the given kernel module.
std::string fake_kernel_module(const std::string& release) {
  return "mount -t tmpfs none /proc/driver && mkdir /proc/driver/nvidia && echo 'NVRM version: NVIDIA UNIX x86_64 "
         "Kernel Module  " +
         release + "  Tue Sep 23 09:00:00 UTC 2025' > /proc/driver/nvidia/version";
}

// The report of `infer --check --json` run in a namespace, row by row.
std::map<std::string, nlohmann::json> rows_in_namespace(const std::string& mounts,
                                                        const std::vector<std::string>& env) {
  const ProcessResult r = infer_in_namespace(mounts, {"--check", "--json", "--manifest", kManifest}, env);
  std::map<std::string, nlohmann::json> rows;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_object()) {
    for (const auto& row : j["items"]) rows[row["item"].get<std::string>()] = row;
  }
  return rows;
}

std::string field(const std::map<std::string, nlohmann::json>& rows, const std::string& item, const char* name) {
  const auto it = rows.find(item);
  return it == rows.end() ? "<no row>" : it->second.value(name, std::string());
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

// ---- 1. A broken library file never crashes or hangs infer. ----

struct Damage {
  std::string name;
  std::function<std::string(const std::string&)> apply;
};

// Five truncations and three corruptions; `few` keeps one of each (for the sub-libraries of up to
// 245 MB, where every variant is a copy of that size).
std::vector<Damage> damages(std::size_t size, bool few = false) {
  std::vector<Damage> out;
  const std::vector<std::size_t> cuts = few ? std::vector<std::size_t>{size / 2}
                                            : std::vector<std::size_t>{0, 100, 3000, 4096, 8192, size / 2, size - 100};
  const std::vector<std::size_t> spots =
      few ? std::vector<std::size_t>{size / 3} : std::vector<std::size_t>{64, size / 3, size / 2};
  for (const std::size_t at : cuts) {
    out.push_back({"truncated at " + std::to_string(at), [at](const std::string& b) { return b.substr(0, at); }});
  }
  std::mt19937 rng(std::random_device{}());
  for (const std::size_t at : spots) {
    const auto seed = static_cast<unsigned>(rng());
    out.push_back({"4 KiB of random bytes at " + std::to_string(at), [at, seed](std::string b) {
                     std::mt19937 r(seed);
                     for (std::size_t i = at; i < b.size() && i < at + 4096; ++i) b[i] = static_cast<char>(r());
                     return b;
                   }});
  }
  return out;
}

void expect_survives(const ProcessResult& r, const std::string& what) {
  EXPECT_LT(r.exit_code, 128) << what << ": killed by signal " << r.exit_code - 128 << "\n" << r.err;
  EXPECT_FALSE(has(r.err, "internal error")) << what << "\n" << r.err;
}

// Copies the library folder's file `name` damaged into a folder of its own, first on LD_LIBRARY_PATH.
void run_damaged(const fs::path& real, const std::string& name, bool few = false) {
  const std::string bytes = slurp(real / name);
  ASSERT_GT(bytes.size(), 4096u);
  int runs = 0;
  for (const Damage& d : damages(bytes.size(), few)) {
    SCOPED_TRACE(name + " " + d.name);
    TempDir dir;
    write_file(dir / name, d.apply(bytes));
    const std::vector<std::string> env = {"LD_LIBRARY_PATH=" + dir.path().string(), "INFER_PROBE_TIMEOUT_MS=5000"};
    const Report c = check_json(env);
    expect_survives(c.process, "--check");
    EXPECT_TRUE(c.process.exit_code == 0 || c.process.exit_code == 5) << c.process.err;
    ASSERT_FALSE(c.rows.empty()) << c.process.out << c.process.err;
    if (d.name.rfind("truncated", 0) == 0) {  // always detected, and the file named
      bool named = false;
      for (const auto& [item, row] : c.rows) named = named || has(row.dump(), (dir / name).string());
      EXPECT_TRUE(named) << c.process.out;
      // Said from the file's own headers, before a load is tried: never as the crash that mapping
      // the missing pages would be (SIGBUS at page-size cuts, issue 31).
      const std::string cut = d.name.substr(std::string("truncated at ").size());
      if (cut != "0") {
        EXPECT_TRUE(has(c.process.out, "truncated at " + cut + " of ")) << c.process.out;
      }
      EXPECT_FALSE(has(c.process.out, "SIGBUS")) << c.process.out;
    }
    if (++runs <= 2) {  // the other entry points, on the first damages (each run costs a second)
      expect_survives(run_process(infer_exe(), {"--version"}, env), "--version");
      const ProcessResult run =
          run_process(infer_exe(), {"--manifest", kManifest, shipped_file("samples/ankle-boot.png")}, env);
      expect_survives(run, "a normal run");
      EXPECT_EQ(run.exit_code, 0) << run.err;
      EXPECT_TRUE(has(run.out, "Ankle boot")) << run.out << run.err;
    }
  }
}

TEST(BrokenLibrary, DamagedCudnnFrontNeverCrashesInfer) {
  const fs::path real = loader_dir("libcudnn.so.9");
  if (real.empty()) GTEST_SKIP() << "no cuDNN on this machine to damage";
  run_damaged(real, "libcudnn.so.9");
}

TEST(BrokenLibrary, DamagedCudnnGraphLibraryNeverCrashesInfer) {
  const fs::path real = loader_dir("libcudnn.so.9");
  if (real.empty()) GTEST_SKIP() << "no cuDNN on this machine to damage";
  run_damaged(real, "libcudnn_graph.so.9");
}

TEST(BrokenLibrary, EveryOtherDamagedCudnnSublibraryIsNamed) {
  const fs::path real = loader_dir("libcudnn.so.9");
  if (real.empty()) GTEST_SKIP() << "no cuDNN on this machine to damage";
  for (const char* sub : {"libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn_adv.so.9", "libcudnn_heuristic.so.9",
                          "libcudnn_engines_precompiled.so.9", "libcudnn_engines_runtime_compiled.so.9"}) {
    run_damaged(real, sub, /*few=*/true);
  }
}

TEST(BrokenLibrary, DamagedDriverLibrariesNeverCrashInfer) {
  if (!fs::exists(kStandin / "libcuda.so.1")) GTEST_SKIP() << "no stand-in driver libraries built (no CUDA toolkit)";
  // The stand-in's libcuda.so.1 and libnvidia-ml.so.1 are ELF libraries with the driver's sonames
  // and symbols: damaged, they are what a broken driver install looks like to the probe.
  run_damaged(kStandin, "libcuda.so.1");
  run_damaged(kStandin, "libnvidia-ml.so.1");
}

TEST(BrokenLibrary, DamagedCudaRuntimeNeverCrashesInfer) {
  const fs::path real = loader_dir("libcudart.so.13");
  if (real.empty()) GTEST_SKIP() << "no CUDA runtime on this machine to damage";
  run_damaged(real, "libcudart.so.13");
}

TEST(BrokenLibrary, ALibraryThatNeverFinishesLoadingIsNamedAtTheDeadline) {
  const std::vector<std::string> env = {"LD_LIBRARY_PATH=" + (kFakes / "hang").string(), "INFER_PROBE_TIMEOUT_MS=1500"};
  const auto start = std::chrono::steady_clock::now();
  const Report c = check_json(env);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(c.process.exit_code, 5) << c.process.err;
  const std::string file = (kFakes / "hang" / "libcudnn.so.9").string();
  EXPECT_EQ(c.field("cudnn.version", "found"), file + ": did not finish within 1500 ms while dlopen libcudnn.so.9");
  EXPECT_TRUE(has(c.field("cudnn.version", "fix"), "reinstall " + file)) << c.field("cudnn.version", "fix");
  EXPECT_LT(seconds, 30.0);  // the deadline, not forever (generous: this machine is shared)
  // --version and a run end too (this fake lacks cuDNN's symbols, so the GPU backend's own load
  // fails before the constructor would run; the probe is what meets the hang).
  const ProcessResult version = run_process(infer_exe(), {"--version"}, env);
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_TRUE(has(version.out, "GPU backend not loadable")) << version.out;
  const ProcessResult run =
      run_process(infer_exe(), {"--manifest", kManifest, shipped_file("samples/ankle-boot.png")}, env);
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

TEST(BrokenLibrary, FilesThatAreNotLibrariesAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty file"},
      {"just some text\n", "a text file"},
      {"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 129240\n", "a git-lfs pointer"}};
  for (const auto& [content, what] : cases) {
    TempDir dir;
    write_file(dir / "libcudnn.so.9", content);
    const Report c = check_json({"LD_LIBRARY_PATH=" + dir.path().string()});
    EXPECT_EQ(c.field("cudnn.version", "status"), "FAIL");
    EXPECT_TRUE(
        has(c.field("cudnn.version", "found"), "not a library: " + (dir / "libcudnn.so.9").string() + " (" + what))
        << c.field("cudnn.version", "found");
    EXPECT_TRUE(has(c.field("cudnn.version", "fix"), "remove " + dir.path().string() + " from LD_LIBRARY_PATH"))
        << c.field("cudnn.version", "fix");
  }
}

// ---- 3. Sub-library attribution, against a real cuDNN 9.1 graph library from NVIDIA's wheel. ----

TEST(RealWheel, StrayGraphLibraryFromAnotherReleaseIsTheRootCause) {
  const fs::path real = loader_dir("libcudnn.so.9");
  if (real.empty()) GTEST_SKIP() << "no cuDNN 9.19 on this machine";
  const fs::path graph = wheel_file("nvidia-cudnn-cu12", "9.1.0.70", "nvidia/cudnn/lib/libcudnn_graph.so.9");
  ASSERT_FALSE(graph.empty()) << "tools/dev/fetch_wheel.py could not fetch nvidia-cudnn-cu12 9.1.0.70 from PyPI";
  TempDir dir;
  fs::create_directories(dir / "old");
  fs::copy_file(graph, dir / "old" / "libcudnn_graph.so.9");
  const std::vector<std::string> env = {"LD_LIBRARY_PATH=" + good_driver(dir).string() + ":" + (dir / "old").string()};
  const Report c = check_json(env);
  const std::string found = c.field("cudnn.sublibraries", "found");
  EXPECT_TRUE(has(
      found, "libcudnn_graph.so.9: stray 9.1.0 loaded from " + (dir / "old").string() + " (LD_LIBRARY_PATH entry 2"))
      << found;
  EXPECT_TRUE(has(c.field("cudnn.sublibraries", "fix"), "remove " + (dir / "old").string() + " from LD_LIBRARY_PATH"))
      << c.field("cudnn.sublibraries", "fix");
  // The genuine front answered with the stray library's version: not blamed, it follows.
  EXPECT_TRUE(has(c.field("cudnn.version", "found"), "9.1.0 (answered by " + (dir / "old").string()))
      << c.field("cudnn.version", "found");
  EXPECT_EQ(c.field("cudnn.version", "because"), "cudnn.sublibraries");
  EXPECT_FALSE(has(c.field("cudnn.version", "fix") + c.field("cudnn.sublibraries", "fix"), "install the complete"));
  // ops, cnn and adv fail their checks only because of it: notes under the root cause.
  const nlohmann::json notes = c.rows.at("cudnn.sublibraries").value("notes", nlohmann::json::array());
  EXPECT_TRUE(has(notes.dump(), "a consequence of libcudnn_graph.so.9")) << notes.dump();
  EXPECT_FALSE(has(c.process.err, "Cannot load symbol")) << c.process.err;  // cuDNN's own lines are captured
  // Two libcudnn_graph.so.9 on the loader's path: single_copy counts sub-libraries too, and names the
  // stray one as the copy that shadows the install's own (issue 31).
  EXPECT_TRUE(has(c.field("cudnn.single_copy", "found"),
                  "libcudnn_graph.so.9: " + (dir / "old" / "libcudnn_graph.so.9").string() +
                      " (LD_LIBRARY_PATH entry 2) shadows " + (real / "libcudnn_graph.so.9").string()))
      << c.field("cudnn.single_copy", "found");
  EXPECT_TRUE(has(notice(env), "cudnn.sublibraries: libcudnn_graph.so.9: stray 9.1.0")) << notice(env);
}

// ---- 2, 4, 6. Another major, a wheel-only install, another CUDA runtime: the system copy hidden. ----

TEST(RealWheel, OnlyAnotherCudaRuntimeIsNamedWithItsVersion) {
  const fs::path real = loader_dir("libcudart.so.13");
  if (real.empty() || !can_unshare()) GTEST_SKIP() << "needs this machine's CUDA runtime and unshare -rm";
  const fs::path rt12 = wheel_file("nvidia-cuda-runtime-cu12", "12.2.140", "nvidia/cuda_runtime/lib/libcudart.so.12");
  ASSERT_FALSE(rt12.empty()) << "tools/dev/fetch_wheel.py could not fetch nvidia-cuda-runtime-cu12 12.2.140 from PyPI";
  TempDir dir;
  fs::create_directories(dir / "empty");
  fs::create_directories(dir / "cuda12");
  fs::copy_file(rt12, dir / "cuda12" / "libcudart.so.12");
  const ProcessResult r = infer_in_namespace("mount --bind " + (dir / "empty").string() + " " + real.string(),
                                             {"--check", "--json", "--manifest", kManifest},
                                             {"LD_LIBRARY_PATH=" + (dir / "cuda12").string()});
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  std::string found, fix;
  for (const auto& row : j["items"]) {
    if (row["item"] == "cuda.runtime") found = row["found"], fix = row["fix"];
  }
  EXPECT_TRUE(has(found, "not found (libcudart.so.13); found libcudart.so.12 (12.2) at " +
                             (dir / "cuda12" / "libcudart.so.12").string()))
      << found;
  EXPECT_TRUE(has(fix, "cannot replace it")) << fix;
  EXPECT_FALSE(has(r.out, "the CUDA runtime is 13")) << r.out;  // never the compile-time version as if loaded
}

TEST(RealWheel, OnlyCudnn8IsNamedWithItsVersionAndPlace) {
  const fs::path real = loader_dir("libcudnn.so.9");
  if (real.empty() || !can_unshare()) GTEST_SKIP() << "needs this machine's cuDNN and unshare -rm";
  const fs::path front = wheel_file("nvidia-cudnn-cu11", "8.9.6.50", "nvidia/cudnn/lib/libcudnn.so.8");
  ASSERT_FALSE(front.empty()) << "tools/dev/fetch_wheel.py could not fetch nvidia-cudnn-cu11 8.9.6.50 from PyPI";
  TempDir dir;
  fs::create_directories(dir / "empty");
  fs::create_directories(dir / "cudnn8");
  // As the tarball and the libcudnn8 package lay it out: the real file carries the full version.
  fs::copy_file(front, dir / "cudnn8" / "libcudnn.so.8.9.6");
  fs::create_symlink("libcudnn.so.8.9.6", dir / "cudnn8" / "libcudnn.so.8");
  const auto rows = rows_in_namespace("mount --bind " + (dir / "empty").string() + " " + real.string(),
                                      {"LD_LIBRARY_PATH=" + (dir / "cudnn8").string()});
  const std::string found = field(rows, "cudnn.version", "found");
  EXPECT_TRUE(has(found, "not found (libcudnn.so.9); found libcudnn.so.8 (8.9.6) at " +
                             (dir / "cudnn8" / "libcudnn.so.8.9.6").string() + " (LD_LIBRARY_PATH entry 1"))
      << found;
  EXPECT_TRUE(has(field(rows, "cudnn.version", "fix"), "cannot replace it: install cuDNN 9"))
      << field(rows, "cudnn.version", "fix");
}

TEST(RealWheel, CudnnOnlyInAVirtualenvGetsTheExactLdLibraryPathLine) {
  const fs::path real = loader_dir("libcudnn.so.9");
  if (real.empty() || !can_unshare()) GTEST_SKIP() << "needs this machine's cuDNN and unshare -rm";
  TempDir dir;
  const fs::path venv = dir / "venv";
  const fs::path lib = venv / "lib/python3.11/site-packages/nvidia/cudnn/lib";
  fs::create_directories(lib);
  fs::create_directories(dir / "empty");
  // The wheel's folder is this machine's cuDNN (a bind mount), then the system folder is hidden.
  const ProcessResult r =
      infer_in_namespace("mount --bind " + real.string() + " " + lib.string() + " && mount --bind " +
                             (dir / "empty").string() + " " + real.string(),
                         {"--check", "--json", "--manifest", kManifest}, {"VIRTUAL_ENV=" + venv.string()});
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  std::string found, fix;
  for (const auto& row : j["items"]) {
    if (row["item"] == "cudnn.version") found = row["found"], fix = row["fix"];
  }
  EXPECT_TRUE(has(found, "libcudnn.so.9 9.19.0 for CUDA 13") && has(found, "virtualenv " + venv.string()) &&
              has(found, "which the loader does not search"))
      << found;
  EXPECT_EQ(fix, "use it: export LD_LIBRARY_PATH=" + lib.string() + "${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}");
}

// ---- 5. Driver states. ----

TEST(DriverState, ToolkitStubCopiedAsLibcudaIsNamed) {
  const fs::path stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!fs::exists(stub)) GTEST_SKIP() << "no CUDA toolkit stub at " << stub;
  TempDir dir;
  fs::copy_file(stub, dir / "libcuda.so.1");
  const Report c = check_json({"LD_LIBRARY_PATH=" + dir.path().string()});
  const std::string found = c.field("driver.cuda", "found");
  EXPECT_TRUE(has(found, "is the CUDA toolkit's stub library") && has(found, "CUDA_ERROR_STUB_LIBRARY (34)")) << found;
  EXPECT_TRUE(has(c.field("driver.cuda", "fix"), "remove " + dir.path().string() + " from LD_LIBRARY_PATH"))
      << c.field("driver.cuda", "fix");
  EXPECT_EQ(c.field("gpu.count", "because"), "driver.cuda");
}

TEST(DriverState, NvmlWithoutLibcudaIsAnIncompleteDriverNotAMissingOne) {
  TempDir dir;
  fs::create_symlink(fs::canonical(kFakes / "driver-535" / "libnvidia-ml.so.1"), dir / "libnvidia-ml.so.1");
  const Report c = check_json({"LD_LIBRARY_PATH=" + dir.path().string()});
  EXPECT_EQ(c.field("driver.release", "found"), "535.104.05");  // read from NVML: the release row is about the release
  const std::string found = c.field("driver.cuda", "found");
  EXPECT_TRUE(has(found, "libcuda.so.1 not found, though the driver's NVML is")) << found;
  EXPECT_FALSE(has(c.field("driver.cuda", "fix"), "install the NVIDIA driver")) << c.field("driver.cuda", "fix");
  EXPECT_FALSE(has(c.process.out, "cuInit")) << c.process.out;  // it never ran
}

TEST(DriverState, LibcudaWithoutNvmlPutsTheDriversCudaFirst) {
  TempDir dir;
  fs::create_symlink(fs::canonical(kFakes / "driver-535" / "libcuda.so.1"), dir / "libcuda.so.1");
  const std::string line = notice({"LD_LIBRARY_PATH=" + dir.path().string()});
  EXPECT_TRUE(has(line, "driver.cuda: 12.2")) << line;  // the driver supports CUDA 12.2 only: that, not "install NVML"
}

TEST(DriverState, KernelModuleAndLibrariesOfDifferentReleasesAskForAReboot) {
  TempDir dir;
  fs::copy_file(fs::canonical(kFakes / "driver-535" / "libnvidia-ml.so.1"), dir / "libnvidia-ml.so.580.95.05");
  fs::create_symlink("libnvidia-ml.so.580.95.05", dir / "libnvidia-ml.so.1");
  fs::create_symlink(fs::canonical(kFakes / "driver-535" / "libcuda.so.1"), dir / "libcuda.so.1");
  const Report c = check_json({"LD_LIBRARY_PATH=" + dir.path().string(), "FAKE_NVML_INIT=18"});
  const std::string found = c.field("driver.release", "found");
  EXPECT_TRUE(has(found, "user-space driver libraries are 580.95.05") &&
              has(found, "NVML_ERROR_LIB_RM_VERSION_MISMATCH (18)"))
      << found;
  EXPECT_TRUE(has(c.field("driver.release", "fix"), "reboot")) << c.field("driver.release", "fix");
  EXPECT_FALSE(has(c.field("driver.release", "fix"), "upgrade the NVIDIA driver")) << c.field("driver.release", "fix");
}

TEST(DriverState, AContainerWithoutGpuAccessIsToldToUseTheGpuRuntime) {
  if (!can_unshare()) GTEST_SKIP() << "needs unshare -rm";
  if (loader_dir("libcuda.so.1") != fs::path()) GTEST_SKIP() << "this machine has a driver's libcuda.so.1";
  // The kernel module is loaded (/proc/driver/nvidia/version) but no user-space library is there.
  const ProcessResult run = infer_in_namespace(fake_kernel_module("580.95.05"),
                                               {"--manifest", kManifest, shipped_file("samples/ankle-boot.png")}, {});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(has(run.err, "infer: notice: running on the CPU: driver.cuda: no NVIDIA user-space library")) << run.err;
  const auto rows = rows_in_namespace(fake_kernel_module("580.95.05"), {});
  EXPECT_EQ(field(rows, "driver.release", "status"), "ok");  // 580.95.05, read from /proc
  EXPECT_TRUE(has(field(rows, "driver.cuda", "fix"), "run it with the GPU runtime (docker run --gpus all"))
      << field(rows, "driver.cuda", "fix");
}

TEST(DriverState, KernelModuleOlderThanTheLibrariesAfterAnUpgrade) {
  if (!can_unshare()) GTEST_SKIP() << "needs unshare -rm";
  TempDir dir;
  fs::copy_file(fs::canonical(kFakes / "driver-535" / "libnvidia-ml.so.1"), dir / "libnvidia-ml.so.580.95.05");
  fs::create_symlink("libnvidia-ml.so.580.95.05", dir / "libnvidia-ml.so.1");
  fs::create_symlink(fs::canonical(kFakes / "driver-535" / "libcuda.so.1"), dir / "libcuda.so.1");
  const auto rows = rows_in_namespace(fake_kernel_module("570.86.10"), {"LD_LIBRARY_PATH=" + dir.path().string()});
  EXPECT_EQ(field(rows, "driver.release", "found"),
            "the kernel module is 570.86.10 but the user-space driver libraries are 580.95.05");
  EXPECT_TRUE(has(field(rows, "driver.release", "fix"), "reboot")) << field(rows, "driver.release", "fix");
}

// ---- 7. Only the GPUs CUDA uses. ----

TEST(VisibleGpus, AnOldGpuHiddenByCudaVisibleDevicesDoesNotFailTheMachine) {
  const std::vector<std::string> env = {"LD_LIBRARY_PATH=" + (kFakes / "driver-535").string(), "FAKE_NVML_GPUS=6.0,9.0",
                                        "CUDA_VISIBLE_DEVICES=1"};
  const Report c = check_json(env);
  EXPECT_EQ(c.field("gpu.compute_capability", "status"), "ok") << c.field("gpu.compute_capability", "found");
  EXPECT_EQ(c.field("gpu.compute_capability", "found"), "9.0 (NVIDIA Fake GPU 1)");
  EXPECT_TRUE(has(c.rows.at("gpu.compute_capability").dump(), "hidden by CUDA_VISIBLE_DEVICES: NVIDIA Fake GPU 0"));
  // Without the variable both count, and the old one fails the row.
  const Report all = check_json({env[0], env[1]});
  EXPECT_EQ(all.field("gpu.compute_capability", "status"), "FAIL");
}

// ---- 8. Search-path details. ----

TEST(SearchPath, AnEmptyLdLibraryPathEntryIsTheCurrentFolderAndIsNamed) {
  TempDir dir;
  write_file(dir / "libcudnn.so.9", "");
  const ProcessResult r =
      run_process("/bin/sh", {"-c", "cd '" + dir.path().string() + "' && exec '" + infer_exe() + "' --check"},
                  {"LD_LIBRARY_PATH=:/nonexistent"});
  EXPECT_TRUE(has(r.out, "LD_LIBRARY_PATH entry 1 (empty: the current folder)")) << r.out;
}

TEST(SearchPath, CopiesInPythonEnvironmentsAreNotCalledOnTheSearchPath) {
  const fs::path real = loader_dir("libcudnn.so.9");
  if (real.empty()) GTEST_SKIP() << "no cuDNN on this machine to copy";
  struct Case {
    std::string env, folder, origin;
  };
  TempDir dir;
  const std::vector<Case> cases = {
      {"VIRTUAL_ENV=" + (dir / "venv").string(), "venv/lib/python3.11/site-packages",
       "virtualenv " + (dir / "venv").string()},
      {"PYENV_ROOT=" + (dir / "pyenv").string(), "pyenv/versions/3.11.4/lib/python3.11/site-packages",
       "pyenv " + (dir / "pyenv").string()},
      {"CONDA_PREFIX=" + (dir / "conda").string(), "conda/lib/python3.11/site-packages",
       "conda env " + (dir / "conda").string()},
      {"HOME=" + (dir / "home").string(), "home/.local/lib/python3.11/site-packages", "pip --user (~/.local)"}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.env);
    const fs::path lib = dir / k.folder / "nvidia/cudnn/lib";
    fs::create_directories(lib);
    fs::copy_file(real / "libcudnn.so.9", lib / "libcudnn.so.9");
    const Report c = check_json({k.env});
    EXPECT_EQ(c.field("cudnn.single_copy", "status"), "ok") << c.field("cudnn.single_copy", "found");
    const std::string found = c.field("cudnn.single_copy", "found");
    EXPECT_TRUE(has(found, "; not on the loader path: " + (lib / "libcudnn.so.9").string() + " (" + k.origin)) << found;
    EXPECT_FALSE(has(found, "also on the loader path")) << found;
  }
}

// ---- 9. Issue 31: a foreign front library, an empty search-path entry, a libcuda.so.1 of another
// release than the driver's, the sub-library copy that shadows. Fakes only (tests/fakes/): a
// complete cuDNN 9.19 install of a front and seven sub-libraries stands for the system's. ----

const fs::path kCudnn919 = kFakes / "cudnn-9.19";

// The rows of `infer --check --json` run from `folder` (its current folder).
Report check_json_in(const fs::path& folder, const std::vector<std::string>& env) {
  Report r;
  r.process = run_process("/bin/sh",
                          {"-c", "cd '" + folder.string() + "' && exec '" + infer_exe() +
                                     "' --check --json --manifest '" + kManifest + "'"},
                          env);
  const nlohmann::json j = nlohmann::json::parse(r.process.out, nullptr, false);
  if (j.is_object()) {
    for (const auto& row : j["items"]) r.rows[row["item"].get<std::string>()] = row;
  }
  return r;
}

TEST(ForeignFront, Cudnn8UnderCudnn9sNameIsTheRootCauseWithItsVersionAndCuda) {
  // libcudnn.so.9 that is cuDNN 8.2.0 for CUDA 11.3, alone, before a complete cuDNN 9.19.
  const fs::path c8 = kFakes / "cudnn8-as-9";
  const Report c = check_json({"LD_LIBRARY_PATH=" + c8.string() + ":" + kCudnn919.string()});
  ASSERT_FALSE(c.rows.empty()) << c.process.out << c.process.err;
  const std::string found = c.field("cudnn.version", "found");
  EXPECT_TRUE(has(found, "8.2.0 for CUDA 11.3")) << found;                   // cuDNN 8's count: 8200 = 8.2.0
  EXPECT_TRUE(has(found, (kCudnn919 / "libcudnn.so.9").string())) << found;  // the install it shadows
  EXPECT_FALSE(has(c.process.out, "not a cuDNN 9 version")) << c.process.out;
  EXPECT_TRUE(has(c.field("cudnn.version", "source"), "cudnnGetVersion() = 8200"))
      << c.field("cudnn.version", "source");
  const std::string fix = c.field("cudnn.version", "fix");
  EXPECT_TRUE(has(fix, "remove " + c8.string() + " from LD_LIBRARY_PATH")) << fix;
  // The version row is the root cause; the sub-libraries missing beside the front follow from it.
  EXPECT_EQ(c.field("cudnn.version", "because"), "");
  EXPECT_EQ(c.field("cudnn.sublibraries", "because"), "cudnn.version");
  EXPECT_FALSE(has(c.process.out, "reinstall the complete cuDNN package")) << c.process.out;
  EXPECT_EQ(c.field("cudnn.cuda_major", "found"), "11 (this cuDNN was built with CUDA 11.3)");
  EXPECT_EQ(c.field("cudnn.cuda_major", "because"), "cudnn.version");
  if (fs::exists(kStandin / "libcuda.so.1")) {  // with a driver that passes, the run's notice names the root cause
    TempDir dir;
    const std::string line =
        notice({"LD_LIBRARY_PATH=" + c8.string() + ":" + kCudnn919.string() + ":" + good_driver(dir).string()});
    EXPECT_TRUE(has(line, "cudnn.version: 8.2.0 for CUDA 11.3")) << line;
  }
}

TEST(SearchPath, AFrontInTheCurrentFolderThroughAnEmptyEntryIsNamedWithItsFolder) {
  // LD_LIBRARY_PATH=":<install>": the empty entry is the current folder, which holds a cuDNN 9.1 front.
  TempDir dir;
  fs::copy_file(kFakes / "cudnn-9.1" / "libcudnn.so.9", dir / "libcudnn.so.9");
  const std::string cwd = fs::canonical(dir.path()).string();
  const Report c = check_json_in(cwd, {"LD_LIBRARY_PATH=:" + kCudnn919.string()});
  ASSERT_FALSE(c.rows.empty()) << c.process.out << c.process.err;
  for (const char* empty_folder : {"missing from ;", "files in \"", "into  (", "from  ("}) {
    EXPECT_FALSE(has(c.process.out, empty_folder)) << empty_folder << " in " << c.process.out;
  }
  const std::string found = c.field("cudnn.version", "found");
  EXPECT_TRUE(has(found, "9.1.0 for CUDA 13.0 from " + cwd + "/libcudnn.so.9")) << found;
  EXPECT_TRUE(has(found, "the current folder " + cwd + " (empty entry 1 of LD_LIBRARY_PATH)")) << found;
  EXPECT_TRUE(has(c.field("cudnn.version", "source"), "the current folder (empty entry 1 of LD_LIBRARY_PATH)"))
      << c.field("cudnn.version", "source");
  EXPECT_TRUE(has(c.field("cudnn.version", "fix"), "remove the empty entry 1 from LD_LIBRARY_PATH"))
      << c.field("cudnn.version", "fix");
  // The version row is the root cause, the sub-library row follows from it (not the reverse).
  EXPECT_EQ(c.field("cudnn.version", "because"), "");
  EXPECT_EQ(c.field("cudnn.sublibraries", "because"), "cudnn.version");
  EXPECT_TRUE(has(c.field("cudnn.sublibraries", "found"), "libcudnn_graph.so.9: missing from the current folder " +
                                                              cwd + " (empty entry 1 of LD_LIBRARY_PATH)"))
      << c.field("cudnn.sublibraries", "found");
}

// A libcuda.so.1 named for release 575.57.08 (as a cuda-compat package installs it) in `dir`/compat
// and the fake NVML in `dir`/driver.
std::string foreign_libcuda(const TempDir& dir) {
  fs::create_directories(dir / "compat");
  fs::create_directories(dir / "driver");
  fs::copy_file(fs::canonical(kFakes / "driver-535" / "libcuda.so.1"), dir / "compat" / "libcuda.so.575.57.08");
  fs::create_symlink("libcuda.so.575.57.08", dir / "compat" / "libcuda.so.1");
  fs::copy_file(fs::canonical(kFakes / "driver-535" / "libnvidia-ml.so.1"),
                dir / "driver" / "libnvidia-ml.so.580.82.07");
  fs::create_symlink("libnvidia-ml.so.580.82.07", dir / "driver" / "libnvidia-ml.so.1");
  return (dir / "compat").string() + ":" + (dir / "driver").string();
}

TEST(DriverState, SystemDriverMismatchWithAWorkingNvmlNamesTheLibcudaNotAReboot) {
  TempDir dir;
  const Report c =
      check_json({"LD_LIBRARY_PATH=" + foreign_libcuda(dir), "FAKE_CUDA_INIT=803", "FAKE_NVML_RELEASE=580.82.07"});
  ASSERT_FALSE(c.rows.empty()) << c.process.out << c.process.err;
  const std::string found = c.field("driver.cuda", "found");
  EXPECT_TRUE(has(found, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)")) << found;
  EXPECT_TRUE(has(found, (dir / "compat" / "libcuda.so.1").string() + " (release 575.57.08")) << found;
  EXPECT_TRUE(has(found, "driver 580.82.07")) << found;
  EXPECT_FALSE(has(c.process.out, "of another release but")) << c.process.out;
  const std::string fix = c.field("driver.cuda", "fix");
  EXPECT_TRUE(has(fix, "remove " + (dir / "compat").string() + " from LD_LIBRARY_PATH")) << fix;
  EXPECT_FALSE(has(c.process.out, "reboot")) << c.process.out;
  if (!fs::exists("/proc/driver/nvidia/version")) {
    EXPECT_FALSE(has(c.process.out, "/proc/driver/nvidia/version")) << c.process.out;
  }
  EXPECT_EQ(c.field("driver.release", "status"), "ok") << c.field("driver.release", "found");
  EXPECT_EQ(c.field("gpu.count", "because"), "driver.cuda");
}

TEST(DriverState, SystemDriverMismatchWithNvmlFailingTooAsksForARebootAndCitesNoMissingFile) {
  TempDir dir;
  const Report c = check_json({"LD_LIBRARY_PATH=" + foreign_libcuda(dir), "FAKE_CUDA_INIT=803", "FAKE_NVML_INIT=18"});
  ASSERT_FALSE(c.rows.empty()) << c.process.out << c.process.err;
  const std::string found = c.field("driver.release", "found");
  EXPECT_TRUE(has(found, "NVML_ERROR_LIB_RM_VERSION_MISMATCH (18)") &&
              has(found, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)"))
      << found;
  EXPECT_FALSE(has(found, "of another release but")) << found;  // no release is named where none is known
  EXPECT_TRUE(has(c.field("driver.release", "fix"), "reboot")) << c.field("driver.release", "fix");
  if (!fs::exists("/proc/driver/nvidia/version")) {
    EXPECT_FALSE(has(c.process.out, "/proc/driver/nvidia/version")) << c.process.out;
  }
}

TEST(SingleCopy, TheStraySublibraryThatShadowsIsNamedNotTheInstallsOwn) {
  TempDir dir;
  fs::create_directories(dir / "stray");
  fs::copy_file(kCudnn919 / "libcudnn_cnn.so.9", dir / "stray" / "libcudnn_cnn.so.9");
  const Report c = check_json({"LD_LIBRARY_PATH=" + (dir / "stray").string() + ":" + kCudnn919.string()});
  ASSERT_FALSE(c.rows.empty()) << c.process.out << c.process.err;
  const std::string found = c.field("cudnn.single_copy", "found");
  EXPECT_EQ(c.field("cudnn.single_copy", "status"), "warn") << found;
  EXPECT_TRUE(has(found, "libcudnn_cnn.so.9: " + (dir / "stray" / "libcudnn_cnn.so.9").string() +
                             " (LD_LIBRARY_PATH entry 1) shadows " + (kCudnn919 / "libcudnn_cnn.so.9").string()))
      << found;
  // The install's own copy, beside the front, is never called the extra one.
  EXPECT_FALSE(has(found, "also on the loader path: " + (kCudnn919 / "libcudnn_cnn.so.9").string())) << found;
  EXPECT_FALSE(has(found, ", " + (kCudnn919 / "libcudnn_cnn.so.9").string())) << found;
  EXPECT_TRUE(has(c.field("cudnn.single_copy", "fix"), "remove " + (dir / "stray").string() + " from LD_LIBRARY_PATH"))
      << c.field("cudnn.single_copy", "fix");
  EXPECT_TRUE(has(c.field("cudnn.sublibraries", "fix"), "remove " + (dir / "stray").string() + " from LD_LIBRARY_PATH"))
      << c.field("cudnn.sublibraries", "fix");
}

}  // namespace
}  // namespace infer::test
