// End to end: the infer executable on real files, as a user runs it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "infer/errors.h"
#include "backends/gpu_backend.h"
#include "formats/model_file.h"
#include "tests/support/png_writer.h"
#include "tests/support/process.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

namespace fs = std::filesystem;

const std::string kSamples = test_file("samples");

ProcessResult infer(std::vector<std::string> args) { return run_process(infer_exe(), std::move(args)); }

// The label each bundled sample must get.
const std::vector<std::pair<std::string, std::string>> kSampleLabels = {
    {"ankle-boot.png", "Ankle boot"}, {"bag.png", "Bag"},           {"dress.png", "Dress"},
    {"photo-sneaker.jpg", "Sneaker"}, {"pullover.png", "Pullover"}, {"sneaker.png", "Sneaker"},
    {"trouser.png", "Trouser"}};

TEST(Cli, ClassifiesEverySampleCorrectly) {
  const ProcessResult r = infer({"--device", "cpu", kSamples});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = r.out_lines();
  ASSERT_EQ(lines.size(), kSampleLabels.size()) << r.out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    // "<dir>/ankle-boot.png: Ankle boot 0.981 | Sneaker 0.012 | Sandal 0.005   [cpu]"
    const std::string prefix = kSamples + "/" + kSampleLabels[i].first + ": " + kSampleLabels[i].second + " 0.";
    EXPECT_EQ(lines[i].rfind(prefix, 0), 0u) << lines[i];
    EXPECT_NE(lines[i].find(" | "), std::string::npos) << lines[i];
    EXPECT_NE(lines[i].find("[cpu]"), std::string::npos) << lines[i];
  }
}

// infer finds its model and VERSIONS.toml relative to its own executable (../share/infer), not in
// a source or build path compiled in: bin/infer and share/infer copied to a fresh folder classify
// from there, with no notice (a missing manifest or model would say so on stderr).
TEST(Cli, RunsFromACopyAtAnotherPath) {
  TempDir dir;
  fs::create_directories(dir / "bin");
  fs::copy_file(infer_exe(), dir / "bin" / "infer");
  const fs::path shipped = exe_dir().parent_path() / "share" / "infer";
  ASSERT_TRUE(fs::is_regular_file(shipped / "weights" / "fashion.toml")) << shipped << " (made by the build)";
  fs::create_directories(dir / "share");
  fs::copy(shipped, dir / "share" / "infer", fs::copy_options::recursive);
  const std::string image = (dir / "share" / "infer" / "samples" / "ankle-boot.png").string();
  for (const char* device : {"cpu", "auto"}) {
    const ProcessResult r = run_process((dir / "bin" / "infer").string(), {"--device", device, image});
    ASSERT_EQ(r.exit_code, 0) << device << ": " << r.err;
    EXPECT_EQ(r.out.rfind(image + ": Ankle boot 0.", 0), 0u) << device << ": " << r.out;
    if (std::string(device) == "cpu") {
      EXPECT_EQ(r.err, "");
    }
    EXPECT_EQ(r.err.find("no manifest"), std::string::npos) << device << ": " << r.err;
  }
}

