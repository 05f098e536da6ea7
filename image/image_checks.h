// What an image file's header promises, checked against the file before a decoder allocates
// anything. A small file can claim a large picture: a PNG whose compressed data inflates to a
// gigabyte (a decompression bomb), a TGA or BMP cut short that a decoder would finish with zeros.
// These checks bound the memory a decoder can use by what the header's dimensions need.
#pragma once

#include <cstddef>
#include <string>

namespace infer {

// The formats infer decodes, told by their first bytes. TGA has no signature: a file that is none
// of the others is taken for one if the decoder accepts it.
enum class ImageFormat { Png, Jpeg, Bmp, Gif, Pnm, Other };
ImageFormat sniff_image_format(const unsigned char* bytes, std::size_t size);

// The most pixels a file of this format can describe per byte, from how its data is coded; a file
// claiming more is truncated or forged, and is refused before the decoder allocates the picture:
//  - JPEG: every 8x8 block of every scan costs at least one bit (a DC difference of 0, coded in one
//    bit; progressive AC scans can skip blocks, DC scans cannot): 64 pixels per bit, 512 per byte.
//  - GIF: an LZW code is at most 12 bits and stands for at most 4096 pixels: 2,731 per byte.
//  - PNG: a 1-bit picture is 8 pixels per byte before deflate, whose limit is 1032:1 (8,256); the
//    image data is also inflated and checked against the dimensions (check_png).
//  - TGA, BMP, Netpbm: their data is checked exactly (check_tga, check_bmp, pnm.h); 16,384 bounds
//    anything else.
long long max_pixels_per_byte(ImageFormat format);

// PNG: the IHDR dimensions against max_pixels, then the image data inflated (with zlib, into a
// fixed scratch buffer, so nothing grows) and refused if it inflates to more than the header's
// dimensions need. Throws InputError(name, ...).
void check_png(const std::string& name, const unsigned char* bytes, std::size_t size, long long max_pixels);

// TGA: the pixel data (uncompressed, or walked packet by packet when run-length encoded) must hold
// the header's width x height pixels. Throws InputError(name, "... truncated ...").
void check_tga(const std::string& name, const unsigned char* bytes, std::size_t size);

// BMP: the rows the header's dimensions need must be in the file. Returns `height` (the decoder's
// header reading) made positive: a negative height means the rows are stored top-down. Throws InputError(name, ...).
int check_bmp(const std::string& name, const unsigned char* bytes, std::size_t size, int height);

// For a JPEG the decoder refused: the variant it is ("arithmetic-coded", "12-bit", "lossless",
// "hierarchical") when its frame header says it is one that is not supported, or "" when it is a
// baseline or progressive 8-bit JPEG (then the decoder's own reason is the one to give).
std::string unsupported_jpeg_variant(const unsigned char* bytes, std::size_t size);

}  // namespace infer
