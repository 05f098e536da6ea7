// The manifest library without child processes: constraints, the compiled-in facts, and the
// VERSIONS.toml reader on malformed files (one error naming file, line and key).
#include <gtest/gtest.h>

#include "manifest/constraint.h"
#include "manifest/facts.h"
#include "manifest/manifest.h"
#include "manifest/sha256.h"
#include "model/errors.h"
#include "process.h"

namespace infer::test {
namespace {

using manifest::Constraint;
using manifest::Version;

bool allows(const std::string& c, const std::string& v) { return Constraint::parse(c).allows(Version::parse(v)); }

TEST(Version, ComparesEveryComponentAsANumber) {
  EXPECT_LT(Version::parse("580.65.06"), Version::parse("580.105.08"));  // 65 < 105, not "65" > "105"
  EXPECT_LT(Version::parse("9.2"), Version::parse("9.19"));
  EXPECT_EQ(Version::parse("13"), Version::parse("13.0.0"));
  EXPECT_EQ(Version::parse("580.65.06").to_string(), "580.65.06");  // as written
  for (const char* bad : {"", "1..2", "1.", ".1", "v1", "1.2a", "1,2"}) {
    EXPECT_FALSE(Version::try_parse(bad)) << bad;
  }
}

TEST(Constraint, ExactWildcardMinimumRangeAny) {
  EXPECT_TRUE(allows("13.0", "13.0.0"));
  EXPECT_FALSE(allows("13.0", "13.0.48"));
  EXPECT_TRUE(allows("9.19.*", "9.19.0"));
  EXPECT_TRUE(allows("9.19.*", "9.19.3"));
  EXPECT_FALSE(allows("9.19.*", "9.1.9"));
  EXPECT_FALSE(allows("9.19.*", "9.20.0"));
  EXPECT_TRUE(allows(">=580.65.06", "580.105.08"));
  EXPECT_FALSE(allows(">=580.65.06", "580.65.05"));
  EXPECT_FALSE(allows(">=580.65.06", "535.104.05"));
  EXPECT_TRUE(allows(">=9.1, <10", "9.19.0"));
  EXPECT_FALSE(allows(">=9.1, <10", "10.0"));
  EXPECT_FALSE(allows(">=9.1, <10", "9.0.9"));
  EXPECT_TRUE(allows("*", "1"));
  EXPECT_TRUE(allows("!=12.2", "12.3"));
  EXPECT_FALSE(allows("<7.5", "7.5"));
  EXPECT_TRUE(allows("<=7.5", "7.5"));
  EXPECT_TRUE(allows("> 7.0", "7.5"));
}

TEST(Constraint, BadSyntaxIsRejectedWithTheReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty constraint"},
      {">=", "is not a version"},
      {">=9.1,", "empty clause"},
      {">=9.*", "cannot follow an operator"},
      {"9.*.1", "only alone or as the last component"},
      {"latest", "is not a version"},
      {"=>9", "is not a version"},
  };
  for (const auto& [text, why] : cases) {
    try {
      Constraint::parse(text);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << text << ": " << e.what();
    }
  }
}

TEST(Facts, DriverFloorsAndLibraryNamesAreCompiledIn) {
  const manifest::Facts& f = manifest::facts();
  const manifest::DriverFloor* floor13 = f.driver_floor_for(Version::parse("13.0"));
  ASSERT_NE(floor13, nullptr);
  EXPECT_EQ(floor13->min_driver.to_string(), "580.65.06");
  EXPECT_EQ(f.driver_floor_for(Version::parse("12.8"))->min_driver.to_string(), "525.60.13");
  EXPECT_EQ(f.driver_floor_for(Version::parse("11.8"))->min_driver.to_string(), "450.80.02");
  EXPECT_EQ(f.driver_floor_for(Version::parse("10.2")), nullptr);
  EXPECT_EQ(f.cc_floor.at(13).first.to_string(), "7.5");
  const manifest::CudnnFiles* linux9 = f.cudnn_files_for(9, "linux");
  ASSERT_NE(linux9, nullptr);
  EXPECT_EQ(linux9->main, "libcudnn.so.9");
  EXPECT_EQ(linux9->sublibraries.size(), 7u);
  EXPECT_EQ(linux9->version_checks.at("libcudnn_cnn.so.9"), "cudnnCnnVersionCheck");
  const manifest::CudnnFiles* win8 = f.cudnn_files_for(8, "windows");
  ASSERT_NE(win8, nullptr);
  EXPECT_NE(std::find(win8->sublibraries.begin(), win8->sublibraries.end(), "cudnn_cnn_infer64_8.dll"), win8->sublibraries.end());
}

TEST(Sha256, KnownDigests) {
  TempDir dir;
  write_file(dir / "empty", "");
  write_file(dir / "abc", "abc");
  EXPECT_EQ(manifest::sha256_file(dir / "empty"), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(manifest::sha256_file(dir / "abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_THROW(manifest::sha256_file(dir / "missing"), InputError);
}

TEST(ManifestFile, ReadsEveryFormOfItem) {
  TempDir dir;
  write_file(dir / "v.toml",
             "schema = 1\n"
             "[driver]\n"
             "release = \">=580.65.06\"\n"
             "cuda = { want = \">=13.0\", severity = \"advisory\" }\n"
             "runtime_compatible = \"required\"\n"
             "[gpu]\n"
             "name = { want = [\"NVIDIA H100*\", \"NVIDIA H200*\"], severity = \"advisory\" }\n"
             "[cudnn]\n"
             "cuda_major = 13\n"
             "[[model.files]]\n"
             "path = \"w/m.toml\"\n"
             "sha256 = \"" + std::string(64, 'a') + "\"\n");
  const manifest::Manifest m = manifest::read_manifest(dir / "v.toml");
  ASSERT_EQ(m.items.size(), 5u);
  EXPECT_EQ(m.items[0].key, "driver.release");
  EXPECT_EQ(m.items[0].severity, manifest::Severity::Required);
  EXPECT_EQ(m.items[0].line, 3);
  EXPECT_EQ(m.items[1].severity, manifest::Severity::Advisory);
  EXPECT_EQ(m.items[2].kind, manifest::ItemKind::Rule);
  EXPECT_EQ(m.items[3].patterns.size(), 2u);
  EXPECT_EQ(m.items[4].want, "13");
  ASSERT_EQ(m.model_files.size(), 1u);
  EXPECT_EQ(m.model_files[0].resolved, dir.path() / "w/m.toml");
  EXPECT_EQ(m.model_file(dir.path() / "w" / ".." / "w" / "m.toml"), &m.model_files[0]);
}

// Each malformed manifest gives one InputError: "<file>: line N: key 'x': problem".
TEST(ManifestFile, MalformedFilesNameFileLineAndKey) {
  const std::string sha(64, 'a');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[driver]\nrelease = \">=580\"\nrelase = \">=1\"\n",
       "line 3: key 'driver.relase': unknown key (expected one of: release, cuda, runtime_compatible)"},
      {"[driver]\nrelease = 580.65\n", "line 2: key 'driver.release': expected a version constraint string such as \">=9.19, <10\", found a float"},
      {"[driver]\nrelease = \">=580.x\"\n", "line 2: key 'driver.release': bad constraint: '>=580.x': '580.x' is not a version"},
      {"[cudnn]\nversion = { want = \">=9\", severity = \"must\" }\n",
       "line 2: key 'cudnn.version.severity': severity must be \"required\" or \"advisory\", found \"must\""},
      {"[cudnn]\nversion = { wants = \">=9\" }\n", "line 2: key 'cudnn.version.wants': unknown key (expected want, severity)"},
      {"[cudnn]\nsublibraries = \">=9\"\n",
       "line 2: key 'cudnn.sublibraries': severity must be \"required\" or \"advisory\", found \">=9\""},
      {"[nvidia]\nx = 1\n", "line 1: key 'nvidia': unknown section (expected schema, system, driver, gpu, cuda, cudnn, model)"},
      {"schema = 2\n", "line 1: key 'schema': this infer reads schema 1"},
      {"[driver]\nrelease = \">=580\n", "line 2: invalid TOML"},
      {"[[model.files]]\npath = \"a\"\nsha256 = \"ABC\"\n",
       "line 3: key 'model.files.sha256': expected 64 lowercase hexadecimal digits, found \"ABC\""},
      {"[[model.files]]\nsha256 = \"" + sha + "\"\n", "line 1: key 'model.files.path': missing"},
      {"[gpu]\nname = [1]\n", "line 2: key 'gpu.name': patterns must be strings, found an integer"},
  };
  TempDir dir;
  for (const auto& [text, message] : cases) {
    const std::filesystem::path file = dir / "bad.toml";
    write_file(file, text);
    try {
      manifest::read_manifest(file);
      ADD_FAILURE() << "accepted:\n" << text;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(file.string() + ": " + message, 0), 0u) << e.what();
    }
  }
  EXPECT_THROW(manifest::read_manifest(dir / "missing.toml"), InputError);
}

}  // namespace
}  // namespace infer::test
