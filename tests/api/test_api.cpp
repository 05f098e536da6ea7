// The public API (include/infer/), through libinfer.so as a program uses it: only <infer/...>
// headers, linked against the shared library (exported symbols only, exports.map), so these tests
// also show that its types and errors cross the library's boundary. The answers are compared with
// the infer command's on the same files.
#include <gtest/gtest.h>

#include <infer/infer.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/process.h"

namespace {

namespace fs = std::filesystem;
using infer::test::ProcessResult;
using infer::test::TempDir;

fs::path exe_dir() { return fs::read_symlink("/proc/self/exe").parent_path(); }
fs::path samples_dir() { return exe_dir().parent_path() / "share" / "infer-tests" / "samples"; }

std::vector<fs::path> samples() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(samples_dir())) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

infer::ClassifierOptions on_cpu() {
  infer::ClassifierOptions o;
  o.device = infer::Device::Cpu;
  return o;
}

std::mt19937 seeded(unsigned& seed) {
  seed = std::random_device{}();
  return std::mt19937(seed);
}

// `count` floats from N(0, 1): samples for run() and classify().
std::vector<float> normal_floats(std::mt19937& gen, std::size_t count) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(count);
  for (float& v : x) v = normal(gen);
  return x;
}

TEST(Api, VersionIsTheHeadersAndTheRuleHolds) {
  const infer::Version v = infer::version();
  EXPECT_EQ(v.major, INFER_VERSION_MAJOR);
  EXPECT_EQ(v.minor, INFER_VERSION_MINOR);
  EXPECT_EQ(v.patch, INFER_VERSION_PATCH);
  EXPECT_STREQ(infer::version_string(), INFER_VERSION_STRING);
  EXPECT_TRUE(infer::compatible(v));
  EXPECT_TRUE(infer::compatible({0, 1, 7}, {0, 1, 0}));   // patches: either way
  EXPECT_FALSE(infer::compatible({0, 2, 0}, {0, 1, 0}));  // 0.x: minor versions break
  EXPECT_TRUE(infer::compatible({1, 3, 0}, {1, 2, 0}));   // 1.x: a newer minor keeps the API
  EXPECT_FALSE(infer::compatible({1, 1, 0}, {1, 2, 0}));  // ... an older one may lack some of it
  EXPECT_FALSE(infer::compatible({2, 0, 0}, {1, 9, 0}));
}

// Each sample, alone and as a batch, gets the classes and scores `infer --json` prints for it.
TEST(Api, ClassifiesTheSamplesAsTheCommandDoes) {
  const std::vector<fs::path> files = samples();
  ASSERT_GE(files.size(), 5u);
  std::vector<std::string> args{"--device", "cpu", "--json", "--top-k", "3"};
  for (const fs::path& f : files) args.push_back(f.string());
  const ProcessResult cli = infer::test::run_process((exe_dir() / "infer").string(), args);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const std::vector<std::string> lines = cli.out_lines();
  ASSERT_EQ(lines.size(), files.size());

  infer::Classifier classifier({}, on_cpu());  // the shipped model
  EXPECT_STREQ(classifier.device(), "cpu");
  const std::vector<infer::Classification> batch = classifier.classify_batch(files, 3);
  ASSERT_EQ(batch.size(), files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(files[i].string());
    const nlohmann::json expected = nlohmann::json::parse(lines[i]);
    const std::vector<infer::Prediction> single = classifier.classify(files[i], 3);
    ASSERT_TRUE(batch[i].ok()) << batch[i].error;
    ASSERT_EQ(single.size(), 3u);
    ASSERT_EQ(batch[i].top.size(), 3u);
    // The same batch as the command's, so the same kernels: the same floats (JSON keeps a float's
    // shortest round-trip form).
    for (std::size_t j = 0; j < 3; ++j) {
      EXPECT_EQ(batch[i].top[j].index, expected["top"][j]["index"].get<int>());
      EXPECT_EQ(batch[i].top[j].label, expected["top"][j]["label"].get<std::string>());
      EXPECT_EQ(batch[i].top[j].score, expected["top"][j]["prob"].get<float>());
    }
    // Alone, an image may meet other kernels (oneDNN's Winograd variant depends on the batch): the
    // same class.
    EXPECT_EQ(single[0].index, batch[i].top[0].index);
  }
}

