// `infer --check`, `--write-manifest` and the start-up check end to end, against the real dynamic
// loader: this machine as it is, and broken environments built here in temporary folders (fake
// NVIDIA libraries from tests/manifest/, copies of the real cuDNN) put on LD_LIBRARY_PATH of the
// child process.
#include <dlfcn.h>
#include <link.h>

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "infer/errors.h"
#include "backends/gpu_backend.h"
#include "tests/support/process.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

namespace fs = std::filesystem;

// One backend's diagnosis, in schema 1 (the shipped VERSIONS.toml, schema 2, has its own tests in
// test_manifest_backends.cpp).
const std::string kManifest = test_file("tests/data/VERSIONS.schema1.toml");
const fs::path kFakes = (exe_dir() / INFER_FAKE_LIBRARY_DIR).lexically_normal();  // relative to bin/

struct Check {
  ProcessResult process;
  nlohmann::json report;
  std::map<std::string, nlohmann::json> rows;
  const nlohmann::json& row(const std::string& item) const {
    static const nlohmann::json none;
    const auto it = rows.find(item);
    return it == rows.end() ? none : it->second;
  }
};

Check check(const std::vector<std::string>& env, const std::string& manifest = kManifest) {
  Check c;
  c.process = run_process(infer_exe(), {"--check", "--json", "--manifest", manifest}, env);
  c.report = nlohmann::json::parse(c.process.out, nullptr, false);
  if (c.report.is_object()) {
    for (const auto& r : c.report["items"]) c.rows[r["item"].get<std::string>()] = r;
  }
  return c;
}

std::string str(const nlohmann::json& row, const char* field) {
  return row.is_object() ? row.value(field, std::string()) : "<no row>";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The folder the loader takes the real libcudnn.so.9 from, or empty.
fs::path real_cudnn_dir() {
  void* h = dlopen("libcudnn.so.9", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return {};
  link_map* map = nullptr;
  fs::path dir;
  if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map) dir = fs::path(map->l_name).parent_path();
  dlclose(h);
  return dir;
}

bool machine_has_driver() {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

// A folder with a real copy of libcudnn.so.9 and links to its sub-libraries, except `without`.
void make_cudnn_folder(const fs::path& dir, const fs::path& real, const std::string& without = "") {
  fs::create_directories(dir);
  fs::copy_file(real / "libcudnn.so.9", dir / "libcudnn.so.9");
  for (const char* sub :
       {"libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn_adv.so.9", "libcudnn_heuristic.so.9",
        "libcudnn_engines_precompiled.so.9", "libcudnn_engines_runtime_compiled.so.9"}) {
    if (sub != without) fs::create_symlink(fs::canonical(real / sub), dir / sub);
  }
}

TEST(CheckThisMachine, NoDriverIsReportedAsNotInstalled) {
  if (machine_has_driver()) GTEST_SKIP() << "this machine has an NVIDIA driver (libcuda.so.1 loads)";
  const Check c = check({});
  ASSERT_TRUE(c.report.is_object()) << c.process.out << c.process.err;
  EXPECT_EQ(c.process.exit_code, 5);
  EXPECT_EQ(c.report["ok"], false);
  const auto& driver = c.row("driver.release");
  EXPECT_EQ(str(driver, "status"), "FAIL");
  EXPECT_EQ(str(driver, "found"), "not installed (libcuda.so.1 not found)");
  EXPECT_FALSE(has(c.process.out, "insufficient")) << c.process.out;
  EXPECT_TRUE(has(str(driver, "fix"), "install the NVIDIA driver (CUDA 13.0 needs driver >= 580.65.06"))
      << str(driver, "fix");
  EXPECT_NE(str(c.row("gpu.count"), "status"), "ok");  // never silently ok
  EXPECT_EQ(str(c.row("gpu.count"), "because"), "driver.release");
  const fs::path cudnn = real_cudnn_dir();
  if (cudnn.empty()) GTEST_SKIP() << "no cuDNN on this machine";
  const auto& v = c.row("cudnn.version");
  EXPECT_EQ(str(v, "status"), "ok");
  EXPECT_EQ(str(v, "found"), "9.19.0");
  EXPECT_EQ(str(v, "source"), "cudnnGetVersion (" + (cudnn / "libcudnn.so.9").string() + ")");
  EXPECT_EQ(str(c.row("cudnn.sublibraries"), "status"), "ok") << str(c.row("cudnn.sublibraries"), "found");
}

TEST(CheckThisMachine, TableHasEveryColumnAndAFixPerNonOkRow) {
  const ProcessResult r = run_process(infer_exe(), {"--check", "--manifest", kManifest});
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 5) << r.err;
  const std::vector<std::string> lines = r.out_lines();
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0], "manifest: " + kManifest);
  EXPECT_EQ(lines[1].rfind("item ", 0), 0u);
  for (const char* col : {"expected", "found", "source", "status"}) EXPECT_TRUE(has(lines[1], col)) << lines[1];
  // Under each row that is not ok (after its wrapped continuation lines, which start with the
  // first column blank): its fix, or the row it follows from.
  auto is_continuation = [](const std::string& l) { return l.rfind("     ", 0) == 0; };
  for (std::size_t i = 2; i + 1 < lines.size(); ++i) {
    const bool not_ok = has(lines[i], "  FAIL") || has(lines[i], "  warn") || has(lines[i], "  unknown");
    if (!not_ok || lines[i].rfind("    ", 0) == 0) continue;
    std::size_t j = i + 1;
    while (j < lines.size() && is_continuation(lines[j])) ++j;
    ASSERT_LT(j, lines.size()) << lines[i];
    EXPECT_TRUE(lines[j].rfind("    fix: ", 0) == 0 || lines[j].rfind("    (follows from ", 0) == 0 ||
                lines[j].rfind("    note: ", 0) == 0)
        << lines[i] << "\n"
        << lines[j];
  }
  EXPECT_EQ(lines.back().rfind(r.exit_code == 0 ? "result: ok" : "result: MISMATCH", 0), 0u) << lines.back();
}

