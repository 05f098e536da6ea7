#include "app/inputs.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "app/options.h"
#include "infer/classifier.h"

namespace infer::app {
namespace {

namespace fs = std::filesystem;

bool has_image_extension(const fs::path& p) {
  std::string ext = p.extension().u8string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  const auto& known = image_file_extensions();
  return std::find(known.begin(), known.end(), ext) != known.end();
}

}  // namespace

std::vector<Input> expand_inputs(const std::vector<std::string>& args) {
  std::vector<Input> inputs;
  for (const std::string& arg : args) {
    std::error_code ec;
    if (!fs::is_directory(arg_path(arg), ec)) {
      inputs.push_back({arg, "", arg});  // a file: decoded by content, whatever its extension
      continue;
    }
    std::vector<std::pair<std::string, std::string>> found;  // path, name
    for (fs::directory_iterator it(arg_path(arg), ec), end; !ec && it != end; it.increment(ec)) {
      // Anything with an image's name but a folder: a FIFO, a device or a broken link named x.png is
      // reported (the reader refuses it and says what it is) rather than silently passed over.
      std::error_code type_ec;
      if (!it->is_directory(type_ec) && has_image_extension(it->path())) {
        found.emplace_back(it->path().u8string(), it->path().filename().u8string());
      }
    }
    if (ec) {
      inputs.push_back({arg, "cannot list directory: " + ec.message(), arg});
      continue;
    }
    if (found.empty()) {
      inputs.push_back(
          {arg, "directory contains no images (looked for .png .jpg .jpeg .bmp .pgm .ppm .pnm .gif .tga)", arg});
      continue;
    }
    std::sort(found.begin(), found.end());
    for (auto& [path, name] : found) inputs.push_back({std::move(path), "", std::move(name)});
  }
  return inputs;
}

std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t h = 14695981039346656037ull;  // the FNV offset basis
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;  // the FNV prime
  }
  return h;
}

std::vector<Input> select_shard(std::vector<Input> inputs, int index, int count) {
  if (count <= 1) return inputs;
  std::vector<Input> mine;
  for (Input& in : inputs) {
    if (!in.error.empty() ||
        fnv1a64(in.shard_key) % static_cast<std::uint64_t>(count) == static_cast<std::uint64_t>(index)) {
      mine.push_back(std::move(in));
    }
  }
  return mine;
}

}  // namespace infer::app