// A file that is not an image (fresh random bytes) and a missing one, among good ones: their errors
// are returned in their places and the others are classified; classify(path) throws them, by type.
TEST(Api, ABadImageInABatchDoesNotStopTheOthers) {
  unsigned seed = 0;
  std::mt19937 gen = seeded(seed);
  SCOPED_TRACE("random seed " + std::to_string(seed));
  TempDir dir;
  std::string bytes(1 + gen() % 4096, '\0');
  for (char& c : bytes) c = static_cast<char>(gen());
  const fs::path noise = dir / "noise.png";
  infer::test::write_file(noise, bytes);
  const fs::path missing = dir / "missing.png";
  const std::vector<fs::path> good = samples();

  infer::ClassifierOptions o = on_cpu();
  o.max_batch = 2;  // the bad ones fall in different batches
  infer::Classifier classifier({}, o);
  const std::vector<infer::Classification> r =
      classifier.classify_batch({good[0], noise, good[1], missing, good[2]}, 2);
  ASSERT_EQ(r.size(), 5u);
  for (std::size_t i : {0u, 2u, 4u}) EXPECT_TRUE(r[i].ok()) << r[i].error;
  EXPECT_EQ(r[1].error.rfind(noise.string() + ": ", 0), 0u) << r[1].error;
  EXPECT_EQ(r[3].error.rfind(missing.string() + ": ", 0), 0u) << r[3].error;
  EXPECT_EQ(r[2].top[0].index, classifier.classify(good[1], 1)[0].index);
  try {
    classifier.classify(noise);
    FAIL() << "no error for " << noise;
  } catch (const infer::InputError& e) {
    EXPECT_EQ(e.file(), noise.string());
  }
}

// Tensors in and raw outputs out, across batches: run() equals one sample at a time, and the
// classes of classify(sample) are the order of run()'s outputs; an image's tensor is classified as
// the image. Fresh random inputs.
TEST(Api, TensorsAndRawOutputsAgreeWithClassify) {
  unsigned seed = 0;
  std::mt19937 gen = seeded(seed);
  SCOPED_TRACE("random seed " + std::to_string(seed));
  infer::ClassifierOptions o = on_cpu();
  // One sample per pass, so that run(x, 5) splits into passes and each runs the kernels a single
  // sample runs: a convolution of another batch size may run another kernel (oneDNN does on AVX2,
  // with no Winograd there), whose sums round differently.
  o.max_batch = 1;
  infer::Classifier classifier({}, o);
  const std::size_t in = classifier.input_size(), out = classifier.output_size();
  const infer::InputShape shape = classifier.input_shape();
  EXPECT_EQ(in, static_cast<std::size_t>(shape.channels * shape.height * shape.width));
  const int n = 5;
  const std::vector<float> x = normal_floats(gen, static_cast<std::size_t>(n) * in);
  std::vector<float> y(static_cast<std::size_t>(n) * out), one(out);
  classifier.run(x.data(), n, y.data());
  for (int i = 0; i < n; ++i) {
    const float* xi = x.data() + static_cast<std::size_t>(i) * in;
    const float* yi = y.data() + static_cast<std::size_t>(i) * out;
    classifier.run(xi, 1, one.data());
    // The same kernels on the same sample: the same floats.
    for (std::size_t c = 0; c < out; ++c) EXPECT_EQ(one[c], yi[c]) << "class " << c;
    const std::vector<infer::Prediction> top = classifier.classify(xi, static_cast<int>(out));
    ASSERT_EQ(top.size(), out);
    for (std::size_t j = 0; j + 1 < out; ++j) EXPECT_GE(top[j].score, top[j + 1].score);
    for (const infer::Prediction& p : top) EXPECT_EQ(p.score, one[static_cast<std::size_t>(p.index)]);
  }
  const fs::path image = samples()[0];
  std::vector<float> sample(in);
  classifier.preprocess(image, sample.data());
  EXPECT_EQ(classifier.classify(sample.data(), 1)[0].index, classifier.classify(image, 1)[0].index);
}

