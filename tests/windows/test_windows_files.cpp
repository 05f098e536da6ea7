// Reading user-named files on Windows (platform/input_file_windows.cpp) and SHA-256 through BCrypt
// (manifest/windows/sha256_bcrypt.cpp): wide paths with non-ASCII folder names, the refusals of the POSIX
// version in Windows' terms, and messages that name the file in UTF-8.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "manifest/sha256.h"
#include "infer/errors.h"
#include "platform/input_file.h"
#include "tests/support/temp_dir.h"

namespace infer::test {
namespace {

namespace fs = std::filesystem;

// A folder name outside every 8-bit code page: the ANSI API (CreateFileA) cannot open it.
const char* const kWideFolder = u8"mod\u00e8les-\u65e5\u672c-\u0436";

std::string random_bytes(std::size_t n) {
  std::random_device seed;
  std::mt19937 random(seed());
  std::string bytes(n, '\0');
  for (char& c : bytes) c = static_cast<char>(random() & 0xff);
  return bytes;
}

std::string thrown_by(const fs::path& path) {
  try {
    InputFile f(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

TEST(WindowsInputFile, ReadsAFileInANonAsciiFolderByteForByte) {
  TempDir dir;
  const fs::path folder = dir.path() / fs::u8path(kWideFolder);
  fs::create_directory(folder);
  const std::string bytes = random_bytes(200001);  // more than one read of sha256_file's buffer
  write_file(folder / "weights.bin", bytes);

  const InputFile f(folder / "weights.bin");
  EXPECT_EQ(f.size(), bytes.size());
  const std::vector<unsigned char> read = f.read_all(1 << 20, "a test file");
  EXPECT_EQ(std::string(read.begin(), read.end()), bytes);
  EXPECT_NE(f.name().find(kWideFolder), std::string::npos) << "name() is UTF-8: " << f.name();
}

TEST(WindowsInputFile, RefusalsNameTheFileInUtf8) {
  TempDir dir;
  const fs::path folder = dir.path() / fs::u8path(kWideFolder);
  fs::create_directory(folder);

  const std::string missing = thrown_by(folder / "missing.toml");
  EXPECT_NE(missing.find(kWideFolder), std::string::npos) << missing;
  EXPECT_NE(missing.find("missing.toml: no such file"), std::string::npos) << missing;

  const std::string no_folder = thrown_by(folder / "absent" / "model.toml");
  EXPECT_NE(no_folder.find("no such file"), std::string::npos) << no_folder;

  const std::string is_folder = thrown_by(folder);
  EXPECT_NE(is_folder.find("is a directory"), std::string::npos) << is_folder;
}

TEST(WindowsInputFile, DevicesAreRefusedNotRead) {
  // NUL reads as empty and CON would wait for the console: neither is a model file.
  const std::string nul = thrown_by("NUL");
  EXPECT_NE(nul.find("not a regular file"), std::string::npos) << nul;
}

TEST(WindowsInputFile, TheSizeLimitIsCheckedBeforeReading) {
  TempDir dir;
  write_file(dir / "big.bin", random_bytes(4096));
  const InputFile f(dir / "big.bin");
  try {
    f.read_all(4095, "a manifest");
    ADD_FAILURE() << "read_all read a file over its limit";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("file is 4096 bytes, over the limit of 4095 bytes for a manifest"),
              std::string::npos)
        << e.what();
  }
}

TEST(WindowsSha256, BCryptAgreesWithTheKnownDigestInANonAsciiFolder) {
  TempDir dir;
  const fs::path folder = dir.path() / fs::u8path(kWideFolder);
  fs::create_directory(folder);
  // FIPS 180-2's two-block example, and the empty file.
  write_file(folder / "abc.txt", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq");
  EXPECT_EQ(manifest::sha256_file(folder / "abc.txt"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  write_file(folder / "empty.txt", "");
  EXPECT_EQ(manifest::sha256_file(folder / "empty.txt"),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
}  // namespace infer::test