TEST(Cli, JsonLinesAreCompleteAndOrdered) {
  const ProcessResult r =
      infer({"--device", "cpu", "--json", "--top-k", "4", kSamples + "/bag.png", kSamples + "/trouser.png"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = r.out_lines();
  ASSERT_EQ(lines.size(), 2u);
  const nlohmann::json j = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(j["file"], kSamples + "/trouser.png");
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["backend"].get<std::string>().rfind("cpu", 0), 0u) << j["backend"];
  ASSERT_EQ(j["top"].size(), 4u);
  EXPECT_EQ(j["top"][0]["label"], "Trouser");
  EXPECT_EQ(j["top"][0]["index"], 1);
  double sum = 0.0, previous = 1.0;
  for (const auto& t : j["top"]) {
    const double p = t["prob"];
    EXPECT_LE(p, previous);
    previous = p;
    sum += p;
  }
  EXPECT_LE(sum, 1.0 + 1e-6);
  EXPECT_GT(j["top"][0]["prob"].get<double>(), 0.5);
}

TEST(Cli, BatchSizeDoesNotChangeResults) {
  const ProcessResult one = infer({"--device", "cpu", "--json", "--batch", "1", kSamples});
  const ProcessResult three = infer({"--device", "cpu", "--json", "--batch", "3", kSamples});
  ASSERT_EQ(one.exit_code, 0);
  ASSERT_EQ(three.exit_code, 0);
  const auto a = one.out_lines(), b = three.out_lines();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto ja = nlohmann::json::parse(a[i]), jb = nlohmann::json::parse(b[i]);
    EXPECT_EQ(ja["file"], jb["file"]);
    EXPECT_EQ(ja["top"][0]["index"], jb["top"][0]["index"]);
    EXPECT_NEAR(ja["top"][0]["prob"].get<double>(), jb["top"][0]["prob"].get<double>(), 1e-5);
  }
}

// One bad input: how it is made, the exit code and the substring of its one stderr line.
struct BadInput {
  const char* what;
  std::function<std::string(const TempDir&)> make;  // returns the argument to pass
  int exit_code;
  std::string message;
};

std::string sample_bytes(const std::string& name) { return slurp(kSamples + "/" + name); }

std::string grey_row(std::uint32_t width, int bytes_per_pixel) {
  std::string row;
  for (std::uint32_t x = 0; x < width * static_cast<std::uint32_t>(bytes_per_pixel); ++x)
    row += static_cast<char>(x * 37);
  return row;
}

std::string write(const TempDir& d, const std::string& name, const std::string& bytes) {
  write_file(d / name, bytes);
  return (d / name).string();
}

