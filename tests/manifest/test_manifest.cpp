// The manifest library without child processes: constraints, the compiled-in facts, the
// VERSIONS.toml reader on malformed files (one error naming file, line and key), and the layout of
// the report (table and JSON) on a report built by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

#include "backends/gpu_choice.h"
#include "infer/errors.h"
#include "manifest/check.h"
#include "manifest/constraint.h"
#include "manifest/facts.h"
#include "manifest/manifest.h"
#include "manifest/report.h"
#include "manifest/sha256.h"
#include "platform/printable.h"
#include "tests/support/temp_dir.h"

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
  // Windows drivers are numbered apart: their own rows.
  EXPECT_EQ(f.driver_floor_for(Version::parse("13.0"), "windows")->min_driver.to_string(), "580");
  EXPECT_EQ(f.driver_floor_for(Version::parse("12.4"), "windows")->min_driver.to_string(), "525");
  EXPECT_EQ(f.driver_floor_for(Version::parse("11.8"), "windows")->min_driver.to_string(), "452.39");
  EXPECT_EQ(f.cc_floor.at(13).first.to_string(), "7.5");
  const manifest::CudnnFiles* linux9 = f.cudnn_files_for(9, "linux");
  ASSERT_NE(linux9, nullptr);
  EXPECT_EQ(linux9->main, "libcudnn.so.9");
  EXPECT_EQ(linux9->sublibraries.size(), 7u);
  EXPECT_EQ(linux9->version_checks.at("libcudnn_cnn.so.9"), "cudnnCnnVersionCheck");
  const manifest::CudnnFiles* win8 = f.cudnn_files_for(8, "windows");
  ASSERT_NE(win8, nullptr);
  EXPECT_NE(std::find(win8->sublibraries.begin(), win8->sublibraries.end(), "cudnn_cnn_infer64_8.dll"),
            win8->sublibraries.end());
}

