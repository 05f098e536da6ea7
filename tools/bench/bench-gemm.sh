#!/usr/bin/env bash
# The plain kernels' sgemm: OpenBLAS (the Linux build) against the portable kernel (the Windows
# build's), both on this machine in one run, one thread each. Numbers only; no pass or fail.
#
#   tools/bench/bench-gemm.sh [BUILD_DIR]     (default: build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
cmake --build "$build" --target infer-gemm-bench infer-gemm-bench-portable >/dev/null
"$build/bin/infer-gemm-bench"
echo
"$build/bin/infer-gemm-bench-portable"
