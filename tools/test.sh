#!/usr/bin/env bash
# Quick start: builds infer and runs the whole test suite with CTest, in two runs:
#   1. every test but the GPU label;
#   2. the GPU label (ctest -L gpu) with INFER_REQUIRE_GPU=1, so that none can skip for want of a GPU:
#      on the GPU when the NVIDIA driver lists one (nvidia-smi -L), else on the CPU stand-in for the
#      CUDA runtime, cuDNN and the driver (tests/standin, built with the GPU backend), selected by
#      LD_LIBRARY_PATH. The stand-in checks our host code, data flow, layouts, argument order and
#      graph logic; it is not a GPU, and its results are not GPU results (docs/gpu.md, "The CPU stand-in").
# Without the GPU backend (no CUDA toolkit or cuDNN at configure time) the GPU tests skip with the
# reason instead. Extra arguments go to both ctest runs (e.g. -R Pattern).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
"$root/tools/dev/build.sh"
cd "$build"
ctest --output-on-failure -j "$(nproc)" -LE gpu "$@"

standin="$build/standin/lib"
if [[ "$(nvidia-smi -L 2>/dev/null)" == GPU\ * ]]; then
  echo "test.sh: GPU tests on this machine's GPU" >&2
  INFER_REQUIRE_GPU=1 ctest --output-on-failure -j 1 -L gpu "$@"
elif [[ -f "$standin/libcudnn.so.9" ]]; then
  echo "test.sh: no GPU here: GPU tests on the CPU stand-in ($standin; not a GPU)" >&2
  LD_LIBRARY_PATH="$standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" INFER_REQUIRE_GPU=1 \
    ctest --output-on-failure -j "$(nproc)" -L gpu "$@"
else
  echo "test.sh: no GPU and no GPU backend built: the GPU tests skip" >&2
  ctest --output-on-failure -j "$(nproc)" -L gpu "$@"
fi