TEST(CheckScenario, CudnnOlderThanCompiledAndShadowingTheSystemCopy) {
  const Check c = check({"LD_LIBRARY_PATH=" + (kFakes / "cudnn-9.1").string()});
  ASSERT_TRUE(c.report.is_object()) << c.process.err;
  EXPECT_EQ(c.process.exit_code, 5);
  const auto& v = c.row("cudnn.version");
  EXPECT_EQ(str(v, "status"), "FAIL");
  const auto& compat = c.row("cudnn.runtime_compatible");
  EXPECT_EQ(str(compat, "status"), "FAIL");
  EXPECT_EQ(str(compat, "found"), "9.1.0 loaded; compiled against 9.19.0");
  const fs::path real = real_cudnn_dir();
  if (real.empty()) {  // the fake alone: an old cuDNN
    EXPECT_EQ(str(v, "found"), "9.1.0");
    EXPECT_EQ(str(v, "source"), "cudnnGetVersion (" + (kFakes / "cudnn-9.1" / "libcudnn.so.9").string() + ")");
    EXPECT_TRUE(has(str(compat, "fix"), "is older than the 9.19 the backend was compiled with")) << str(compat, "fix");
  } else {  // a lone front before the system's complete install, whose sub-libraries it loads: the root cause
    EXPECT_TRUE(has(str(v, "found"), "9.1.0 for CUDA 13.0 from " + (kFakes / "cudnn-9.1" / "libcudnn.so.9").string() +
                                         ": a front library without its sub-libraries"))
        << str(v, "found");
    EXPECT_TRUE(has(str(v, "source"), "cudnnGetVersion() = 90100 (9.1.0)")) << str(v, "source");
    EXPECT_TRUE(has(str(v, "fix"), "remove " + (kFakes / "cudnn-9.1").string() + " from LD_LIBRARY_PATH"))
        << str(v, "fix");
    EXPECT_EQ(str(compat, "because"), "cudnn.version");
    EXPECT_EQ(str(c.row("cudnn.sublibraries"), "because"), "cudnn.version");
  }
  // The fake folder has no sub-libraries next to it.
  EXPECT_EQ(str(c.row("cudnn.sublibraries"), "status"), "FAIL");
  EXPECT_TRUE(has(str(c.row("cudnn.sublibraries"), "found"), "libcudnn_cnn.so.9: missing from"))
      << str(c.row("cudnn.sublibraries"), "found");
  if (!real.empty()) {  // the fake shadows the real one: an advisory warning naming both
    const auto& copies = c.row("cudnn.single_copy");
    EXPECT_EQ(str(copies, "status"), "warn");
    EXPECT_TRUE(has(str(copies, "found"), fs::canonical(real / "libcudnn.so.9").string())) << str(copies, "found");
  }
}

