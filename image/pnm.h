// Netpbm images (PBM, PGM, PPM; plain P1-P3 and raw P4-P6), decoded from an in-memory file.
//
// The format follows the Netpbm specification (netpbm.sourceforge.net/doc/pbm.html, pgm.html,
// ppm.html): a two-byte magic number, then width, height and (not for PBM) maxval as decimal
// numbers separated by whitespace, '#' comments to the end of the line allowed anywhere in the
// header (a comment separates tokens). Plain rasters are decimal samples separated by whitespace
// (plain PBM: '0'/'1' characters, separators optional); comments between them are skipped too, as
// the original format definition allowed them anywhere. Raw rasters follow exactly one whitespace
// byte after the last header number; samples are one byte when maxval < 256, else two bytes, most
// significant first. PBM: 1 is black, 0 white; P4 rows are padded to a whole byte. Only the first
// image of a multi-image file is read; bytes after it are ignored.
//
// Every read is bounded by the `size` given; no function here reads outside [bytes, bytes + size).
// Thread-safe: no shared state.
#pragma once

#include <cstddef>
#include <string>

#include "image/image.h"

namespace infer {

enum class PnmKind { Bitmap, Greymap, Pixmap };  // PBM, PGM, PPM

// What the header says, checked: 1 <= width, height <= INT_MAX, 1 <= maxval <= 65535 (1 for PBM).
struct PnmHeader {
  PnmKind kind = PnmKind::Greymap;
  bool plain = false;  // P1-P3: samples written as decimal text
  int width = 0;
  int height = 0;
  int maxval = 1;
  int file_channels = 1;          // 3 for PPM, else 1
  std::size_t raster_offset = 0;  // raw: first raster byte; plain: the byte after the last header number
};

// True when the data starts with a Netpbm magic number, "P1" to "P6", followed by whitespace,
// '#' or the end of the data (so that a text file starting "P1ease" is not taken for one).
bool is_pnm(const unsigned char* bytes, std::size_t size);

// Reads and checks the header only. Throws InputError(name, problem) for a header that is
// malformed, cut short, or gives a size or maxval out of range; the problem names the format
// ("PGM maxval 0 is invalid (must be 1 to 65535)").
PnmHeader read_pnm_header(const std::string& name, const unsigned char* bytes, std::size_t size);

// The most pixels decode_pnm accepts as max_pixels: keeps every byte count it computes (pixels x
// 6 bytes) far from overflow.
constexpr long long kMaxPnmPixelLimit = 1LL << 40;

// Decodes the first image. channels is the number wanted: 1 (grey; colour converted with BT.601
// luma 0.299 R + 0.587 G + 0.114 B) or 3 (RGB; grey replicated). Pixels are sample / maxval in
// [0,1], interleaved, rows top to bottom; PBM black is 0, white 1.
//
// Refused with InputError(name, problem), before any pixel memory is allocated:
//  - everything read_pnm_header refuses;
//  - width x height over max_pixels ("PGM image is 9000x9000 pixels, over the limit of ...");
//  - a file too short for the header's size ("PPM data truncated: the header's 28x28 pixels need
//    2352 bytes, the file has 100"). Raw formats need exactly their raster bytes; plain ones at
//    least their shortest possible text: PBM one byte per pixel plus a separator after the height,
//    PGM/PPM two bytes per sample (a separator and a digit).
// Refused while decoding: a sample over maxval (with its pixel), a plain raster with a byte that is
// not a digit, whitespace or comment, or one that ends early.
// Throws std::invalid_argument for channels other than 1 or 3, or max_pixels outside
// 1..kMaxPnmPixelLimit.
Image decode_pnm(const std::string& name, const unsigned char* bytes, std::size_t size, int channels,
                 long long max_pixels);

}  // namespace infer