// classify_samples() over n samples in passes of max_batch: each sample's classes are run()'s
// outputs for it in the same passes (so the same kernels and the same floats), best first, with the
// last pass a short one. Fresh random inputs.
TEST(Api, ClassifySamplesRanksRunsOutputsAcrossPasses) {
  unsigned seed = 0;
  std::mt19937 gen = seeded(seed);
  SCOPED_TRACE("random seed " + std::to_string(seed));
  infer::ClassifierOptions o = on_cpu();
  o.max_batch = 4;
  infer::Classifier classifier({}, o);
  const std::size_t in = classifier.input_size(), out = classifier.output_size();
  const int n = 10;  // passes of 4, 4 and 2
  const std::vector<float> x = normal_floats(gen, static_cast<std::size_t>(n) * in);
  std::vector<float> y(static_cast<std::size_t>(n) * out);
  classifier.run(x.data(), n, y.data());
  const int k = 3;
  const std::vector<std::vector<infer::Prediction>> top = classifier.classify_samples(x.data(), n, k);
  ASSERT_EQ(top.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    SCOPED_TRACE("sample " + std::to_string(i));
    const float* yi = y.data() + static_cast<std::size_t>(i) * out;
    const std::size_t best = static_cast<std::size_t>(std::max_element(yi, yi + out) - yi);
    ASSERT_EQ(top[i].size(), static_cast<std::size_t>(k));
    EXPECT_EQ(static_cast<std::size_t>(top[i][0].index), best);
    for (int j = 0; j < k; ++j) EXPECT_EQ(top[i][j].score, yi[static_cast<std::size_t>(top[i][j].index)]);
    for (int j = 0; j + 1 < k; ++j) EXPECT_GE(top[i][j].score, top[i][j + 1].score);
  }
  EXPECT_THROW(classifier.classify_samples(x.data(), 0, k), infer::OptionError);
  EXPECT_THROW(classifier.classify_samples(x.data(), n, 0), infer::OptionError);
}

TEST(Api, ErrorsArriveByType) {
  TempDir dir;
  try {
    infer::Classifier(dir / "none.toml", on_cpu());
    FAIL() << "no error for a missing model";
  } catch (const infer::InputError& e) {
    EXPECT_EQ(e.file(), (dir / "none.toml").string());
  }
  infer::ClassifierOptions o = on_cpu();
  o.preprocessing.mean = {0.1f, 0.2f};  // the shipped model has one channel
  try {
    infer::Classifier({}, o);
    FAIL() << "no error for two means";
  } catch (const infer::OptionError& e) {
    EXPECT_EQ(e.option(), "preprocessing.mean");
  }
  o = on_cpu();
  o.max_memory = 1024;
  try {
    infer::Classifier({}, o);
    FAIL() << "no error under a 1 KiB limit";
  } catch (const infer::MemoryLimitError& e) {
    EXPECT_GT(e.needed(), e.limit());
    EXPECT_EQ(e.limit(), 1024u);
  }
  o = on_cpu();
  o.manifest = dir / "absent.toml";
  EXPECT_THROW(infer::Classifier({}, o), infer::InputError);  // a named manifest must exist
  infer::Classifier classifier({}, on_cpu());
  EXPECT_THROW(classifier.classify(samples()[0], 0), infer::OptionError);
  EXPECT_THROW(classifier.classify(dir / "none.png"), infer::Error);
}

// The notices: a batch over the memory limit is made smaller, and says so; Device::Auto says why it
// runs on the CPU, and does not when it runs on a GPU.
TEST(Api, NoticesSayWhatChanged) {
  std::vector<infer::Notice> notices;
  infer::ClassifierOptions o = on_cpu();
  o.notice = [&notices](const infer::Notice& n) { notices.push_back(n); };
  const std::uint64_t one_batch_limit = [] {
    infer::ClassifierOptions probe = on_cpu();
    probe.max_memory = 1;
    try {
      infer::Classifier({}, probe);
    } catch (const infer::MemoryLimitError& e) {
      return e.needed();
    }
    return std::uint64_t{0};
  }();
  ASSERT_GT(one_batch_limit, 0u);
  o.max_memory = one_batch_limit;
  {
    infer::Classifier small({}, o);
    EXPECT_EQ(small.max_batch(), 1);
  }
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].kind, infer::Notice::Kind::BatchReduced);
  EXPECT_EQ(notices[0].requested_batch, 64);
  EXPECT_EQ(notices[0].batch, 1);

  notices.clear();
  o.max_memory = 0;
  o.device = infer::Device::Auto;
  infer::Classifier any({}, o);
  const bool fell_back = std::any_of(notices.begin(), notices.end(), [](const infer::Notice& n) {
    return n.kind == infer::Notice::Kind::CpuFallback && !n.reason.empty();
  });
  EXPECT_EQ(fell_back, any.device() == std::string("cpu")) << any.backend();
}