// The GPU backends' requirements (backends/gpu_choice.h, which the run-time choice uses without the
// manifest library) are facts.toml's: the driver floor of each CUDA major, and the higher of the
// toolkit's compute-capability floor and that of the cuDNN release each backend is built with.
TEST(Facts, GpuBackendRequirementsAreTheFactsOfTheirMajorAndCudnn) {
  const manifest::Facts& f = manifest::facts();
  const std::map<int, std::string> built_cudnn = {{13, INFER_BUILT_CUDNN13}, {12, INFER_BUILT_CUDNN12}};
  for (const GpuBackendRequirements& r : kGpuBackends) {
    SCOPED_TRACE("CUDA " + std::to_string(r.cuda_major));
    const Version major({static_cast<std::uint64_t>(r.cuda_major), 0});
    const manifest::DriverFloor* floor = f.driver_floor_for(major);
    ASSERT_NE(floor, nullptr);
    EXPECT_EQ(floor->cuda.compare(major), 0) << "the floor of " << r.cuda_major << ".0 itself, every minor's";
    EXPECT_EQ(floor->min_driver.to_string(), r.min_driver);
    Version cc = f.cc_floor.at(r.cuda_major).first;
    const std::string& cudnn = built_cudnn.at(r.cuda_major);
    if (!cudnn.empty()) {  // this build has the backend: its cuDNN's floor counts too
      const manifest::CudnnBuild* build = f.cudnn_build_for(r.cuda_major, Version::parse(cudnn));
      ASSERT_NE(build, nullptr) << "no [[cudnn_build]] row for cuDNN " << cudnn;
      if (cc < build->min_compute_capability) cc = build->min_compute_capability;
    }
    EXPECT_EQ(cc.to_string(), std::to_string(r.min_cc / 10) + "." + std::to_string(r.min_cc % 10));
  }
  // cuDNN for CUDA 12 from 9.17 serves 7.5 and newer only: the CUDA 12 backend's 5.0 holds for 9.10.
  EXPECT_EQ(f.cudnn_build_for(12, Version::parse("9.19.0"))->min_compute_capability.to_string(), "7.5");
  EXPECT_EQ(f.cudnn_build_for(12, Version::parse("9.13.0")), nullptr) << "not known: no row";
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
             "sha256 = \"" +
                 std::string(64, 'a') + "\"\n");
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
      {"[driver]\nrelease = 580.65\n",
       "line 2: key 'driver.release': expected a version constraint string such as \">=9.19, <10\", found a float"},
      {"[driver]\nrelease = \">=580.x\"\n",
       "line 2: key 'driver.release': bad constraint: '>=580.x': '580.x' is not a version"},
      {"[cudnn]\nversion = { want = \">=9\", severity = \"must\" }\n",
       "line 2: key 'cudnn.version.severity': severity must be \"required\" or \"advisory\", found \"must\""},
      {"[cudnn]\nversion = { wants = \">=9\" }\n",
       "line 2: key 'cudnn.version.wants': unknown key (expected want, severity)"},
      {"[cudnn]\nsublibraries = \">=9\"\n",
       "line 2: key 'cudnn.sublibraries': severity must be \"required\" or \"advisory\", found \">=9\""},
      {"[nvidia]\nx = 1\n",
       "line 1: key 'nvidia': unknown section (expected schema, system, driver, gpu, cuda, cudnn, model)"},
      {"schema = 3\n", "line 1: key 'schema': this infer reads schema 1 and 2"},
      // Schema 2: driver, cuda and cudnn go in a [[backend]], which is named cu and a major.
      {"schema = 2\n[driver]\nrelease = \">=580\"\n",
       "line 2: key 'driver': unknown section (expected schema, system, gpu, backend, model; driver, cuda and cudnn "
       "go in [[backend]])"},
      {"schema = 2\n[gpu]\ncompute_capability = \">=7.5\"\n",
       "line 3: key 'gpu.compute_capability': unknown key (expected one of: count, name, memory_mib); in schema 2 it "
       "goes in a [[backend]]"},
      {"schema = 2\n[gpu]\ncount = \">=1\"\n", "line 1: key 'backend': schema 2 lists at least one [[backend]]"},
      {"schema = 2\n[[backend]]\nname = \"cuda13\"\n",
       "line 3: key 'backend.name': expected \"cu\" and a CUDA major (\"cu13\", \"cu12\"), found \"cuda13\""},
      // Found by fuzz_manifest (tests/fuzz/corpus/fuzz_manifest/crash-cu02): "cu02" was read as cu2.
      {"schema = 2\n[[backend]]\nname = \"cu02\"\n",
       "line 3: key 'backend.name': expected \"cu\" and a CUDA major (\"cu13\", \"cu12\"), found \"cu02\""},
      {"schema = 2\n[[backend]]\nname = \"cu13\"\n[backend.system]\nos = \"x\"\n",
       "line 4: key 'backend.cu13.system': unknown section in a [[backend]] (expected name, driver, gpu, cuda, cudnn)"},
      {"[driver]\nrelease = \">=580\n", "line 2: invalid TOML"},
      {"[[model.files]]\npath = \"a\"\nsha256 = \"ABC\"\n",
       "line 3: key 'model.files.sha256': expected 64 lowercase hexadecimal digits, found \"ABC\""},
      {"[[model.files]]\nsha256 = \"" + sha + "\"\n", "line 1: key 'model.files.path': missing"},
      {"[gpu]\nname = [1]\n", "line 2: key 'gpu.name': patterns must be strings, found an integer"},
      // Without schema nothing is checked and --check would pass: an empty file must not.
      {"", "key 'schema': missing (the file has no keys): every manifest says schema = 1 or 2"},
      {"\n  \n# VERSIONS.toml, emptied by a failed copy\n\n",
       "key 'schema': missing (the file has no keys): every manifest says schema = 1 or 2"},
      {"[driver]\nrelease = \">=580.65.06\"\n", "key 'schema': missing: every manifest says schema = 1 or 2"},
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

