// The options for running across a cluster, end to end: `--check --nfd` (the node check's feature
// file), `--shard I/N` (one part of a folder per pod of an Indexed Job) and `--output` (each part's
// results written whole or not at all).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/png_writer.h"
#include "tests/support/process.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

namespace fs = std::filesystem;

ProcessResult infer(std::vector<std::string> args) { return run_process(infer_exe(), std::move(args)); }

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Files in dir whose name starts with '.': what an atomic write leaves behind if it is not atomic.
std::vector<std::string> dot_files(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind(".", 0) == 0) found.push_back(e.path().filename().string());
  }
  return found;
}

// count PNGs of random grey pixels, 28x28, named so that some names share prefixes and lengths.
void random_images(const fs::path& dir, int count) {
  std::mt19937 rng(std::random_device{}());
  fs::create_directories(dir);
  for (int i = 0; i < count; ++i) {
    std::vector<std::string> rows(28, std::string(28, '\0'));
    for (std::string& row : rows) {
      for (char& c : row) c = static_cast<char>(rng() & 0xff);
    }
    std::ofstream(dir / ("img-" + std::to_string(i) + ".png"), std::ios::binary) << encode_png(28, 28, 8, 0, rows);
  }
}

std::multiset<std::string> files_in_json_lines(const std::string& text) {
  std::multiset<std::string> files;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    files.insert(nlohmann::json::parse(line).at("file").get<std::string>());
  return files;
}

TEST(Nfd, CheckWritesAValidFeatureFileAtomically) {
  TempDir dir;
  const fs::path file = dir / "infer";
  std::ofstream(file) << "old contents\n";
  const ProcessResult r = infer({"--check", "--json", "--nfd", file.string(), "--nfd-expiry", "600"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 5) << r.err;
  EXPECT_EQ(r.err, "");
  const nlohmann::json report = nlohmann::json::parse(r.out);  // the report is printed as without --nfd
  const std::string text = read_file(file);
  EXPECT_TRUE(dot_files(dir.path()).empty());
  EXPECT_LE(text.size(), 64u * 1024);

  const std::regex line_rule(
      "infer\\.feature\\.node\\.kubernetes\\.io/([a-z0-9-]+)=([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)");
  std::map<std::string, std::string> labels;
  std::string expiry;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# +expiry-time=", 0) == 0) expiry = line.substr(15);
    if (line.rfind("#", 0) == 0) continue;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, line_rule)) << line;
    labels[m[1]] = m[2];
  }
  EXPECT_TRUE(std::regex_match(expiry, std::regex("20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]Z")))
      << expiry;
  EXPECT_EQ(labels.at("manifest-holds"), report.at("ok").get<bool>() ? "true" : "false");
  const std::string manifest = shipped_file("VERSIONS.toml");
  const ProcessResult sum = run_process("/usr/bin/sha256sum", {manifest});
  ASSERT_EQ(sum.exit_code, 0);
  EXPECT_EQ(labels.at("manifest-sha256"), sum.out.substr(0, 32));
  EXPECT_EQ(labels.at("version"), INFER_VERSION_FOR_TESTS);
  if (!report.at("ok").get<bool>()) {
    EXPECT_EQ(labels.count("first-failure"), 1u) << text;
  }
}

TEST(Nfd, AFileThatCannotBeWrittenIsExitThreeAndNothingIsLeft) {
  TempDir dir;
  fs::create_directories(dir / "features.d" / "infer");  // a folder where the file should be
  const ProcessResult r = infer({"--check", "--nfd", (dir / "features.d" / "infer").string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("--nfd: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
  EXPECT_TRUE(dot_files(dir / "features.d").empty());
  EXPECT_EQ(infer({"--check", "--nfd", (dir / "missing" / "infer").string()}).exit_code, 3);
}

TEST(Nfd, UsageErrors) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--nfd", "/tmp/x"},  // without --check
                                             {"--check", "--nfd-expiry", "600"},
                                             {"--check", "--nfd", "/tmp/x", "--nfd-expiry", "5"}}) {
    const ProcessResult r = infer(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("infer: ", 0), 0u) << r.err;
  }
}

TEST(Shard, UsageErrors) {
  for (const char* shard : {"4/4", "-1/4", "1", "1/0", "a/b", "1/4x", "0/2000000", "/4", "1/"}) {
    const ProcessResult r = infer({"--shard", shard, "x.png"});
    EXPECT_EQ(r.exit_code, 2) << shard << ": " << r.err;
    EXPECT_NE(r.err.find("--shard"), std::string::npos) << r.err;
  }
}

