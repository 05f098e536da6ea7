# FindCUDNN: the cuDNN headers and library.
# Looks in CUDNN_ROOT, CUDA_PATH, the CUDA toolkit found by FindCUDAToolkit and /usr/local/cuda. On
# Windows also in the cuDNN installer's layout, per CUDA version: <root>\include\13.0\cudnn.h,
# <root>\lib\13.0\x64\cudnn.lib (set CUDNN_ROOT to C:\Program Files\NVIDIA\CUDNN\v9.19), and in
# lib\x64, the CUDA toolkit's layout where the archive's files were copied into it.
# Defines CUDNN::cudnn, CUDNN_VERSION, CUDNN_INCLUDE_DIR, CUDNN_LIBRARY.
set(_cudnn_hints ${CUDNN_ROOT} $ENV{CUDNN_ROOT} $ENV{CUDA_PATH} /usr/local/cuda)
if(CUDAToolkit_LIBRARY_ROOT)
  list(PREPEND _cudnn_hints ${CUDAToolkit_LIBRARY_ROOT})
endif()
# The installer names its folders after the CUDA release cuDNN was built for (13.0 serves 13.x).
set(_cuda_mm "${CUDAToolkit_VERSION_MAJOR}.${CUDAToolkit_VERSION_MINOR}")
set(_cuda_m0 "${CUDAToolkit_VERSION_MAJOR}.0")
find_path(CUDNN_INCLUDE_DIR NAMES cudnn_version.h cudnn.h
          HINTS ${_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include include/${_cuda_mm} include/${_cuda_m0})
find_library(CUDNN_LIBRARY NAMES cudnn HINTS ${_cudnn_hints}
             PATH_SUFFIXES lib64 lib lib/x64 lib/${_cuda_mm}/x64 lib/${_cuda_m0}/x64)

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
  set_target_properties(CUDNN::cudnn PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
  if(WIN32)   # cudnn.lib is the import library of cudnn64_9.dll, found at run time on PATH
    set_target_properties(CUDNN::cudnn PROPERTIES IMPORTED_IMPLIB "${CUDNN_LIBRARY}")
  else()
    set_target_properties(CUDNN::cudnn PROPERTIES IMPORTED_LOCATION "${CUDNN_LIBRARY}")
  endif()
endif()
mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)