// A report as check() builds it on a machine without a driver and with a broken cuDNN folder.
manifest::Report broken_machine_report() {
  using manifest::Severity;
  using manifest::Status;
  const std::string lib = "/opt/deploy/lib/nvidia/cudnn-9.19.0-cuda13/lib";
  std::string missing;  // every sub-library missing: a found cell of about 300 characters
  for (const char* sub :
       {"cnn", "adv", "ops", "graph", "heuristic", "engines_precompiled", "engines_runtime_compiled"}) {
    missing += std::string(missing.empty() ? "" : "; ") + "libcudnn_" + sub + ".so.9 missing";
  }
  missing += "; libcudnn_ops_infer.so.8 present (a cuDNN 8 name) in " + lib;
  const std::string digest = "3f0a1c9e5b7d2468ace013579bdf2468ace013579bdf2468ace013579bdf2468";
  const std::string copy_fix =
      "remove the other copies from LD_LIBRARY_PATH, or run with a LD_LIBRARY_PATH that names one";
  manifest::Report r;
  r.manifest = "/etc/infer/VERSIONS.toml";
  r.ok = false;
  r.rows = {
      {"driver.release",
       ">=580.65.06",
       "not installed (libcuda.so.1 not found)",
       "dlopen: libcuda.so.1: cannot open shared object file: No such file or directory",
       Status::Fail,
       Severity::Required,
       "install the NVIDIA driver (CUDA 13.0 needs driver >= 580.65.06); libcuda.so.1 comes with the driver",
       "",
       {}},
      {"driver.cuda",
       ">=13.0",
       "unknown (libcuda.so.1 not found)",
       "cuDriverGetVersion",
       Status::Unknown,
       Severity::Required,
       "install the NVIDIA driver",
       "driver.release",
       {}},
      {"cuda.runtime",
       "13.0.*",
       "13.0.88",
       "cudaRuntimeGetVersion (" + lib + "/libcudart.so.13)",
       Status::Ok,
       Severity::Required,
       "",
       "",
       {}},
      {"cuda.single_copy",
       "holds",
       "2 copies: " + lib + "/libcudart.so.13, /usr/local/cuda-13.0/lib64/libcudart.so.13",
       "LD_LIBRARY_PATH, ldconfig -p",
       Status::Warn,
       Severity::Advisory,
       copy_fix,
       "",
       {}},
      {"cudnn.version",
       ">=9.19, <10",
       "9.18.1",
       "cudnnGetVersion (" + lib + "/libcudnn.so.9)",
       Status::Fail,
       Severity::Required,
       "install cuDNN 9.19 or later for CUDA 13",
       "cuda.runtime",
       {}},
      {"cudnn.sublibraries",
       "holds",
       missing,
       "readdir " + lib + ", dlopen of each libcudnn_*.so.9 found there",
       Status::Fail,
       Severity::Required,
       "reinstall cuDNN 9.19.0 for CUDA 13 into " + lib + " (all its files)",
       "",
       {"cudnn.version: follows from this",
        "cuDNN: libcudnn_graph.so.9: cannot open shared object file: No such file or directory (needed by " + lib +
            "/libcudnn.so.9 in cudnnCreate; set CUDNN_LOGERR_DBG=1 and CUDNN_LOGDEST_DBG=stderr for details)"}},
      {"cudnn.single_copy",
       "holds",
       "2 copies: " + lib + "/libcudnn.so.9, /usr/lib/x86_64-linux-gnu/libcudnn.so.9",
       "LD_LIBRARY_PATH, ldconfig -p",
       Status::Warn,
       Severity::Advisory,
       copy_fix,
       "",
       {}},
      {"model:../models/fashion.safetensors",
       "sha256 " + digest,
       "sha256 " + digest,
       "/opt/deploy/models/fashion.safetensors",
       Status::Ok,
       Severity::Required,
       "",
       "",
       {}},
  };
  return r;
}

