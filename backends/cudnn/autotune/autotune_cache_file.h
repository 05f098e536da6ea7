// The autotune cache's file, per system (autotune_cache_posix.cpp, autotune_cache_windows.cpp):
// reading it bounded, replacing it atomically, and where it lives by default. The format is
// autotune_cache.cpp's.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace infer::cudnn::detail {

// The file's bytes, at most kAutotuneCacheMaxBytes + 1 of them (parse() rejects a longer text);
// nullopt when there is no file. Throws std::runtime_error with the problem ("is a folder,
// expected a file", "too large: N bytes, the limit is 16 MiB", "cannot read: <system's reason>").
std::optional<std::string> read_cache_file(const std::filesystem::path& path);

// Replaces the file's content with `text`: a temporary file in the same folder, written, flushed to
// disk and moved over `path` in one step. On failure the temporary file is removed, an existing
// file is left as it was, and std::runtime_error says what failed.
void replace_cache_file(const std::filesystem::path& path, const std::string& text);

// How to give the cache a location when default_autotune_cache_path() finds none.
extern const char* const kCacheLocationHint;

}  // namespace infer::cudnn::detail
