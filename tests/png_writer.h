// A minimal PNG encoder for tests: writes the exact variants the decoder must cope with (16-bit,
// palette, grey+alpha, RGBA) and headers that lie (huge dimensions), which stb_image_write cannot.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace infer::test {

inline void put_be32(std::string& s, std::uint32_t v) {
  for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>(v >> (8 * i) & 0xff));
}

inline void put_chunk(std::string& png, const char* type, const std::string& data) {
  put_be32(png, static_cast<std::uint32_t>(data.size()));
  const std::string body = std::string(type, 4) + data;
  png += body;
  put_be32(png, static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()),
                                                 static_cast<uInt>(body.size()))));
}

// colour_type: 0 grey, 2 RGB, 3 palette, 4 grey+alpha, 6 RGBA (PNG spec, section 11.2.2).
// `rows` are the raw scanlines without filter bytes; `palette` is RGB triples for type 3.
inline std::string encode_png(std::uint32_t width, std::uint32_t height, int bit_depth, int colour_type,
                              const std::vector<std::string>& rows, const std::string& palette = "") {
  std::string png("\x89PNG\r\n\x1a\n", 8);
  std::string ihdr;
  put_be32(ihdr, width);
  put_be32(ihdr, height);
  ihdr += static_cast<char>(bit_depth);
  ihdr += static_cast<char>(colour_type);
  ihdr += std::string(3, '\0');  // deflate, adaptive filtering, no interlace
  put_chunk(png, "IHDR", ihdr);
  if (!palette.empty()) put_chunk(png, "PLTE", palette);
  std::string raw;
  for (const std::string& row : rows) raw += '\0' + row;  // filter type 0 (none)
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::string z(size, '\0');
  compress(reinterpret_cast<Bytef*>(z.data()), &size, reinterpret_cast<const Bytef*>(raw.data()),
           static_cast<uLong>(raw.size()));
  z.resize(size);
  put_chunk(png, "IDAT", z);
  put_chunk(png, "IEND", "");
  return png;
}

}  // namespace infer::test
