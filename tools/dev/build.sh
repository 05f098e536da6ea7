#!/usr/bin/env bash
# Installs the dependencies (tools/dev/install-deps.sh) and builds infer into ${BUILD_DIR:-build}.
# The GPU backends: CUDA 13 when its toolkit and cuDNN are found (/usr/local/cuda by default); CUDA
# 12 from NVIDIA's CUDA 12 wheels, which tools/dev/fetch-cuda12.sh lays out in ~/.cache/infer/cuda12
# (about 25 MB of downloads, once). Without the network that backend is left out, with a warning;
# INFER_REQUIRE_CUDA12=1 (CI) makes that an error instead.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$root/build}"
"$root/tools/dev/install-deps.sh"
if ! "$root/tools/dev/fetch-cuda12.sh"; then
  if [[ "${INFER_REQUIRE_CUDA12:-0}" == 1 ]]; then
    echo "build: tools/dev/fetch-cuda12.sh failed and INFER_REQUIRE_CUDA12=1: no CUDA 12 backend" >&2
    exit 1
  fi
  echo "build: warning: tools/dev/fetch-cuda12.sh failed: the CUDA 12 GPU backend is not built" >&2
fi
if [[ -d /usr/local/cuda/bin && ":$PATH:" != *":/usr/local/cuda/bin:"* ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"   # lets CMake's FindCUDAToolkit see nvcc
fi
# Configure quietly (the whole log if it fails), but say whether the GPU backend is built.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# The flags are CMakePresets.json's "default" preset; BUILD_DIR and BUILD_TYPE override its folder and type.
args=(-S "$root" --preset default -B "$build")
# The Python package (python/) needs nanobind, from PyPI into tools/dev/py-venv.sh's venv (once).
# Without the network it is left out, with a warning; INFER_REQUIRE_PYTHON=1 (CI) makes that an error.
if py="$("$root/tools/dev/py-venv.sh")" && nanobind_dir="$("$py" -c 'import nanobind; print(nanobind.cmake_dir())')"; then
  args+=(-DINFER_BUILD_PYTHON=ON -DPython_EXECUTABLE="$py" -Dnanobind_DIR="$nanobind_dir")
elif [[ "${INFER_REQUIRE_PYTHON:-0}" == 1 ]]; then
  echo "build: tools/dev/py-venv.sh failed and INFER_REQUIRE_PYTHON=1: no Python package" >&2
  exit 1
else
  echo "build: warning: tools/dev/py-venv.sh failed: the Python package is not built" >&2
fi
if [[ -n "${BUILD_TYPE:-}" ]]; then args+=(-DCMAKE_BUILD_TYPE="$BUILD_TYPE"); fi
if ! cmake "${args[@]}" >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
grep -E '^-- GPU backend' "$log" >&2 || true
cmake --build "$build" -j "$(nproc)" >&2