void PrintTo(const BadInput& c, std::ostream* os) { *os << c.what; }

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, ReportsOneLineAndExitCode) {
  const BadInput& c = GetParam();
  TempDir dir;
  const std::string arg = c.make(dir);
  const std::vector<std::string> files = files_in(dir.path());
  const ProcessResult r = infer({"--device", "cpu", arg, kSamples + "/bag.png"});
  EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
  // With --json every stdout line is a whole JSON object, the error one included; nothing is left behind.
  const ProcessResult j = infer({"--device", "cpu", "--json", arg, kSamples + "/bag.png"});
  EXPECT_EQ(j.exit_code, c.exit_code) << j.err;
  ASSERT_EQ(j.out_lines().size(), 2u) << j.out;
  for (const std::string& line : j.out_lines()) EXPECT_TRUE(nlohmann::json::accept(line)) << line;
  EXPECT_EQ(files_in(dir.path()), files);
  // The good image after the bad one is still classified.
  EXPECT_NE(r.out.find("bag.png: Bag"), std::string::npos) << r.out;
  if (c.exit_code == 0) {
    EXPECT_EQ(r.out_lines().size(), 2u) << r.out;
    return;
  }
  const std::vector<std::string> lines = ProcessResult::lines(r.err);
  ASSERT_EQ(lines.size(), 2u) << r.err;  // the problem, then the count
  EXPECT_EQ(lines[0].rfind("infer: " + arg + ": ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(c.message), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1], "infer: 1 of 2 inputs failed; the others were classified");
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadInputTest,
    ::testing::Values(
        BadInput{"missing file", [](const TempDir& d) { return (d / "nope.png").string(); }, 3, "no such file"},
        BadInput{"directory without images",
                 [](const TempDir& d) {
                   write(d, "notes.txt", "hello");
                   return d.path().string();
                 },
                 3, "directory contains no images"},
        BadInput{"zero-byte file", [](const TempDir& d) { return write(d, "empty.png", ""); }, 3, "empty file"},
        BadInput{"text named png", [](const TempDir& d) { return write(d, "text.png", "this is not a picture\n"); }, 3,
                 "not a supported image"},
        BadInput{"truncated PNG",
                 [](const TempDir& d) {
                   const std::string png = sample_bytes("trouser.png");
                   return write(d, "cut.png", png.substr(0, png.size() / 2));
                 },
                 3, "cannot decode image"},
        BadInput{"truncated JPEG",  // stb refuses a JPEG that ends before its end-of-image marker
                 [](const TempDir& d) {
                   const std::string jpeg = sample_bytes("photo-sneaker.jpg");
                   return write(d, "cut.jpg", jpeg.substr(0, jpeg.size() - 2));
                 },
                 3, "cannot decode image: expected marker"},
        BadInput{"JPEG whose Huffman table overflows",  // fuzz_image: an out-of-bounds write in stb 2.27
                 [](const TempDir& d) {
                   return write(d, "dht.jpg",
                                slurp(test_file("tests/fuzz/corpus/fuzz_image/crash-jpeg-dht-overflow.jpg")));
                 },
                 3, "cannot decode image: bad DHT header"},
        BadInput{"PNG whose first IDAT chunk is empty",  // fuzz_image: memcpy(NULL, ..., 0) in stb 2.27 (UBSan)
                 [](const TempDir& d) {
                   return write(d, "idat.png",
                                slurp(test_file("tests/fuzz/corpus/fuzz_image/crash-png-empty-idat.png")));
                 },
                 // stb names the unknown chunk by its four bytes: non-printable ones are escaped
                 3, "cannot decode image: \\x18\\x06\\xe0\\xf7 PNG chunk not known"},
        BadInput{"PGM with no rows",  // fuzz_image: a 3x0 image read out of bounds in preprocess
                 [](const TempDir& d) { return write(d, "flat.pgm", std::string("P5\n3 0\n255\n", 11)); }, 3,
                 "PGM height 0 is invalid (must be at least 1)"},
        BadInput{"PNG header with 32-bit sides",  // the pixel count overflowed 64 bits before the limit check
                 [](const TempDir& d) {
                   return write(d, "wide.png", encode_png(0xffffffffu, 0xffffffffu, 8, 0, {grey_row(4, 1)}));
                 },
                 3, "image is 4294967295x4294967295 pixels, over the limit of 50000000 pixels"},
        BadInput{"tiny TGA claiming 8.7 Mpx",  // fuzz_image: 19 bytes decoded (slowly) into a picture of zeros
                 [](const TempDir& d) {
                   return write(d, "tiny.tga",
                                std::string("\0\0\x0a\0\0\x24\0\0\0\0\0\x7d\xd7\0\x52\x9f\x18\0\x30", 19));
                 },
                 3, "run-length TGA data truncated: the header's 215x40786 pixels need"},
        BadInput{"truncated PGM",  // stb 2.27 decoded the missing rows from uninitialised memory
                 [](const TempDir& d) { return write(d, "cut.pgm", std::string("P5\n4 4\n255\n", 11) + "abcdefgh"); },
                 3, "PGM data truncated: the header's 4x4 pixels need 27 bytes, the file has 19"},
        BadInput{"PGM header number over 2^31",  // fuzz_image: int overflow in stb 2.27's PNM header parser
                 [](const TempDir& d) { return write(d, "big.pgm", "P5\n4444444444 2\n255\n" + std::string(8, 'x')); },
                 3, "PGM width 4444444444 is too large"},
        BadInput{
            "huge PNG header",
            [](const TempDir& d) { return write(d, "huge.png", encode_png(100000, 100000, 8, 0, {grey_row(4, 1)})); },
            3, "image is 100000x100000 pixels, over the limit of 50000000 pixels"},
        BadInput{"16-bit PNG works",
                 [](const TempDir& d) {
                   return write(d, "deep.png", encode_png(3, 2, 16, 0, {grey_row(3, 2), grey_row(3, 2)}));
                 },
                 0, ""},
        BadInput{"palette PNG works",
                 [](const TempDir& d) {
                   return write(d, "palette.png",
                                encode_png(4, 2, 8, 3, {std::string("\0\1\1\0", 4), std::string("\1\0\0\1", 4)},
                                           std::string("\0\0\0\xff\xff\xff", 6)));
                 },
                 0, ""},
        BadInput{"grey+alpha PNG works",
                 [](const TempDir& d) {
                   return write(d, "ga.png", encode_png(5, 5, 8, 4, std::vector<std::string>(5, grey_row(5, 2))));
                 },
                 0, ""},
        BadInput{"RGBA PNG works",
                 [](const TempDir& d) {
                   return write(d, "rgba.png", encode_png(40, 30, 8, 6, std::vector<std::string>(30, grey_row(40, 4))));
                 },
                 0, ""}),
    [](const ::testing::TestParamInfo<BadInput>& param_info) {
      std::string n = param_info.param.what;
      for (char& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return n;
    });

TEST(Cli, JsonModeReportsErrorsAsWholeLines) {
  TempDir dir;
  write_file(dir / "bad.png", "garbage");
  const ProcessResult r = infer({"--json", "--device", "cpu", (dir / "bad.png").string(), kSamples + "/dress.png"});
  EXPECT_EQ(r.exit_code, 3);
  const auto lines = r.out_lines();
  ASSERT_EQ(lines.size(), 2u);
  const auto bad = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(bad["file"], (dir / "bad.png").string());
  EXPECT_NE(bad["error"].get<std::string>().find("not a supported image"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(lines[1])["top"][0]["label"], "Dress");
}

// Issue 11, item 2: a bad input in the middle of a batch keeps its place among the results.
TEST(Cli, JsonKeepsInputOrderWhenAnInputFailsInsideABatch) {
  TempDir dir;
  write_file(dir / "b.png", "garbage");
  const std::vector<std::string> files = {kSamples + "/bag.png", (dir / "b.png").string(), kSamples + "/dress.png",
                                          kSamples + "/trouser.png"};
  std::vector<std::string> args = {"--json", "--device", "cpu", "--batch", "8"};
  args.insert(args.end(), files.begin(), files.end());
  const ProcessResult r = infer(args);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const auto lines = r.out_lines();
  ASSERT_EQ(lines.size(), files.size()) << r.out;
  for (std::size_t i = 0; i < files.size(); ++i) EXPECT_EQ(nlohmann::json::parse(lines[i])["file"], files[i]) << r.out;
  EXPECT_TRUE(nlohmann::json::parse(lines[1]).contains("error"));
}

// Issue 11, item 1: a write that fails ends the run with exit 6 and one line, in every mode.
TEST(Cli, AFullOutputIsAnErrorNotASuccess) {
  for (const std::vector<std::string>& mode : {std::vector<std::string>{"--json"}, std::vector<std::string>{}}) {
    std::string command = "exec '" + infer_exe() + "' --device cpu";
    for (const std::string& m : mode) command += " " + m;
    const ProcessResult r = run_process("/bin/sh", {"-c", command + " '" + kSamples + "' > /dev/full"});
    EXPECT_EQ(r.exit_code, 6) << r.err;
    const auto lines = ProcessResult::lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_EQ(lines[0], "infer: cannot write to standard output: No space left on device");
  }
  const ProcessResult check = run_process("/bin/sh", {"-c", "exec '" + infer_exe() + "' --version > /dev/full"});
  EXPECT_EQ(check.exit_code, 6) << check.err;
}

TEST(Cli, AFullDiskMidRunIsAnErrorAndStopsTheRun) {
  if (run_process("/usr/bin/unshare", {"-rm", "true"}).exit_code != 0)
    GTEST_SKIP() << "needs unshare -rm for a small tmpfs";
  TempDir dir;
  fs::create_directories(dir / "images");
  fs::create_directories(dir / "disk");
  for (int i = 0; i < 300; ++i) {
    fs::create_symlink(kSamples + "/bag.png", dir / "images" / ("img" + std::to_string(1000 + i) + ".png"));
  }
  // A 16 KiB disk holds about 60 of the 300 lines.
  const ProcessResult r = run_process(
      "/usr/bin/unshare", {"-rm", "/bin/sh", "-c",
                           "mount -t tmpfs -o size=16k none '" + (dir / "disk").string() + "' && '" + infer_exe() +
                               "' --json --device cpu --batch 8 '" + (dir / "images").string() + "' > '" +
                               (dir / "disk" / "out.jsonl").string() + "'"});
  EXPECT_EQ(r.exit_code, 6) << r.err;
  EXPECT_EQ(r.err, "infer: cannot write to standard output: No space left on device\n");
}

TEST(Cli, AReaderThatLeavesEndsTheRunWhenSigpipeIsIgnored) {
  TempDir dir;
  for (int i = 0; i < 2000; ++i) {
    fs::create_symlink(kSamples + "/bag.png", dir / ("img" + std::to_string(10000 + i) + ".png"));
  }
  // As a process supervisor would: SIGPIPE ignored, inherited by infer; the reader takes one line.
  const ProcessResult r = run_process(
      "/bin/bash", {"-c", "trap '' PIPE; '" + infer_exe() + "' --json --device cpu --batch 8 '" + dir.path().string() +
                              "' | head -n 1 > /dev/null; echo \"status ${PIPESTATUS[0]}\""});
  EXPECT_EQ(r.out, "status 6\n") << r.err;
  EXPECT_EQ(r.err, "infer: cannot write to standard output: Broken pipe\n");
}

TEST(Cli, UsageErrorsExitWithTwo) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{{},
                                                                                    {"--top-k", "0", "x.png"},
                                                                                    {"--batch", "0", "x.png"},
                                                                                    {"--device", "tpu", "x.png"},
                                                                                    {"--no-such-option", "x.png"},
                                                                                    {"--invert", "maybe", "x.png"},
                                                                                    {"--resize", "zoom", "x.png"},
                                                                                    {"--channel-order", "grb", "x.png"},
                                                                                    {"--alpha", "black", "x.png"}}) {
    const ProcessResult r = infer(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("infer: ", 0), 0u) << r.err;
  }
  EXPECT_EQ(infer({"--help"}).exit_code, 0);
}

// --alpha overrides the model's choice: a fully transparent picture of random dark colours is all
// white with `white` (the shipped model's default) and its stored colours with `drop`, so the two
// runs classify different pictures; `white` equals no flag.
TEST(Cli, AlphaChoosesWhiteOrTheStoredColour) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  TempDir dir;
  std::vector<std::string> rows(28);
  for (std::string& row : rows) {
    for (int x = 0; x < 28; ++x) {
      for (int c = 0; c < 3; ++c) row += static_cast<char>(static_cast<int>(rng.uniform(0.0f, 1.0f) * 100.0f));
      row += '\0';  // alpha 0: transparent
    }
  }
  const fs::path png = dir / "clear.png";
  write_file(png, encode_png(28, 28, 8, 6, rows));
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"--device", "cpu", "--json", "--top-k", "10"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(png.string());
    const ProcessResult r = infer(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  const std::string plain = run({}), white = run({"--alpha", "white"}), drop = run({"--alpha", "drop"});
  EXPECT_EQ(plain, white);
  EXPECT_NE(white, drop);
}

// --help's footer names every exit code of app/exit_codes.h (6 was missing).
TEST(Cli, HelpNamesEveryExitCode) {
  const ProcessResult r = infer({"--help"});
  ASSERT_EQ(r.exit_code, 0);
  for (const char* code : {"0 ok", "1 internal error", "2 usage", "3 invalid input", "4 GPU demanded",
                           "5 the environment", "6 standard output"}) {
    EXPECT_NE(r.out.find(code), std::string::npos) << code << "\n" << r.out;
  }
}

// Preprocessing overrides that do not fit the model: found after it is read, still usage errors.
TEST(Cli, PreprocessingOverridesThatDoNotFitTheModelExitWithTwo) {
  const std::string bag = kSamples + "/bag.png";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--mean", "0.1,0.2", bag}, "infer: --mean: the model has 1 channel(s), so give 1 value(s), found 2"},
      {{"--std", "0", bag}, "infer: --std: values must be positive"},
      {{"--resize", "crop", "--resize-size", "20", bag},
       "infer: --resize-size: 20 is smaller than the model's input (28x28)"},
      {{"--resize", "stretch", "--resize-size", "40", bag},
       "infer: --resize-size: applies to the crop resize mode only"}};
  for (const auto& [args, message] : cases) {
    std::vector<std::string> all = {"--device", "cpu"};
    all.insert(all.end(), args.begin(), args.end());
    const ProcessResult r = infer(all);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind(message, 0), 0u) << r.err;
    EXPECT_EQ(r.out, "");
  }
  // Overrides that fit are taken: the bag is the input's size, so only --mean/--std change it.
  const ProcessResult ok = infer({"--device", "cpu", "--resize", "stretch", "--channel-order", "bgr", "--invert", "no",
                                  "--mean", "0.286", "--std", "0.353", bag});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("bag.png: Bag"), std::string::npos) << ok.out;
}