// The environment check is `infer --check`'s: the same table and JSON, ok exactly when it exits 0.
TEST(Api, TheEnvironmentCheckIsTheCommands) {
  const infer::EnvironmentReport report = infer::check_environment();
  const ProcessResult table = infer::test::run_process((exe_dir() / "infer").string(), {"--check"});
  const ProcessResult json = infer::test::run_process((exe_dir() / "infer").string(), {"--check", "--json"});
  EXPECT_EQ(table.exit_code, report.ok ? 0 : 5) << table.err;
  EXPECT_EQ(report.table, table.out);
  EXPECT_EQ(report.json, json.out);
  EXPECT_EQ(report.ok, report.first_failure.empty()) << report.first_failure;
  ASSERT_FALSE(report.items.empty());
  // The shipped manifest (schema 2) names each backend's items after it: its first is cu13.
  const auto row = std::find_if(report.items.begin(), report.items.end(),
                                [](const infer::EnvironmentItem& i) { return i.item == "cu13.driver.release"; });
  ASSERT_NE(row, report.items.end());
  EXPECT_NE(report.table.find(row->found), std::string::npos) << row->found;
  const nlohmann::json parsed = nlohmann::json::parse(report.json);
  EXPECT_EQ(parsed["items"].size(), report.items.size());
  EXPECT_EQ(parsed["ok"].get<bool>(), report.ok);
  // The backend that runs, as the JSON names it: null, or the one whose every item holds.
  EXPECT_EQ(parsed["backend"].is_null() ? std::string() : parsed["backend"].get<std::string>(), report.backend);
  EXPECT_EQ(report.ok, !report.backend.empty());

  TempDir dir;
  EXPECT_THROW(infer::check_environment(dir / "absent.toml"), infer::InputError);
}

// The node labels of the report are those `infer --check --nfd` writes, through the exported
// write_node_features(); a written manifest that holds says so in them.
TEST(Api, TheNodeLabelsAreTheCommandsFeatureFile) {
  TempDir dir;
  const infer::EnvironmentReport report = infer::check_environment();
  ASSERT_EQ(report.manifest_sha256.size(), 64u);
  const fs::path api_file = dir / "api", command_file = dir / "command";
  infer::write_node_features(api_file, report, std::chrono::seconds(600));
  const ProcessResult r = infer::test::run_process((exe_dir() / "infer").string(),
                                                   {"--check", "--nfd", command_file.string(), "--nfd-expiry", "600"});
  ASSERT_EQ(r.exit_code, report.ok ? 0 : 5) << r.err;
  // The files differ in their expiry line only (written a moment apart).
  const auto labels = [](const fs::path& p) {
    std::ifstream in(p);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("# +expiry-time=", 0) != 0) lines.push_back(line);
    }
    return lines;
  };
  EXPECT_EQ(labels(api_file), labels(command_file));
  std::vector<std::string> expected;
  for (const auto& [name, value] : report.labels)
    expected.push_back("infer.feature.node.kubernetes.io/" + name + "=" + value);
  std::vector<std::string> got = labels(api_file);
  got.erase(std::remove_if(got.begin(), got.end(), [](const std::string& l) { return l.rfind("#", 0) == 0; }),
            got.end());
  EXPECT_EQ(got, expected);
  EXPECT_NE(std::find(expected.begin(), expected.end(),
                      std::string("infer.feature.node.kubernetes.io/manifest-holds=") + (report.ok ? "true" : "false")),
            expected.end());

  const fs::path written = dir / "VERSIONS.toml";
  infer::write_environment_manifest(written);
  const infer::EnvironmentReport holds = infer::check_environment(written);
  ASSERT_TRUE(holds.ok) << holds.table;
  EXPECT_NE(std::find(holds.labels.begin(), holds.labels.end(),
                      std::make_pair(std::string("manifest-holds"), std::string("true"))),
            holds.labels.end());
  EXPECT_THROW(infer::write_node_features(dir / "no" / "folder" / "infer", report, std::chrono::seconds(600)),
               infer::InputError);
}