TEST(CheckScenario, CudnnBuiltForAnotherCudaMajor) {
  const Check c = check({"LD_LIBRARY_PATH=" + (kFakes / "cudnn-cuda12").string()});
  const auto& row = c.row("cudnn.cuda_major");
  EXPECT_EQ(str(row, "status"), "FAIL");
  EXPECT_EQ(str(row, "found"), "12 (this cuDNN was built with CUDA 12.8)");
  EXPECT_TRUE(has(str(row, "fix"), "this cuDNN is the build for CUDA 12 but the CUDA runtime is 13"))
      << str(row, "fix");
  EXPECT_EQ(str(c.row("cudnn.version"), "status"), "ok");  // 9.19.0: the version alone is right
}

TEST(CheckScenario, DriverTooOldForTheCudaRuntime) {
  const Check c = check({"LD_LIBRARY_PATH=" + (kFakes / "driver-535").string()});
  ASSERT_TRUE(c.report.is_object()) << c.process.err;
  EXPECT_EQ(c.process.exit_code, 5);
  const auto& release = c.row("driver.release");
  EXPECT_EQ(str(release, "status"), "FAIL");
  EXPECT_EQ(str(release, "found"), "535.104.05 (supports CUDA 12.2)");
  EXPECT_EQ(str(release, "source"),
            "nvmlSystemGetDriverVersion (" + (kFakes / "driver-535" / "libnvidia-ml.so.1").string() + ")");
  const auto& cuda = c.row("driver.cuda");
  EXPECT_EQ(str(cuda, "found"), "12.2 (driver 535.104.05)");
  EXPECT_FALSE(has(c.process.out, "12020"));  // never a bare encoded version
  const auto& compat = c.row("driver.runtime_compatible");
  EXPECT_EQ(str(compat, "status"), "FAIL");
  EXPECT_EQ(str(compat, "found"), "driver 535.104.05 (supports CUDA 12.2); CUDA runtime 13.0 needs >= 580.65.06");
  EXPECT_EQ(str(c.row("gpu.count"), "status"), "ok");
  EXPECT_EQ(str(c.row("gpu.compute_capability"), "found"), "8.0 (NVIDIA Fake GPU)");
}

TEST(CheckScenario, NoGpuVisibleBecauseOfCudaVisibleDevices) {
  const Check c = check({"LD_LIBRARY_PATH=" + (kFakes / "driver-535").string(), "CUDA_VISIBLE_DEVICES=-1"});
  const auto& row = c.row("gpu.count");
  EXPECT_EQ(str(row, "status"), "FAIL");
  EXPECT_TRUE(has(str(row, "found"), "0; CUDA_VISIBLE_DEVICES='-1'; NVML sees 1")) << str(row, "found");
  EXPECT_EQ(str(row, "fix"), "CUDA_VISIBLE_DEVICES='-1' hides every GPU: unset it or set it to a GPU index");
}

TEST(CheckScenario, ComputeCapabilityBelowTheFloor) {
  const Check c = check({"LD_LIBRARY_PATH=" + (kFakes / "driver-535").string(), "FAKE_NVML_CC=6.1"});
  const auto& row = c.row("gpu.compute_capability");
  EXPECT_EQ(str(row, "status"), "FAIL");
  EXPECT_EQ(str(row, "found"), "6.1 (NVIDIA Fake GPU)");
  EXPECT_TRUE(has(str(row, "fix"),
                  "NVIDIA Fake GPU has 6.1; this deployment needs compute capability >=7.5; CUDA 13 supports >= 7.5"))
      << str(row, "fix");
}

TEST(CheckScenario, CudnnFolderMissingOneSublibrary) {
  const fs::path real = real_cudnn_dir();
  if (real.empty()) GTEST_SKIP() << "no cuDNN on this machine to copy";
  TempDir dir;
  make_cudnn_folder(dir / "cudnn", real, "libcudnn_cnn.so.9");
  const Check c = check({"LD_LIBRARY_PATH=" + (dir / "cudnn").string()});
  const auto& row = c.row("cudnn.sublibraries");
  EXPECT_EQ(str(row, "status"), "FAIL");
  const std::string found = str(row, "found");
  EXPECT_TRUE(has(found, "libcudnn_cnn.so.9: missing from " + (dir / "cudnn").string())) << found;
  // The loader then took it from the system install: another directory, reported as such.
  EXPECT_TRUE(has(found, "from another directory")) << found;
  EXPECT_FALSE(has(found, "libcudnn_ops.so.9")) << found;
  EXPECT_TRUE(has(str(row, "fix"), "reinstall the complete cuDNN package into " + (dir / "cudnn").string()))
      << str(row, "fix");
  EXPECT_EQ(str(c.row("cudnn.version"), "status"), "ok");
}

