// The EXIF orientation of a JPEG (how the camera was held), and turning a decoded image upright.
//
// Orientation values are those of TIFF 6.0 tag 274 (0x0112), which EXIF uses unchanged. Each says
// where the stored image's first row and first column belong on the display:
//   1  row 0 top,    column 0 left     identity
//   2  row 0 top,    column 0 right    mirror horizontally
//   3  row 0 bottom, column 0 right    rotate 180
//   4  row 0 bottom, column 0 left     mirror vertically
//   5  row 0 left,   column 0 top      transpose (mirror about the main diagonal)
//   6  row 0 right,  column 0 top      rotate 90 degrees clockwise
//   7  row 0 right,  column 0 bottom   transverse (mirror about the anti-diagonal)
//   8  row 0 left,   column 0 bottom   rotate 90 degrees counter-clockwise
// Thread-safe: no shared state.
#pragma once

#include <cstddef>

#include "image/image.h"

namespace infer {

// The orientation (1 to 8) in the first APP1 "Exif\0\0" segment of a JPEG, read from IFD0 of its
// TIFF structure (byte order II or MM). Markers are walked from SOI up to SOS (or EOI); nothing
// after SOS is read. Returns 1 ("as stored") when the data is not a JPEG, has no such segment or
// tag, or when anything is malformed: a segment or IFD running past its end, an offset out of
// range, a tag of the wrong type or count, a value outside 1..8. Reads only [bytes, bytes + size)
// and, within the Exif segment, only the segment's own bytes; follows no IFD links, so it cannot
// loop. Never throws.
int jpeg_orientation(const unsigned char* bytes, std::size_t size);

// The image as it should be displayed for `orientation`: pixels moved as the table above says.
// For 5 to 8 width and height swap. Channels and pixel values are unchanged. Throws
// std::invalid_argument for an orientation outside 1..8 or pixels that do not match the size.
Image apply_orientation(Image img, int orientation);

}  // namespace infer
