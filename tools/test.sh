#!/usr/bin/env bash
# Quick start: builds infer and runs the whole test suite with CTest.
# GPU tests run when a GPU is usable and are reported as skipped, with the reason, otherwise.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
"$root/tools/build.sh"
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
