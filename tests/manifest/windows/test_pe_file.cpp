// manifest/windows/pe_file.h on images written by tests/support/pe_builder.h (any system), and on every truncation
// and on random corruptions of them: a hostile DLL is refused with a reason, never read out of
// bounds (the sanitizer build runs this too). tests/windows/ reads mingw's real DLLs.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "manifest/windows/pe_file.h"
#include "infer/errors.h"
#include "tests/support/pe_builder.h"
#include "tests/support/temp_dir.h"

namespace infer::test {
namespace {

using manifest::parse_pe;
using manifest::PeFile;

PeSpec cudnn_like() {
  PeSpec spec;
  spec.imports = {"cudnn_graph64_9.dll", "KERNEL32.dll", "cudart64_13.dll"};
  spec.delay_imports = {"nvcuda.dll"};
  spec.strings = {{"ProductName", "NVIDIA CUDA Deep Neural Network library"},
                  {"FileVersion", "9.19.0.56"},
                  {"FileDescription", u8"Gr\u00fc\u00dfe \u65e5\u672c \U0001F600"}};
  return spec;
}

TEST(PeFile, ReadsMachineImportsDelayImportsAndVersion) {
  const std::vector<unsigned char> image = PeBuilder::build(cudnn_like()).bytes;
  const PeFile pe = parse_pe(image.data(), image.size(), "cudnn64_9.dll");
  EXPECT_EQ(pe.machine_name(), "x64");
  EXPECT_TRUE(pe.dll);
  EXPECT_EQ(pe.imports, (std::vector<std::string>{"cudnn_graph64_9.dll", "KERNEL32.dll", "cudart64_13.dll"}));
  EXPECT_EQ(pe.delay_imports, std::vector<std::string>{"nvcuda.dll"});
  ASSERT_TRUE(pe.version.has_value());
  EXPECT_EQ(pe.version->file_version(), "9.19.0.56");
  EXPECT_EQ(pe.version->strings.at("ProductName"), "NVIDIA CUDA Deep Neural Network library");
  EXPECT_EQ(pe.version->strings.at("FileVersion"), "9.19.0.56");
  EXPECT_EQ(pe.version->strings.at("FileDescription"), u8"Gr\u00fc\u00dfe \u65e5\u672c \U0001F600");
}

TEST(PeFile, AbsentTablesAreEmptyNotErrors) {
  PeSpec spec;
  spec.with_version = false;
  const std::vector<unsigned char> image = PeBuilder::build(spec).bytes;
  const PeFile pe = parse_pe(image.data(), image.size(), "plain.dll");
  EXPECT_TRUE(pe.imports.empty());
  EXPECT_TRUE(pe.delay_imports.empty());
  EXPECT_FALSE(pe.version.has_value());
}

TEST(PeFile, ReadsAFileOnDiskAsFromMemory) {
  TempDir dir;
  const std::vector<unsigned char> image = PeBuilder::build(cudnn_like()).bytes;
  write_file(dir / "cudnn64_9.dll", std::string(image.begin(), image.end()));
  const PeFile pe = manifest::read_pe_file(dir / "cudnn64_9.dll");
  EXPECT_EQ(pe.imports.size(), 3u);
  ASSERT_TRUE(pe.version.has_value());
  EXPECT_EQ(pe.version->file_version(), "9.19.0.56");

  write_file(dir / "libcudnn.so.9", std::string("\x7f"
                                                "ELF\x02\x01\x01",
                                                7) +
                                        std::string(200, '\0'));
  try {
    manifest::read_pe_file(dir / "libcudnn.so.9");
    ADD_FAILURE() << "an ELF file was read as a DLL";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("libcudnn.so.9: not a Windows DLL or program: no MZ signature"),
              std::string::npos)
        << e.what();
  }
}

// Parses or refuses with InputError; anything else (another exception, a crash, a read out of
// bounds under the sanitizers) fails.
void parses_or_refuses(const std::vector<unsigned char>& bytes, const std::string& what) {
  try {
    parse_pe(bytes.data(), bytes.size(), "x.dll");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("x.dll: not a Windows DLL or program: "), std::string::npos)
        << what << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << e.what();
  }
}

TEST(PeFile, EveryTruncationIsRefusedWithAReason) {
  // Cut anywhere before the end of the last structure, the file is refused; cutting only the zero
  // padding after it changes nothing.
  const PeImage image = PeBuilder::build(cudnn_like());
  const PeFile whole = parse_pe(image.bytes.data(), image.bytes.size(), "x.dll");
  for (std::size_t n = 0; n < image.bytes.size(); ++n) {
    SCOPED_TRACE("cut to " + std::to_string(n) + " of " + std::to_string(image.bytes.size()) + " bytes");
    try {
      const PeFile pe = parse_pe(image.bytes.data(), n, "x.dll");
      EXPECT_GE(n, image.used) << "a truncated file was read";
      EXPECT_EQ(pe.imports, whole.imports);
      ASSERT_TRUE(pe.version.has_value());
      EXPECT_EQ(pe.version->strings, whole.version->strings);
    } catch (const InputError& e) {
      EXPECT_LT(n, image.used) << e.what();
      EXPECT_NE(std::string(e.what()).find("x.dll: not a Windows DLL or program: "), std::string::npos) << e.what();
    }
    if (HasFailure()) break;
  }
}

TEST(PeFile, RandomCorruptionsAreParsedOrRefusedNeverReadOutOfBounds) {
  const std::vector<unsigned char> image = PeBuilder::build(cudnn_like()).bytes;
  std::random_device seed_source;
  const unsigned seed = seed_source();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 random(seed);
  // Corrupt where the structures are: the headers and the first 1 KiB of the section.
  const std::size_t span = std::min<std::size_t>(image.size(), 0x600);
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<unsigned char> bad = image;
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int f = 0; f < flips; ++f) bad[random() % span] = static_cast<unsigned char>(random());
    parses_or_refuses(bad, "trial " + std::to_string(trial));
    if (HasFailure()) break;
  }
}

}  // namespace
}  // namespace infer::test
