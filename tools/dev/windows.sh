#!/usr/bin/env bash
# The Windows build, cross-compiled with mingw-w64 and tested under wine: what .ci/run's
# "windows (wine)" stage runs.
#
#   tools/dev/windows.sh          install what it needs, configure (preset windows: build-windows/),
#                             build, run every test under wine, print how many ran
#
# Wine's prefix is made on first use outside the repository (tools/dev/wine-run.sh); its server is kept
# up while the tests run and ended afterwards. Exit status: ctest's.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
jobs="${JOBS:-$(nproc)}"

tools/dev/install-deps.sh --windows
cmake --preset windows >/dev/null
cmake --build --preset windows -j "$jobs"

tools/dev/wine-run.sh --server-start
trap 'tools/dev/wine-run.sh --server-stop 2>/dev/null || true' EXIT
rc=0
ctest --preset windows -j "$jobs" 2>&1 | tee build-windows/ctest.log || rc=$?
summary="$(grep -E '^[0-9]+% tests passed' build-windows/ctest.log || true)"
echo "windows (wine): ${summary:-no ctest summary}" >&2
exit "$rc"