// N parts of a folder classify every image once, each in the same part wherever the folder is
// mounted; the union equals the run without --shard, result for result. One image per pass in
// every run: a part's passes are smaller than the whole run's, and a convolution of another batch
// size may run another kernel whose sums round differently (oneDNN on AVX2).
TEST(Shard, PartsCoverAFolderExactlyOnceAndStably) {
  TempDir dir;
  random_images(dir / "a" / "images", 60);
  fs::create_directories(dir / "b");
  fs::copy(dir / "a" / "images", dir / "b" / "images");
  const ProcessResult whole = infer({"--device", "cpu", "--json", "--batch", "1", (dir / "a" / "images").string()});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  std::map<std::string, std::string> expected;  // file name -> its line
  for (const std::string& line : whole.out_lines()) {
    expected[fs::path(nlohmann::json::parse(line).at("file").get<std::string>()).filename().string()] = line;
  }
  ASSERT_EQ(expected.size(), 60u);

  const int n = 4;
  std::map<std::string, int> part_of;
  for (int i = 0; i < n; ++i) {
    for (const char* root : {"a", "b"}) {
      const ProcessResult r = infer({"--device", "cpu", "--json", "--batch", "1", "--shard",
                                     std::to_string(i) + "/" + std::to_string(n), (dir / root / "images").string()});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_NE(r.err.find("infer: shard " + std::to_string(i) + "/4: "), std::string::npos) << r.err;
      for (const std::string& line : r.out_lines()) {
        const std::string name =
            fs::path(nlohmann::json::parse(line).at("file").get<std::string>()).filename().string();
        if (std::string(root) == "a") {
          EXPECT_TRUE(part_of.emplace(name, i).second) << name << " in two parts";
          EXPECT_EQ(line, expected.at(name));
        } else {
          EXPECT_EQ(part_of.at(name), i) << name << ": another part under another path";
        }
      }
    }
  }
  EXPECT_EQ(part_of.size(), expected.size());
  std::set<int> used;
  for (const auto& [name, part] : part_of) used.insert(part);
  EXPECT_EQ(used.size(), static_cast<std::size_t>(n)) << "60 images all hashed into fewer than 4 parts";
}

TEST(Output, ResultsAreWrittenWholeAndReplaceAnEarlierRun) {
  TempDir dir;
  random_images(dir / "images", 20);
  fs::create_directories(dir / "results");
  const fs::path out = dir / "results" / "shard-1.jsonl";
  std::ofstream(out) << "{\"file\": \"from an earlier, interrupted attempt\"}\n";
  const ProcessResult r =
      infer({"--device", "cpu", "--json", "--shard", "1/3", "--output", out.string(), (dir / "images").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");  // the results went to the file
  const ProcessResult direct = infer({"--device", "cpu", "--json", "--shard", "1/3", (dir / "images").string()});
  EXPECT_EQ(read_file(out), direct.out);
  EXPECT_FALSE(files_in_json_lines(direct.out).empty());
  EXPECT_TRUE(dot_files(dir / "results").empty());
}

TEST(Output, AnUnwritableOutputIsExitSixBeforeAnyWork) {
  TempDir dir;
  random_images(dir / "images", 3);
  const ProcessResult r = infer(
      {"--device", "cpu", "--output", (dir / "no-such-folder" / "out.jsonl").string(), (dir / "images").string()});
  EXPECT_EQ(r.exit_code, 6) << r.err;
  EXPECT_NE(r.err.find("no-such-folder"), std::string::npos) << r.err;
  fs::create_directories(dir / "out.jsonl");
  const ProcessResult onto_folder =
      infer({"--device", "cpu", "--output", (dir / "out.jsonl").string(), (dir / "images").string()});
  EXPECT_EQ(onto_folder.exit_code, 6) << onto_folder.err;
  EXPECT_NE(onto_folder.err.find("is a directory"), std::string::npos) << onto_folder.err;
}

// A bad image is in the results (--json: its error object) and the run exits 3, file written.
TEST(Output, ABadImageIsReportedInTheFileToo) {
  TempDir dir;
  random_images(dir / "images", 4);
  std::ofstream(dir / "images" / "img-bad.png") << "not a png";
  const fs::path out = dir / "out.jsonl";
  const ProcessResult r = infer({"--device", "cpu", "--json", "--output", out.string(), (dir / "images").string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const std::string text = read_file(out);
  EXPECT_EQ(files_in_json_lines(text).size(), 5u) << text;
  EXPECT_NE(text.find("img-bad.png"), std::string::npos);
}

}  // namespace
}  // namespace infer::test
