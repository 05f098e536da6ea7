# FindStb: the header-only stb libraries (Debian: libstb-dev puts them in /usr/include/stb).
# Defines Stb::Stb (headers only; the implementation is compiled in image/stb_impl.cpp).
find_path(Stb_INCLUDE_DIR NAMES stb_image.h PATH_SUFFIXES stb)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Stb REQUIRED_VARS Stb_INCLUDE_DIR)
if(Stb_FOUND AND NOT TARGET Stb::Stb)
  add_library(Stb::Stb INTERFACE IMPORTED)
  target_include_directories(Stb::Stb SYSTEM INTERFACE ${Stb_INCLUDE_DIR})
endif()
mark_as_advanced(Stb_INCLUDE_DIR)
