# FindCUDNN: the cuDNN headers and library.
# Looks in CUDNN_ROOT, CUDA_PATH, the CUDA toolkit found by FindCUDAToolkit and /usr/local/cuda.
# Defines CUDNN::cudnn, CUDNN_VERSION, CUDNN_INCLUDE_DIR, CUDNN_LIBRARY.
set(_cudnn_hints ${CUDNN_ROOT} $ENV{CUDNN_ROOT} $ENV{CUDA_PATH} /usr/local/cuda)
if(CUDAToolkit_LIBRARY_ROOT)
  list(PREPEND _cudnn_hints ${CUDAToolkit_LIBRARY_ROOT})
endif()
find_path(CUDNN_INCLUDE_DIR NAMES cudnn_version.h cudnn.h
          HINTS ${_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
find_library(CUDNN_LIBRARY NAMES cudnn HINTS ${_cudnn_hints} PATH_SUFFIXES lib64 lib)

if(CUDNN_INCLUDE_DIR)
  set(_cudnn_header "${CUDNN_INCLUDE_DIR}/cudnn_version.h")
  if(NOT EXISTS "${_cudnn_header}")
    set(_cudnn_header "${CUDNN_INCLUDE_DIR}/cudnn.h")   # cuDNN 7 kept the version in cudnn.h
  endif()
  file(STRINGS "${_cudnn_header}" _cudnn_defs REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
  foreach(_part MAJOR MINOR PATCHLEVEL)
    string(REGEX MATCH "CUDNN_${_part} +([0-9]+)" _m "${_cudnn_defs}")
    set(CUDNN_VERSION_${_part} "${CMAKE_MATCH_1}")
  endforeach()
  set(CUDNN_VERSION "${CUDNN_VERSION_MAJOR}.${CUDNN_VERSION_MINOR}.${CUDNN_VERSION_PATCHLEVEL}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNN REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR
                                  VERSION_VAR CUDNN_VERSION)
if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  add_library(CUDNN::cudnn SHARED IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES IMPORTED_LOCATION "${CUDNN_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
endif()
mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)