std::size_t count(const std::string& s, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

std::string without_spaces(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  return s;
}

std::string trim(const std::string& s) {
  const std::size_t b = s.find_first_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, s.find_last_not_of(' ') - b + 1);
}

// On a terminal of 200 columns (manifest::format_table's width; test_report_layout.cpp has the
// layout on random reports, test_report_pipe.cpp the command's).
TEST(ReportTable, LongCellsWrapInTheirColumnAndLinesStayWithinTheLimit) {
  const manifest::Report report = broken_machine_report();
  const std::string& long_found = report.rows[5].found;
  ASSERT_GE(long_found.size(), 300u);
  const std::vector<std::string> lines = split_lines(manifest::format_table(report, 200));
  ASSERT_GE(lines.size(), 2u);
  const std::string& head = lines[1];
  ASSERT_EQ(head.rfind("item", 0), 0u) << head;
  std::vector<std::size_t> starts;  // where expected, found, source and status start
  for (const char* name : {"expected", "found", "source", "status"}) starts.push_back(head.find(name));
  std::string found_column, source_column;  // the cudnn.sublibraries row's found and source, line by line
  bool in_long_row = false;
  for (std::size_t k = 1; k < lines.size(); ++k) {
    const std::string& line = lines[k];
    EXPECT_LE(line.size(), 200u) << line;
    // "    fix: " and "    note: " lines and their continuations (under the text, at 9 or 10), and
    // the labelled lines of a row printed as a block (a digest wider than any column), at 4 and 14.
    const std::size_t first = line.find_first_not_of(' ');
    const bool under_row = first == 4 || first == 9 || first == 10 || first == 14;
    if (under_row || line.rfind("result:", 0) == 0) {
      in_long_row = false;
      continue;
    }
    // A table line starts with an item or, continuing a cell, at a column start.
    EXPECT_TRUE(first == 0 || std::find(starts.begin(), starts.end(), first) != starts.end()) << line;
    for (std::size_t s : starts) {  // a column starts after a gap of two blanks, never inside a cell
      if (line.size() > s) {
        EXPECT_EQ(line.substr(s - 2, 2), "  ") << "column at " << s << ":\n" << line;
      }
    }
    if (line[0] != ' ') in_long_row = line.rfind("cudnn.sublibraries ", 0) == 0;
    if (in_long_row && line.size() > starts[1]) found_column += line.substr(starts[1], starts[2] - starts[1]);
    if (in_long_row && line.size() > starts[2]) source_column += line.substr(starts[2], starts[3] - starts[2]);
  }
  // Nothing of the long cells is lost or printed outside their column.
  EXPECT_EQ(without_spaces(found_column), without_spaces(long_found));
  EXPECT_EQ(without_spaces(source_column), without_spaces(report.rows[5].source));
  // And the row wrapped at a separator: its first line ends at "; ", not inside a name.
  const auto first = std::find_if(lines.begin(), lines.end(),
                                  [](const std::string& l) { return l.rfind("cudnn.sublibraries ", 0) == 0; });
  ASSERT_NE(first, lines.end());
  const std::string first_piece = trim(first->substr(starts[1], starts[2] - starts[1]));
  EXPECT_EQ(first_piece.back(), ';') << first_piece;
}

TEST(ReportTable, ARepeatedFixIsPrintedOnce) {
  const manifest::Report report = broken_machine_report();
  const std::string table = manifest::format_table(report);
  EXPECT_EQ(count(table, report.rows[3].fix), 1u) << table;
  EXPECT_EQ(count(table, "    fix: " + report.rows[3].fix + "\n"), 1u) << table;
  EXPECT_EQ(count(table, "    fix: same as cuda.single_copy\n"), 1u) << table;
}