TEST(CheckScenario, TwoCudnnCopiesOnThePath) {
  const fs::path real = real_cudnn_dir();
  if (real.empty()) GTEST_SKIP() << "no cuDNN on this machine to copy";
  TempDir dir;
  make_cudnn_folder(dir / "a", real);
  make_cudnn_folder(dir / "b", real);
  const Check c = check({"LD_LIBRARY_PATH=" + (dir / "a").string() + ":" + (dir / "b").string()});
  const auto& row = c.row("cudnn.single_copy");
  EXPECT_EQ(str(row, "status"), "warn");  // advisory in the shipped manifest
  const std::string found = str(row, "found");
  EXPECT_TRUE(has(found, "loaded " + (dir / "a" / "libcudnn.so.9").string())) << found;
  EXPECT_TRUE(has(found, (fs::canonical(dir / "b") / "libcudnn.so.9").string())) << found;
  EXPECT_TRUE(has(str(row, "fix"), "keep one libcudnn.so.9")) << str(row, "fix");
  EXPECT_EQ(str(c.row("cudnn.sublibraries"), "status"), "ok") << str(c.row("cudnn.sublibraries"), "found");
}

TEST(CheckManifest, MalformedManifestExitsWithThreeNamingFileLineAndKey) {
  TempDir dir;
  write_file(dir / "v.toml", "schema = 1\n[cudnn]\nversion = \">=9.19, <\"\n");
  const ProcessResult r = run_process(infer_exe(), {"--check", "--manifest", (dir / "v.toml").string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err,
            "infer: " + (dir / "v.toml").string() +
                ": line 3: key 'cudnn.version': bad constraint: '>=9.19, <': '' is not a version; expected forms: "
                "13.0, 9.19.*, >=580.65.06, \">=9.1, <10\", *\n");
  EXPECT_EQ(r.out, "");
  // Inference refuses to start on it too.
  const ProcessResult run =
      run_process(infer_exe(), {"--manifest", (dir / "v.toml").string(), test_file("samples/bag.png")});
  EXPECT_EQ(run.exit_code, 3);
}

// A tiny valid model: flatten + linear(784 -> 2) + softmax, its weights written here.
void write_tiny_model(const fs::path& dir) {
  fs::create_directories(dir);
  write_file(dir / "tiny.toml",
             "format = \"infer-model\"\nformat_version = 1\nname = \"tiny\"\nweights = \"tiny.safetensors\"\n"
             "[input]\nchannels = 1\nheight = 28\nwidth = 28\nmean = [0.5]\nstd = [0.5]\nlabels = [\"a\", \"b\"]\n"
             "[[layers]]\nname = \"flat\"\ntype = \"flatten\"\n"
             "[[layers]]\nname = \"fc\"\ntype = \"linear\"\nout_features = 2\n"
             "[[layers]]\nname = \"prob\"\ntype = \"softmax\"\n");
  const std::string header =
      R"({"fc.weight":{"dtype":"F32","shape":[2,784],"data_offsets":[0,6272]},"fc.bias":{"dtype":"F32","shape":[2],"data_offsets":[6272,6280]}})";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header;
  std::vector<float> data(1570);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 7) * 0.001f;
  bytes.append(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float));
  write_file(dir / "tiny.safetensors", bytes);
}

