// stb_image_write's implementation, for tests that write PNG files (third-party: warnings off).
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