TEST(Cli, PrecisionUsageErrorsExitWithTwo) {
  // tf32 and fp16 are GPU arithmetic: with --device cpu they are a usage error, one line.
  for (const char* precision : {"tf32", "fp16"}) {
    const ProcessResult r = infer({"--device", "cpu", "--precision", precision, kSamples + "/bag.png"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err,
              std::string("infer: --precision ") + precision +
                  " needs the GPU; --device cpu runs fp32 only (use --device gpu or auto, or --precision fp32)\n");
  }
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{{"--precision", "fp64", "x.png"},
                                                                                    {"--precision", "FP16", "x.png"},
                                                                                    {"x.png", "--precision"},
                                                                                    {"x.png", "--autotune-cache"}}) {
    const ProcessResult r = infer(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("infer: ", 0), 0u) << r.err;
  }
}

TEST(Cli, Fp32AndGpuOnlyOptionsRunOnTheCpu) {
  // --precision fp32 is the CPU's own; --autotune and -v concern the GPU and change nothing here.
  const ProcessResult plain = infer({"--device", "cpu", "--json", kSamples + "/bag.png"});
  const ProcessResult flagged = infer({"--device", "cpu", "--json", "--precision", "fp32", "--autotune",
                                       "--autotune-cache", "/nonexistent/cache.json", "-v", kSamples + "/bag.png"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(flagged.exit_code, 0) << flagged.err;
  EXPECT_EQ(flagged.out, plain.out);
  EXPECT_EQ(flagged.err, plain.err);
}

TEST(Cli, CpuFallbackNoticeSaysItRunsFp32) {
  const LoadedModel model = load_model(test_file("weights/fashion.toml"));
  std::string backend_reason;
  try {
    make_gpu_backend(model.network, 1);
  } catch (const GpuUnavailableError& e) {
    backend_reason = e.what();
  }
  if (backend_reason.empty()) GTEST_SKIP() << "a GPU is usable here: --device auto does not fall back";
  const ProcessResult r = infer({"--no-verify", "--precision", "fp16", kSamples + "/bag.png"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err,
            "infer: notice: --no-verify: the environment and the model digests are not checked\n"
            "infer: notice: running on the CPU in fp32 (--precision fp16 needs the GPU): " +
                backend_reason + "\n");
  EXPECT_NE(r.out.find("bag.png: Bag"), std::string::npos) << r.out;
}

TEST(Cli, BadModelExitsWithThree) {
  ProcessResult r = infer({"--model", "/nonexistent/model.toml", kSamples + "/bag.png"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "infer: /nonexistent/model.toml: no such file\n");

  TempDir dir;
  std::string toml = slurp(test_file("weights/fashion.toml"));
  const std::string from = "type = \"relu\"";
  toml.replace(toml.find(from), from.size(), "type = \"no_such_op\"");
  toml.replace(toml.find("fashion.safetensors"), 19, test_file("weights/fashion.safetensors"));
  write_file(dir / "m.toml", toml);
  r = infer({"--model", (dir / "m.toml").string(), kSamples + "/bag.png"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("unknown layer type 'no_such_op'"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

// An ONNX file as --model: recognised by its content (here without the .onnx name), classified;
// one cut short, or an unsupported node, is exit 3 with the file and the problem. The model is one
// of ONNX's own conformance cases (libonnx-testdata, tools/dev/install-deps.sh): GlobalAveragePool of
// a 1x3x5x5 input, three scores, no softmax.
TEST(Cli, AnOnnxModelIsRecognisedByItsContentAndRefusedWhenBroken) {
  const std::string data = "/usr/share/libonnx-testdata/data/node";
  TempDir dir;
  write_file(dir / "gap.model", slurp(data + "/test_globalaveragepool/model.onnx"));
  ProcessResult r = infer(
      {"--no-verify", "--device", "cpu", "--json", "--model", (dir / "gap.model").string(), kSamples + "/bag.png"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json line = nlohmann::json::parse(r.out);
  ASSERT_EQ(line["top"].size(), 3u) << r.out;
  EXPECT_EQ(line["top"][0]["label"], "class 0");
  EXPECT_TRUE(line["top"][0].contains("score")) << "a model without a softmax prints scores: " << r.out;

  const std::string bytes = slurp(data + "/test_globalaveragepool/model.onnx");
  write_file(dir / "cut.onnx", bytes.substr(0, bytes.size() / 2));
  r = infer({"--no-verify", "--device", "cpu", "--model", (dir / "cut.onnx").string(), kSamples + "/bag.png"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("\ninfer: " + (dir / "cut.onnx").string() +
                       ": not a valid ONNX model (the protobuf message does not parse)\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");

  r = infer({"--no-verify", "--device", "cpu", "--model", data + "/test_maxpool_2d_dilations/model.onnx",
             kSamples + "/bag.png"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("node 'y' (MaxPool): dilated pooling is not supported"), std::string::npos) << r.err;
}

TEST(Cli, DeviceGpuFailsWithReasonWhenUnusable) {
  // The start-up check comes first: the root cause of `infer --check --json`'s report is the reason,
  // the first required item that is not ok (the model-file rows aside) and does not follow from
  // another such item ("because": gpu.count from cu13.driver.release without a driver).
  const ProcessResult checked = infer({"--check", "--json"});
  const nlohmann::json report = nlohmann::json::parse(checked.out);
  const auto failing = [](const nlohmann::json& row) {
    return row["severity"] == "required" && row["status"] != "ok" && row.value("counts", true) &&
           row["item"].get<std::string>().rfind("model:", 0) != 0;
  };
  std::string reason;
  for (const auto& row : report["items"]) {
    if (!failing(row)) continue;
    bool follows = false;
    for (const auto& cause : report["items"]) {
      follows = follows || (cause["item"] == row.value("because", std::string()) && failing(cause));
    }
    if (follows) continue;
    reason = row["item"].get<std::string>() + ": " + row["found"].get<std::string>() + " (expected " +
             row["expected"].get<std::string>() + ")";
    break;
  }
  if (!reason.empty()) {
    const ProcessResult r = infer({"--device", "gpu", kSamples + "/bag.png"});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_EQ(r.err.rfind("infer: the GPU is unusable (--device gpu): the environment does not match " +
                              shipped_file("VERSIONS.toml") + " (first: " + reason + ")\n",
                          0),
              0u)
        << r.err;
    EXPECT_EQ(r.out, "");
    const ProcessResult fallback = infer({kSamples + "/bag.png"});
    EXPECT_EQ(fallback.exit_code, 0);
    EXPECT_EQ(fallback.err, "infer: notice: running on the CPU: " + reason + "\n");
    EXPECT_NE(fallback.out.find("bag.png: Bag"), std::string::npos);
  }
  // Past the check (or with --no-verify), the GPU backend's own reason, decided the way infer decides it.
  const LoadedModel model = load_model(test_file("weights/fashion.toml"));
  std::string backend_reason;
  try {
    make_gpu_backend(model.network, 1);
  } catch (const GpuUnavailableError& e) {
    backend_reason = e.what();
  }
  const std::string skipped = "infer: notice: --no-verify: the environment and the model digests are not checked\n";
  const ProcessResult r = infer({"--no-verify", "--device", "gpu", kSamples + "/bag.png"});
  if (backend_reason.empty()) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("[gpu: "), std::string::npos) << r.out;
  } else {
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_EQ(r.err, skipped + "infer: the GPU is unusable (--device gpu): " + backend_reason + "\n");
    EXPECT_EQ(r.out, "");
    const ProcessResult fallback = infer({"--no-verify", kSamples + "/bag.png"});
    EXPECT_EQ(fallback.exit_code, 0);
    EXPECT_EQ(fallback.err, skipped + "infer: notice: running on the CPU: " + backend_reason + "\n");
    EXPECT_NE(fallback.out.find("bag.png: Bag"), std::string::npos);
  }
}

// --threads sets the CPU backend's threads (oneDNN's OpenMP runtime and OpenBLAS), as --version
// shows; the results do not depend on it.
TEST(Cli, ThreadsSetTheCpuBackendsThreadCount) {
  const ProcessResult version = infer({"--threads", "1", "--version"});
  ASSERT_EQ(version.exit_code, 0) << version.err;
  EXPECT_NE(version.out.find("oneDNN"), std::string::npos) << version.out;
  EXPECT_NE(version.out.find(", 1 thread; plain kernels:"), std::string::npos) << version.out;
  const ProcessResult one = infer({"--device", "cpu", "--json", "--threads", "1", kSamples});
  const ProcessResult two = infer({"--device", "cpu", "--json", "--threads", "2", kSamples});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const auto a = one.out_lines(), b = two.out_lines();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(nlohmann::json::parse(a[i])["top"][0]["index"], nlohmann::json::parse(b[i])["top"][0]["index"]);
  }
  EXPECT_EQ(infer({"--threads", "0", kSamples}).exit_code, 2);
}

// OpenBLAS is opened when the plain kernels first need it (gemm_openblas.cpp), not at start-up: a
// run on oneDNN's kernels never loads it. The dynamic loader's log (LD_DEBUG=libs) names every
// library it loads, dlopen's too: --version, which describes OpenBLAS, shows that it would be seen.
TEST(Cli, ARunOnOneDnnDoesNotLoadOpenBlas) {
  const ProcessResult version = run_process(infer_exe(), {"--version"}, {"LD_DEBUG=libs"});
  ASSERT_EQ(version.exit_code, 0) << version.err;
  EXPECT_NE(version.err.find("libopenblas"), std::string::npos) << "the loader's log does not show OpenBLAS opened";
  const ProcessResult run = run_process(infer_exe(), {"--device", "cpu", kSamples + "/bag.png"}, {"LD_DEBUG=libs"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err.find("libopenblas"), std::string::npos) << "a run on oneDNN loaded OpenBLAS";
}

// `infer serve` runs infer-serve from infer's own folder; where it is missing, one line says which
// file could not be started (exit 1), rather than another program of that name being found.
TEST(Cli, ServeRunsTheInferServeBesideIt) {
  const ProcessResult help = infer({"serve", "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("Usage: infer serve"), std::string::npos) << help.out;
  TempDir dir;
  const fs::path alone = dir / "infer";
  fs::copy_file(infer_exe(), alone);
  const ProcessResult missing = run_process(alone.string(), {"serve", "--help"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "infer serve: cannot start " + (dir / "infer-serve").string() + ": No such file or directory\n");
}

TEST(Cli, VersionNamesBuildAndModel) {
  const ProcessResult r = infer({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("infer ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("built with:"), std::string::npos);
  EXPECT_NE(r.out.find("model:        fashion-mnist-cnn"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace infer::test
