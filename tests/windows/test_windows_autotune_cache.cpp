// The cuDNN autotune cache's Windows file handling (backends/cudnn/autotune/autotune_cache_windows.cpp) under
// wine: a round trip through a non-ASCII folder, replacing an existing cache, what cannot be read,
// and the default location. The format itself is tested on Linux (tests/backends/cudnn/test_autotune_cache.cpp).
#include <windows.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "backends/cudnn/autotune/autotune_cache.h"
#include "tests/support/temp_dir.h"

namespace infer::cudnn {
namespace {

namespace fs = std::filesystem;

AutotuneKey random_key(std::mt19937& rng) {
  return {"NVIDIA H200 (sm_90)", 91900, "fp32", "conv n=" + std::to_string(rng() % 1000 + 1) + " c=64 k=64 3x3"};
}

AutotuneChoice random_choice(std::mt19937& rng) {
  return {static_cast<int>(rng() % kConvolutionAlgorithmCount), rng() % 2 == 0, rng() % (1u << 24),
          static_cast<double>(rng() % 100000) / 1000.0};
}

TEST(WindowsAutotuneCache, RoundTripsThroughANonAsciiFolderAndReplacesTheOldFile) {
  std::mt19937 rng(std::random_device{}());
  infer::test::TempDir dir;
  const fs::path file = dir.path() / fs::u8path("Cache é 日本") / "autotune.json";
  AutotuneCache cache;
  const AutotuneKey first = random_key(rng);
  const AutotuneChoice choice = random_choice(rng);
  cache.put(first, choice);
  cache.save(file);  // creates the folder
  EXPECT_FALSE(cache.dirty());

  AutotuneCache loaded = AutotuneCache::load(file);
  EXPECT_EQ(loaded.problem(), "");
  ASSERT_TRUE(loaded.find(first).has_value());
  EXPECT_EQ(loaded.find(first)->algorithm, choice.algorithm);
  EXPECT_EQ(loaded.find(first)->workspace_bytes, choice.workspace_bytes);

  // Saved again over the existing file (MoveFileExW replaces it): both entries, no stray file.
  AutotuneKey second = random_key(rng);
  second.precision = "fp16";
  loaded.put(second, random_choice(rng));
  loaded.save(file);
  const AutotuneCache again = AutotuneCache::load(file);
  EXPECT_EQ(again.size(), 2u);
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(file.parent_path())) {
    ++files;
    EXPECT_EQ(entry.path().filename(), file.filename()) << "left behind: " << entry.path().u8string();
  }
  EXPECT_EQ(files, 1u);
}

TEST(WindowsAutotuneCache, AMissingFileIsAnEmptyCacheAndAFolderIsAProblem) {
  infer::test::TempDir dir;
  const AutotuneCache missing = AutotuneCache::load(dir.path() / "none.json");
  EXPECT_EQ(missing.size(), 0u);
  EXPECT_EQ(missing.problem(), "");

  fs::create_directory(dir.path() / "folder.json");
  const AutotuneCache folder = AutotuneCache::load(dir.path() / "folder.json");
  EXPECT_NE(folder.problem().find("is a folder, expected a file"), std::string::npos) << folder.problem();

  const fs::path big = dir.path() / "big.json";
  {
    std::ofstream out(big, std::ios::binary);
    out << std::string(kAutotuneCacheMaxBytes + 1, ' ');
  }
  const AutotuneCache large = AutotuneCache::load(big);
  EXPECT_NE(large.problem().find("too large: 16777217 bytes"), std::string::npos) << large.problem();
}

TEST(WindowsAutotuneCache, AFileInTheWayOfTheFolderIsAnErrorNamingThePath) {
  infer::test::TempDir dir;
  std::ofstream(dir.path() / "blocker") << "x";
  AutotuneCache cache;
  std::mt19937 rng(std::random_device{}());
  cache.put(random_key(rng), random_choice(rng));
  const fs::path file = dir.path() / "blocker" / "autotune.json";
  try {
    cache.save(file);
    FAIL() << "saved under a file";
  } catch (const AutotuneCacheError& e) {
    EXPECT_EQ(e.path(), file.u8string());
  }
}

TEST(WindowsAutotuneCache, TheDefaultLocationIsInLocalAppData) {
  infer::test::TempDir dir;
  const fs::path local = dir.path() / fs::u8path("Lokal ü");
  wchar_t saved_local[32768];
  const DWORD had_local = GetEnvironmentVariableW(L"LOCALAPPDATA", saved_local, 32768);
  SetEnvironmentVariableW(L"INFER_AUTOTUNE_CACHE", nullptr);
  SetEnvironmentVariableW(L"LOCALAPPDATA", local.c_str());
  EXPECT_EQ(default_autotune_cache_path(), local / "infer" / "autotune.json");
  SetEnvironmentVariableW(L"INFER_AUTOTUNE_CACHE", (dir.path() / "mine.json").c_str());
  EXPECT_EQ(default_autotune_cache_path(), dir.path() / "mine.json");
  SetEnvironmentVariableW(L"INFER_AUTOTUNE_CACHE", nullptr);
  SetEnvironmentVariableW(L"LOCALAPPDATA", nullptr);
  EXPECT_EQ(default_autotune_cache_path(), fs::path());
  SetEnvironmentVariableW(L"LOCALAPPDATA", had_local ? saved_local : nullptr);
}

}  // namespace
}  // namespace infer::cudnn
