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
      inputs.push_back({arg, ""});  // a file: decoded by content, whatever its extension
      continue;
    }
    std::vector<std::string> found;
    for (fs::directory_iterator it(arg_path(arg), ec), end; !ec && it != end; it.increment(ec)) {
      // Anything with an image's name but a folder: a FIFO, a device or a broken link named x.png is
      // reported (the reader refuses it and says what it is) rather than silently passed over.
      std::error_code type_ec;
      if (!it->is_directory(type_ec) && has_image_extension(it->path())) found.push_back(it->path().u8string());
    }
    if (ec) {
      inputs.push_back({arg, "cannot list directory: " + ec.message()});
      continue;
    }
    if (found.empty()) {
      inputs.push_back(
          {arg, "directory contains no images (looked for .png .jpg .jpeg .bmp .pgm .ppm .pnm .gif .tga)"});
      continue;
    }
    std::sort(found.begin(), found.end());
    for (std::string& f : found) inputs.push_back({std::move(f), ""});
  }
  return inputs;
}

}  // namespace infer::app
