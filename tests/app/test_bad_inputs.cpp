// The bad-input suite, end to end: every way a model, weights or manifest file can be wrong (the
// tables of model_cases.h, which test_model_file.cpp checks at the library level), run through the
// infer executable. Bad images are in test_cli.cpp (BadInputTest). Each case must give its exit
// code and one stderr line naming the file and the problem, print nothing on stdout (with --json:
// no partial line), not crash (exit code < 128) and leave no file behind.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "tests/support/model_cases.h"
#include "tests/support/process.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

const std::string kImage = test_file("samples/bag.png");

// A folder holding the tiny model; `run` runs infer on it and checks what every failure must hold.
class EndToEnd : public ::testing::Test {
 protected:
  void write_model(const std::string& toml, const std::string& weights) {
    write_file(dir_ / "tiny.toml", toml);
    write_file(dir_ / "tiny.safetensors", weights);
  }
  // Runs `infer --json --device cpu args... bag.png`; expects exit_code and one stderr line that
  // starts with "infer: <file>: " and contains `message`.
  void expect_failure(std::vector<std::string> args, int exit_code, const std::string& file,
                      const std::string& message) {
    const std::vector<std::string> before = files_in(dir_.path());
    args.insert(args.begin(), {"--json", "--device", "cpu"});
    args.push_back(kImage);
    const ProcessResult r = run_process(infer_exe(), args);
    EXPECT_EQ(r.exit_code, exit_code) << r.err;
    EXPECT_LT(r.exit_code, 128) << "crashed: " << r.err;
    const std::vector<std::string> lines = ProcessResult::lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_EQ(lines[0].rfind("infer: " + file + ": ", 0), 0u) << lines[0];
    EXPECT_NE(lines[0].find(message), std::string::npos) << lines[0];
    EXPECT_EQ(r.out, "");  // the model is refused before any image: no line, whole or partial
    EXPECT_EQ(files_in(dir_.path()), before);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  Random rng_;
  TempDir dir_;
};

class TomlEndToEnd : public EndToEnd, public ::testing::WithParamInterface<TomlCase> {};

TEST_P(TomlEndToEnd, ExitsWithThreeNamingTheModelFile) {
  const TomlCase& c = GetParam();
  write_model(edited_toml(c), safetensors_bytes(tiny_tensors(rng_)));
  expect_failure({"--model", path("tiny.toml")}, 3, path("tiny.toml"), c.message);
}

INSTANTIATE_TEST_SUITE_P(Cases, TomlEndToEnd, ::testing::ValuesIn(toml_cases()), CaseName());

class WeightsEndToEnd : public EndToEnd, public ::testing::WithParamInterface<WeightsCase> {};

TEST_P(WeightsEndToEnd, ExitsWithThreeNamingTheWeightsFile) {
  SCOPED_TRACE(rng_.trace());
  write_model(kTinyToml, GetParam().make(tiny_tensors(rng_)));
  expect_failure({"--model", path("tiny.toml")}, 3, path("tiny.safetensors"), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(Cases, WeightsEndToEnd, ::testing::ValuesIn(weights_cases()), CaseName());

class BatchNormWeightsEndToEnd : public EndToEnd, public ::testing::WithParamInterface<WeightsCase> {};

TEST_P(BatchNormWeightsEndToEnd, ExitsWithThreeNamingTheWeightsFile) {
  SCOPED_TRACE(rng_.trace());
  write_model(kBatchNormToml, GetParam().make(batchnorm_tensors(rng_)));
  expect_failure({"--model", path("tiny.toml")}, 3, path("tiny.safetensors"), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(Cases, BatchNormWeightsEndToEnd, ::testing::ValuesIn(batchnorm_cases()), CaseName());

TEST_F(EndToEnd, TheTinyModelClassifies) {  // the baseline the cases above break
  write_model(kTinyToml, safetensors_bytes(tiny_tensors(rng_)));
  const ProcessResult r = run_process(infer_exe(), {"--json", "--device", "cpu", "--model", path("tiny.toml"), kImage});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out_lines().size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(r.out)["top"].size(), 3u);
}

TEST_F(EndToEnd, TheBatchNormModelClassifies) {  // the baseline of BatchNormWeightsEndToEnd
  SCOPED_TRACE(rng_.trace());
  write_model(kBatchNormToml, safetensors_bytes(batchnorm_tensors(rng_)));
  const ProcessResult r = run_process(infer_exe(), {"--json", "--device", "cpu", "--model", path("tiny.toml"), kImage});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out_lines().size(), 1u);
  const nlohmann::json result = nlohmann::json::parse(r.out);  // kept: a loop over a temporary's member dangles
  for (const auto& entry : result["top"]) EXPECT_TRUE(entry["prob"].is_number()) << r.out;
}

// Issue 12, item 5: a model without a final softmax prints its scores as scores; --softmax turns
// them into probabilities, and says so by printing "prob". No softmax is added silently.
TEST_F(EndToEnd, AModelWithoutASoftmaxPrintsScoresUnlessAsked) {
  SCOPED_TRACE(rng_.trace());
  std::string toml = kTinyToml;
  toml.erase(toml.find("[[layers]]\nname = \"prob\""));
  write_model(toml, safetensors_bytes(tiny_tensors(rng_)));
  const std::vector<std::string> args = {"--json", "--device", "cpu", "--model", path("tiny.toml"), kImage};
  const ProcessResult raw = run_process(infer_exe(), args);
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  const nlohmann::json scores = nlohmann::json::parse(raw.out)["top"];
  ASSERT_EQ(scores.size(), 3u);  // every class: the softmax below can be computed from them
  for (const auto& s : scores) EXPECT_FALSE(s.contains("prob")) << raw.out;
  std::vector<std::string> with_softmax = args;
  with_softmax.insert(with_softmax.begin(), "--softmax");
  const ProcessResult p = run_process(infer_exe(), with_softmax);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const nlohmann::json probs = nlohmann::json::parse(p.out)["top"];
  // softmax of the printed scores, in double: the same classes in the same order, and the
  // probabilities within float rounding of it (a few ulp of values below 1).
  double sum = 0.0;
  for (const auto& s : scores) sum += std::exp(s["score"].get<double>() - scores[0]["score"].get<double>());
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(probs[i]["index"], scores[i]["index"]);
    const double expected = std::exp(scores[i]["score"].get<double>() - scores[0]["score"].get<double>()) / sum;
    EXPECT_NEAR(probs[i]["prob"].get<double>(), expected, 1e-6) << p.out;
  }
  const ProcessResult text = run_process(infer_exe(), {"--device", "cpu", "--model", path("tiny.toml"), kImage});
  EXPECT_NE(text.out.find("(scores) [cpu]"), std::string::npos) << text.out;
}

TEST_F(EndToEnd, WeightsWhoseDigestDiffersFromTheManifest) {
  write_model(kTinyToml, safetensors_bytes(tiny_tensors(rng_)));
  write_file(dir_ / "m.toml",
             "schema = 1\n[[model.files]]\npath = \"tiny.safetensors\"\nsha256 = \"" + std::string(64, '0') + "\"\n");
  expect_failure({"--manifest", path("m.toml"), "--model", path("tiny.toml")}, 3, path("tiny.safetensors"),
                 "lists 0000000000000000000000000000000000000000000000000000000000000000: refusing this file");
}

struct ManifestCase {
  const char* what;
  std::string text;
  std::string message;
};
void PrintTo(const ManifestCase& c, std::ostream* os) { *os << c.what; }

class ManifestEndToEnd : public EndToEnd, public ::testing::WithParamInterface<ManifestCase> {};

// Malformed VERSIONS.toml: refused by the inference run (before any image) and by --check.
TEST_P(ManifestEndToEnd, ExitsWithThreeNamingTheManifest) {
  const ManifestCase& c = GetParam();
  write_file(dir_ / "VERSIONS.toml", c.text);
  expect_failure({"--manifest", path("VERSIONS.toml")}, 3, path("VERSIONS.toml"), c.message);
  const ProcessResult check = run_process(infer_exe(), {"--check", "--json", "--manifest", path("VERSIONS.toml")});
  EXPECT_EQ(check.exit_code, 3) << check.err;
  EXPECT_EQ(check.out, "");
  EXPECT_NE(check.err.find(c.message), std::string::npos) << check.err;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ManifestEndToEnd,
    ::testing::Values(ManifestCase{"not TOML", "schema = = 1\n", "line 1: invalid TOML"},
                      ManifestCase{"unknown section", "schema = 1\n[drivers]\nrelease = \"1\"\n",
                                   "line 2: key 'drivers': unknown section"},
                      ManifestCase{"bad constraint", "[cudnn]\nversion = \">=9.x\"\n",
                                   "line 2: key 'cudnn.version': bad constraint"},
                      ManifestCase{"bad severity", "[cuda]\nsingle_copy = \"sometimes\"\n",
                                   "severity must be \"required\" or \"advisory\""},
                      ManifestCase{"bad digest", "[[model.files]]\npath = \"a\"\nsha256 = \"xyz\"\n",
                                   "expected 64 lowercase hexadecimal digits"},
                      ManifestCase{"wrong schema", "schema = 3\n", "this infer reads schema 1 and 2"}),
    CaseName());

// Issue 11, item 3: a model, weights or manifest that is not a regular file, or is too large to be
// one, is refused without being opened for reading or read (a FIFO blocked forever before).
TEST_F(EndToEnd, SpecialOrOversizedModelWeightsAndManifestFilesAreRefused) {
  write_model(kTinyToml, safetensors_bytes(tiny_tensors(rng_)));
  ASSERT_EQ(mkfifo(path("fifo.toml").c_str(), 0644), 0);
  expect_failure({"--model", path("fifo.toml")}, 3, path("fifo.toml"), "is a FIFO, not a regular file");
  write_file(dir_ / "big.toml", "");
  std::filesystem::resize_file(dir_ / "big.toml", 600ull << 20);
  expect_failure({"--model", path("big.toml")}, 3, path("big.toml"),
                 "file is 600 MiB, over the limit of 16 MiB for a model file");
  expect_failure({"--manifest", path("big.toml")}, 3, path("big.toml"),
                 "file is 600 MiB, over the limit of 4.0 MiB for a manifest");
  expect_failure({"--manifest", path("fifo.toml")}, 3, path("fifo.toml"), "is a FIFO, not a regular file");
  // One byte over: both sizes round to 4.0 MiB, so the message gives them in bytes.
  std::filesystem::resize_file(dir_ / "big.toml", (4ull << 20) + 1);
  expect_failure({"--manifest", path("big.toml")}, 3, path("big.toml"),
                 "file is 4194305 bytes, over the limit of 4194304 bytes for a manifest");
  std::filesystem::remove(dir_ / "tiny.safetensors");
  std::filesystem::create_symlink("/dev/zero", dir_ / "tiny.safetensors");
  expect_failure({"--model", path("tiny.toml")}, 3, path("tiny.safetensors"),
                 "is a character device, not a regular file");
}

TEST_F(EndToEnd, WriteManifestThatCannotBeWrittenLeavesNothing) {
  // A folder that does not exist, and a path that is a folder: a clear error, no file, no temporary.
  std::filesystem::create_directory(dir_ / "taken");
  for (const std::string& target : {path("missing/VERSIONS.toml"), path("taken")}) {
    const std::vector<std::string> before = files_in(dir_.path());
    const ProcessResult r = run_process(infer_exe(), {"--write-manifest", target});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_EQ(r.err.rfind("infer: " + target + ": cannot write: ", 0), 0u) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(files_in(dir_.path()), before);
    EXPECT_TRUE(std::filesystem::is_empty(dir_ / "taken"));
  }
}

}  // namespace
}  // namespace infer::test
