// Image input: read and decode any supported file (preprocess.h makes it the network's input).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "image/image.h"
#include "infer/preprocessing.h"

namespace infer {

// Image files larger than this are refused before they are read. The largest image within
// kMaxImagePixels, stored uncompressed (a 32-bit BMP), is 200 MB.
constexpr std::uint64_t kMaxImageFileBytes = 256ull << 20;

// Images with more pixels than this are refused before any pixel is decoded (the header is read
// first), so a small file that claims 100000x100000 pixels cannot make us allocate 40 GB.
constexpr long long kMaxImagePixels = 50'000'000;

// File extensions (lower case) that a directory argument picks up.
const std::vector<std::string>& image_extensions();

// Decodes PNG, JPEG (turned as its EXIF orientation says), BMP, Netpbm (PBM/PGM/PPM, raw and plain),
// GIF (first frame) or TGA, detected by content. channels is the number wanted (1 or 3). An alpha
// channel is composited over white (AlphaMode::White) or ignored (Drop: the colour as stored, as
// PIL's convert("RGB") does; a GIF's transparent pixels are then black, stb keeps no colour for
// them); grey for a one-channel model is taken after that. load_image reads regular files of at
// most kMaxImageFileBytes only (input_file.h). Throws InputError naming the file and the problem.
Image load_image(const std::filesystem::path& path, int channels, AlphaMode alpha = AlphaMode::White);
Image decode_image(const std::string& name, const unsigned char* bytes, std::size_t size, int channels,
                   AlphaMode alpha = AlphaMode::White);

}  // namespace infer
