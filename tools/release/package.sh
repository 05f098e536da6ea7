#!/usr/bin/env bash
# Builds the packages (cmake/Packaging.cmake) from CMakePresets.json's "package" preset: Release,
# installed under /usr with GNUInstallDirs' layout (libdir lib/x86_64-linux-gnu on Debian), no tests.
#   tools/release/package.sh        -> build-package/packages/: infer, infer-dev, infer-gpu-cu13, infer-gpu-cu12 .debs and the .tar.gz
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
"$root/tools/dev/install-deps.sh"
if [[ -d /usr/local/cuda/bin && ":$PATH:" != *":/usr/local/cuda/bin:"* ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"   # lets CMake's FindCUDAToolkit see nvcc
fi
cmake --preset package >/dev/null
cmake --build --preset package -j "$(nproc)" >&2
rm -rf build-package/packages
(cd build-package && cpack >&2)
ls -l build-package/packages/*.deb build-package/packages/*.tar.gz | awk '{print $5 " bytes  " $9}'