TEST(ReportTable, NotesAndCausesAreRendered) {
  const manifest::Report report = broken_machine_report();
  const std::string table = manifest::format_table(report);
  // driver.cuda follows from driver.release, which failed: its own fix is not repeated.
  EXPECT_NE(table.find("\n    (follows from driver.release)\n"), std::string::npos) << table;
  EXPECT_EQ(table.find("fix: install the NVIDIA driver\n"), std::string::npos) << table;
  // cudnn.version names cuda.runtime as its cause, but cuda.runtime is ok: its own fix stands.
  EXPECT_EQ(table.find("(follows from cuda.runtime)"), std::string::npos) << table;
  EXPECT_NE(table.find("    fix: install cuDNN 9.19 or later for CUDA 13\n"), std::string::npos) << table;
  // Notes follow their row's fix, in order.
  const std::size_t fix = table.find("    fix: reinstall cuDNN 9.19.0");
  const std::size_t note1 = table.find("    note: cudnn.version: follows from this\n");
  const std::size_t note2 = table.find("    note: cuDNN: libcudnn_graph.so.9: cannot open shared object file: ");
  ASSERT_NE(fix, std::string::npos) << table;
  EXPECT_TRUE(fix < note1 && note1 < note2 && note2 < table.find("cudnn.single_copy ")) << table;
  // A note longer than a line continues under its first character, nothing lost (on a terminal of
  // 160 columns; into a pipe, each note is one line).
  EXPECT_NE(table.find("    note: " + report.rows[5].notes[1] + "\n"), std::string::npos) << table;
  const std::string wrapped = manifest::format_table(report, 160);
  const std::vector<std::string> lines = split_lines(wrapped.substr(wrapped.find("    note: cuDNN: ")));
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[1].find_first_not_of(' '), std::string("    note: ").size()) << wrapped;
  EXPECT_EQ(without_spaces(lines[0].substr(10) + lines[1]), without_spaces(report.rows[5].notes[1]));
}

TEST(ReportJson, BecauseAndNotesOnlyWhereSet) {
  const manifest::Report report = broken_machine_report();
  const nlohmann::json j = nlohmann::json::parse(manifest::to_json(report));
  ASSERT_EQ(j["items"].size(), report.rows.size());
  const nlohmann::json& cuda = j["items"][1];
  EXPECT_EQ(cuda["item"], "driver.cuda");
  EXPECT_EQ(cuda["because"], "driver.release");
  EXPECT_FALSE(cuda.contains("notes"));
  const nlohmann::json& sub = j["items"][5];
  EXPECT_EQ(sub["item"], "cudnn.sublibraries");
  EXPECT_EQ(sub["notes"], nlohmann::json(report.rows[5].notes));
  EXPECT_FALSE(sub.contains("because"));
  EXPECT_EQ(sub["found"], report.rows[5].found);  // JSON keeps cells whole
  // A row with neither keeps the schema it always had.
  std::vector<std::string> keys;
  for (const auto& [k, v] : j["items"][0].items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"expected", "fix", "found", "item", "severity", "source", "status"}));
}

}  // namespace
}  // namespace infer::test

namespace infer::test {
namespace {

// What a damaged library returns reaches the report through printable_utf8 (platform/isolated.cpp):
// before, a corrupt libcuda's error text ended `infer --check --json` with an internal error.
TEST(Printable, KeepsUtf8AndEscapesControlsAndInvalidBytes) {
  EXPECT_EQ(printable_utf8("/home/jos\xc3\xa9/lib \xe2\x82\xac"), "/home/jos\xc3\xa9/lib \xe2\x82\xac");
  EXPECT_EQ(printable_utf8("a\x06"
                           "b\n"),
            "a\\x06b\\x0a");
  EXPECT_EQ(printable_utf8("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(printable_utf8("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable_utf8("\xe2\x82"), "\\xe2\\x82");           // cut short
  EXPECT_EQ(printable_ascii("\xc3\xa9"), "\\xc3\\xa9");
}

}  // namespace
}  // namespace infer::test
