// The one translation unit that compiles stb's implementation (third-party, warnings off in CMake).
// Decoders for the formats infer documents; the rest of stb_image is left out, and so is its PNM
// reader: Netpbm files are read by pnm.cpp.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_GIF
#define STBI_ONLY_TGA
#define STBI_NO_STDIO  // images are read by load_image.cpp, which reports I/O errors itself
// load_image.cpp refuses images over kMaxImagePixels from their header; this bounds each side too.
#define STBI_MAX_DIMENSIONS (1 << 16)
#include "stb_image_fixed.h"  // the system stb_image.h plus later stb fixes (stb_patch.cmake)

#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb_image_resize.h>
