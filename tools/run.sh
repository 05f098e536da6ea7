#!/usr/bin/env bash
# Quick start: builds infer if needed (see tools/build.sh) and runs it with the given arguments.
#   tools/run.sh samples/ankle-boot.png
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/tools/build.sh" >/dev/null
exec "${BUILD_DIR:-$root/build}/bin/infer" "$@"
