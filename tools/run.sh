#!/usr/bin/env bash
# Quick start: builds infer if needed (tools/dev/build.sh, quietly: its log is shown only if it fails)
# and runs it with the given arguments.
#   tools/run.sh samples/ankle-boot.png
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if [[ ! -x "${BUILD_DIR:-$root/build}/bin/infer" ]]; then
  echo "run.sh: building infer (tools/dev/build.sh; the first build takes a minute or two)" >&2
fi
if ! "$root/tools/dev/build.sh" >"$log" 2>&1; then
  cat "$log" >&2
  echo "run.sh: the build failed (log above)" >&2
  exit 1
fi
"${BUILD_DIR:-$root/build}/bin/infer" "$@"