TEST(WriteManifest, RoundTripPassesOnThisMachine) {
  TempDir dir;
  write_tiny_model(dir / "model");
  const std::string path = (dir / "deploy" / "VERSIONS.toml").string();
  fs::create_directories(dir / "deploy");
  const ProcessResult w =
      run_process(infer_exe(), {"--write-manifest", path, "--model", (dir / "model" / "tiny.toml").string()});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  const std::string text = slurp(path);
  EXPECT_TRUE(has(text, "path = \"../model/tiny.safetensors\"")) << text;
  if (!machine_has_driver()) {
    EXPECT_TRUE(has(text, "# not found when written (libcuda.so.1 not found)")) << text;
  }
  for (const auto& e : fs::directory_iterator(dir / "deploy"))
    EXPECT_EQ(e.path().filename(), "VERSIONS.toml");  // no temp left
  const Check c = check({}, path);
  EXPECT_EQ(c.process.exit_code, 0) << c.process.out;
  EXPECT_EQ(c.report["ok"], true);
  EXPECT_EQ(str(c.row("model:../model/tiny.toml"), "status"), "ok");
  // And a run with that manifest verifies the digests and starts.
  const ProcessResult run = run_process(
      infer_exe(),
      {"--manifest", path, "--model", (dir / "model" / "tiny.toml").string(), test_file("samples/bag.png")});
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

TEST(ModelDigest, WeightsWithAWrongDigestAreRefusedNamingBothDigests) {
  TempDir dir;
  write_tiny_model(dir.path());
  const std::string good(64, '0');
  write_file(dir / "v.toml", "schema = 1\n[[model.files]]\npath = \"tiny.safetensors\"\nsha256 = \"" + good + "\"\n");
  const std::string image = test_file("samples/bag.png");
  const ProcessResult r = run_process(infer_exe(), {"--manifest", (dir / "v.toml").string(), "--model",
                                                    (dir / "tiny.toml").string(), "--device", "cpu", image});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(has(r.err, (dir / "tiny.safetensors").string() + ": SHA-256 is ")) << r.err;
  EXPECT_TRUE(has(r.err, "lists " + good + ": refusing this file")) << r.err;
  EXPECT_EQ(r.out, "");
  // --check reports the same file as a FAIL row.
  const Check c = check({}, (dir / "v.toml").string());
  EXPECT_EQ(str(c.row("model:tiny.safetensors"), "status"), "FAIL");
  // A model the manifest does not list is not refused, and --no-verify skips the check, saying so.
  write_file(dir / "other.toml", "schema = 1\n");
  EXPECT_EQ(run_process(infer_exe(), {"--manifest", (dir / "other.toml").string(), "--model",
                                      (dir / "tiny.toml").string(), "--device", "cpu", image})
                .exit_code,
            0);
  const ProcessResult skipped =
      run_process(infer_exe(), {"--no-verify", "--manifest", (dir / "v.toml").string(), "--model",
                                (dir / "tiny.toml").string(), "--device", "cpu", image});
  EXPECT_EQ(skipped.exit_code, 0);
  EXPECT_EQ(skipped.err, "infer: notice: --no-verify: the environment and the model digests are not checked\n");
}

TEST(StartupCheck, AutoFallsBackNamingTheFirstFailureAndGpuShowsTheReport) {
  TempDir dir;
  write_tiny_model(dir.path());
  const std::vector<std::string> model = {"--manifest", kManifest, "--model", (dir / "tiny.toml").string()};
  const Check c = check({"LD_LIBRARY_PATH=" + (kFakes / "driver-535").string()});
  ASSERT_EQ(c.process.exit_code, 5);
  const std::string image = test_file("samples/bag.png");
  std::vector<std::string> args = model;
  args.push_back(image);
  const ProcessResult autorun = run_process(infer_exe(), args, {"LD_LIBRARY_PATH=" + (kFakes / "driver-535").string()});
  EXPECT_EQ(autorun.exit_code, 0) << autorun.err;
  EXPECT_EQ(
      autorun.err,
      "infer: notice: running on the CPU: driver.release: 535.104.05 (supports CUDA 12.2) (expected >=580.65.06)\n");
  EXPECT_TRUE(has(autorun.out, "[cpu]")) << autorun.out;
  args.insert(args.begin(), {"--device", "gpu"});
  const ProcessResult gpu = run_process(infer_exe(), args, {"LD_LIBRARY_PATH=" + (kFakes / "driver-535").string()});
  EXPECT_EQ(gpu.exit_code, 4);
  EXPECT_TRUE(has(gpu.err, "infer: the GPU is unusable (--device gpu): the environment does not match " + kManifest +
                               " (first: driver.release: 535.104.05"))
      << gpu.err;
  EXPECT_TRUE(has(gpu.err, "result: MISMATCH")) << gpu.err;  // the whole table
  EXPECT_EQ(gpu.out, "");
}

// A GPU backend library built from another list of ops (graph/ops.h) is refused at load: the
// plugin reads the Network directly, and sizeof(Network) does not change when an op is added, so
// before ops_hash a stale library was accepted and then met a kind it did not know.
TEST(GpuPlugin, ALibraryBuiltFromAnotherOpListIsRefused) {
  const fs::path other = kFakes / "gpu-plugin" / "libfake_gpu_plugin_1.so";
  try {
    GpuLibrary::open(other);
    ADD_FAILURE() << "a plugin with another ops_hash was loaded";
  } catch (const GpuUnavailableError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a GPU backend of this build of infer (ABI mismatch)"),
              std::string::npos)
        << e.what();
  }
  // The control: the same library with this build's ops_hash loads.
  EXPECT_NO_THROW(GpuLibrary::open(kFakes / "gpu-plugin" / "libfake_gpu_plugin_0.so"));
}

}  // namespace
}  // namespace infer::test
