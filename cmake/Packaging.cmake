# CPack: `cpack --config build/CPackConfig.cmake` (tools/release/package.sh) makes
#   infer_<version>_amd64.deb      the command, libinfer.so and the shipped model (component runtime):
#                                  the CPU path, installable on any Debian-like system;
#   infer-dev_<version>_amd64.deb  the headers and the CMake package (component dev);
#   infer-gpu-cu13_<version>_amd64.deb, infer-gpu-cu12_...  the cuDNN backend modules (components
#                                  gpu_cu13, gpu_cu12), each only when it is built;
#   infer-<version>-Linux.tar.gz   everything in one relocatable tree (the binaries find each other
#                                  relative to themselves, platform/install_layout.h).
# The .debs' dependencies on Debian's libraries come from dpkg-shlibdeps, on the files themselves.
# infer-gpu depends on no NVIDIA package: the CUDA 13 runtime and cuDNN 9 come from NVIDIA's
# packages, a tarball or the pip wheels, and `infer --check` says whether the ones found fit.
set(CPACK_PACKAGE_NAME infer)
set(CPACK_PACKAGE_VENDOR "the infer project")
set(CPACK_PACKAGE_CONTACT "infer maintainers <infer@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Image classification with CNNs on NVIDIA GPUs (cuDNN) or the CPU")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_GENERATOR DEB TGZ)
set(CPACK_STRIP_FILES ON)

set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF)  # one tarball with every component
set(CPACK_DEB_COMPONENT_INSTALL ON)       # one .deb per component
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)      # the .debs install under /usr (their default prefix)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME infer)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "Image classification with CNNs, and a check of the NVIDIA environment
 infer classifies images with a CNN model (its own format or ONNX) on the CPU, and on an NVIDIA GPU
 through cuDNN when the infer-gpu package and NVIDIA's libraries are installed. `infer --check`
 compares the machine with the VERSIONS.toml it was validated on. Includes libinfer.so, the C++ API.")
# libinfer.so.0.1's shlibs file and the ldconfig trigger, so that a package built against it gets
# its dependency from dpkg-shlibdeps as on any Debian library.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY "=")
# OpenBLAS is opened at run time (backends/cpu/gemm/gemm_openblas.cpp), so dpkg-shlibdeps, which reads
# the files' NEEDED entries, does not see it: named here, as its shlibs file names it.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "libopenblas0")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "infer-gpu-cu13 (= ${PROJECT_VERSION}) | infer-gpu-cu12 (= ${PROJECT_VERSION}), infer-dev (= ${PROJECT_VERSION})")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME infer-dev)
set(CPACK_DEBIAN_DEV_DESCRIPTION "infer's C++ API: headers and the CMake package
 <infer/...> headers and find_package(infer), which gives the target infer::infer.")
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "infer (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)  # headers and CMake files only

# One GPU package per CUDA major (backends/cudnn/CMakeLists.txt): install the one the machine's
# driver runs, or both, and infer picks at run time (docs/gpu.md, "Two backends").
foreach(_major 13 12)
  string(TOUPPER "gpu_cu${_major}" _c)
  set(CPACK_DEBIAN_${_c}_PACKAGE_NAME infer-gpu-cu${_major})
  set(CPACK_DEBIAN_${_c}_DESCRIPTION "infer's cuDNN backend for CUDA ${_major}
 The module infer and libinfer.so load to run on an NVIDIA GPU with a driver that supports CUDA
 ${_major}. It needs the NVIDIA driver, the CUDA ${_major} runtime and cuDNN 9 for CUDA ${_major}, from any
 source (NVIDIA's packages, a tarball, pip wheels): infer --check says whether the ones found fit.")
  set(CPACK_DEBIAN_${_c}_PACKAGE_DEPENDS "infer (= ${PROJECT_VERSION})")
  # dpkg-shlibdeps knows no package for libcudart.so.N and libcudnn.so.9 (they are not Debian's).
  set(CPACK_DEBIAN_${_c}_PACKAGE_SHLIBDEPS OFF)
endforeach()

set(CPACK_COMPONENTS_ALL runtime dev)
foreach(_major 13 12)
  if(TARGET infer_cudnn_cu${_major})
    list(APPEND CPACK_COMPONENTS_ALL gpu_cu${_major})
  endif()
endforeach()
include(CPack)
