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
  put_be32(png, static_cast<std::uint32_t>(
                    crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
}

// A PNG from its IHDR fields and the image data before compression (filter bytes included).
inline std::string png_from_raw(std::uint32_t width, std::uint32_t height, int bit_depth, int colour_type,
                                bool interlaced, const std::string& raw, const std::string& palette = "") {
  std::string png("\x89PNG\r\n\x1a\n", 8);
  std::string ihdr;
  put_be32(ihdr, width);
  put_be32(ihdr, height);
  ihdr += static_cast<char>(bit_depth);
  ihdr += static_cast<char>(colour_type);
  ihdr += std::string(2, '\0');  // deflate, adaptive filtering
  ihdr += static_cast<char>(interlaced ? 1 : 0);
  put_chunk(png, "IHDR", ihdr);
  if (!palette.empty()) put_chunk(png, "PLTE", palette);
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::string z(size, '\0');
  compress(reinterpret_cast<Bytef*>(z.data()), &size, reinterpret_cast<const Bytef*>(raw.data()),
           static_cast<uLong>(raw.size()));
  z.resize(size);
  put_chunk(png, "IDAT", z);
  put_chunk(png, "IEND", "");
  return png;
}

// colour_type: 0 grey, 2 RGB, 3 palette, 4 grey+alpha, 6 RGBA (PNG spec, section 11.2.2).
// `rows` are the raw scanlines without filter bytes; `palette` is RGB triples for type 3.
inline std::string encode_png(std::uint32_t width, std::uint32_t height, int bit_depth, int colour_type,
                              const std::vector<std::string>& rows, const std::string& palette = "") {
  std::string raw;
  for (const std::string& row : rows) raw += '\0' + row;  // filter type 0 (none)
  return png_from_raw(width, height, bit_depth, colour_type, false, raw, palette);
}

// The same picture interlaced (Adam7, PNG spec 8.2): seven reduced images, each row with its own
// filter byte. Whole-byte pixels only (bytes_per_pixel >= 1).
inline std::string encode_png_interlaced(std::uint32_t width, std::uint32_t height, int bit_depth, int colour_type,
                                         const std::vector<std::string>& rows, std::size_t bytes_per_pixel) {
  // Each pass: first column, first row, column step, row step.
  const std::uint32_t passes[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                      {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
  std::string raw;
  for (const auto& p : passes) {
    if (p[0] >= width) continue;  // an empty pass has no rows at all
    for (std::uint32_t y = p[1]; y < height; y += p[3]) {
      raw += '\0';
      for (std::uint32_t x = p[0]; x < width; x += p[2]) raw += rows[y].substr(x * bytes_per_pixel, bytes_per_pixel);
    }
  }
  return png_from_raw(width, height, bit_depth, colour_type, true, raw);
}

// A decompression bomb: a width x height 8-bit grey PNG whose image data inflates to `inflated`
// bytes of zeros (a valid zlib stream), about a thousandth of that in the file. Made without
// compressing all of it: a block of 1 MiB of zeros, flushed so that it stands alone
// (Z_FULL_FLUSH), is repeated; the Adler-32 of the whole is combined from the block's.
inline std::string png_bomb(std::uint32_t width, std::uint32_t height, std::uint64_t inflated) {
  const std::uint64_t block = 1u << 20;
  const std::string zeros(block, '\0');
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY);  // raw deflate: the wrapper is written here
  std::string out(block, '\0');
  auto run = [&](const std::string& in, int flush) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    deflate(&z, flush);
    return out.substr(0, out.size() - z.avail_out);
  };
  const std::string flushed = run(zeros, Z_FULL_FLUSH);
  const std::string last = run("", Z_FINISH);
  deflateEnd(&z);
  const uLong block_adler =
      adler32(adler32(0, nullptr, 0), reinterpret_cast<const Bytef*>(zeros.data()), static_cast<uInt>(block));
  std::string stream("\x78\xda", 2);
  uLong adler = adler32(0, nullptr, 0);
  for (std::uint64_t done = 0; done < inflated; done += block) {
    stream += flushed;
    adler = adler32_combine(adler, block_adler, static_cast<z_off_t>(block));
  }
  stream += last;
  put_be32(stream, static_cast<std::uint32_t>(adler));

  std::string png("\x89PNG\r\n\x1a\n", 8);
  std::string ihdr;
  put_be32(ihdr, width);
  put_be32(ihdr, height);
  ihdr += std::string("\x08\0\0\0\0", 5);  // 8-bit grey, not interlaced
  put_chunk(png, "IHDR", ihdr);
  for (std::size_t at = 0; at < stream.size(); at += 1u << 16) put_chunk(png, "IDAT", stream.substr(at, 1u << 16));
  put_chunk(png, "IEND", "");
  return png;
}

}  // namespace infer::test