// A manifest written for this machine passes the check on it, and lists the model's two files.
TEST(Api, AWrittenManifestPassesOnTheMachineThatWroteIt) {
  TempDir dir;
  const fs::path path = dir / "VERSIONS.toml";
  const infer::WrittenManifest written = infer::write_environment_manifest(path);
  EXPECT_TRUE(written.model_problem.empty()) << written.model_problem;
  EXPECT_EQ(written.model_files.size(), 2u);  // the model TOML and its safetensors
  const infer::EnvironmentReport report = infer::check_environment(path);
  EXPECT_TRUE(report.ok) << report.table;
  EXPECT_THROW(infer::write_environment_manifest(dir / "no" / "such" / "folder" / "V.toml"), infer::InputError);
}

// What `infer --version` says of the model and of the run time is the API's model_info() and
// runtime_info(). (Paths are left out: the library and the command find the same files from
// different folders.)
TEST(Api, TheVersionLinesAreTheApis) {
  const ProcessResult cli = infer::test::run_process((exe_dir() / "infer").string(), {"--version"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const infer::ModelInfo m = infer::model_info();
  EXPECT_EQ(m.input.channels, 1);  // the shipped Fashion-MNIST model: 1x28x28, 10 classes
  EXPECT_EQ(m.input.height, 28);
  EXPECT_EQ(m.input.width, 28);
  EXPECT_EQ(m.classes, 10u);
  EXPECT_NE(cli.out.find("  model:        " + m.name + " ("), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("), input 1x28x28, 10 classes, " + std::to_string(m.layers) + " layers\n"), std::string::npos)
      << cli.out;
  TempDir dir;
  EXPECT_THROW(infer::model_info(dir / "absent.toml"), infer::InputError);

  const infer::RuntimeInfo run = infer::runtime_info();
  EXPECT_FALSE(run.cpu_libraries.empty());
  EXPECT_EQ(cli.out.find("GPU backend not loadable: ") == std::string::npos, run.gpu_loaded) << cli.out;
  EXPECT_EQ(run.gpu_loaded, run.gpu_problem.empty()) << run.gpu_problem;
  std::size_t standins = 0;
  for (std::size_t at = cli.out.find("STAND-IN:"); at != std::string::npos; at = cli.out.find("STAND-IN:", at + 1)) {
    ++standins;
  }
  EXPECT_EQ(standins, run.standins.size()) << cli.out;
}

// The CpuFallback notice in its two wordings, the library's and the command line's.
TEST(Api, TheCpuFallbackNoticeNamesThePrecisionAsAsked) {
  EXPECT_EQ(infer::cpu_fallback_message(infer::Precision::Fp32, "no GPU"), "running on the CPU: no GPU");
  EXPECT_EQ(infer::cpu_fallback_message(infer::Precision::Fp16, "no GPU"),
            "running on the CPU in fp32 (precision fp16 needs the GPU): no GPU");
  EXPECT_EQ(infer::cpu_fallback_message(infer::Precision::Tf32, "no GPU", "--precision"),
            "running on the CPU in fp32 (--precision tf32 needs the GPU): no GPU");
}

// The extensions a directory is searched for: lower case, with the dot, the common formats among them.
TEST(Api, ImageFileExtensionsAreLowerCaseWithTheDot) {
  const std::vector<std::string>& exts = infer::image_file_extensions();
  for (const char* e : {".png", ".jpg", ".jpeg", ".bmp"}) {
    EXPECT_NE(std::find(exts.begin(), exts.end(), e), exts.end()) << e;
  }
  for (const std::string& e : exts) {
    EXPECT_EQ(e.rfind('.', 0), 0u) << e;
    EXPECT_TRUE(std::none_of(e.begin(), e.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) << e;
  }
  infer::set_cpu_threads(0);  // 0 leaves the threads as they are: linked, exported, and harmless here
}

}  // namespace
