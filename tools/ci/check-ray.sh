#!/usr/bin/env bash
# Batch inference on Ray (examples/ray/classify_folder.py; docs/python.md, "Batch inference on a
# cluster") tested on a 3-node local cluster: tests/ray with pytest, in the Ray venv
# (tools/dev/ray-venv.sh), the infer package from the build tree. Called by .ci/run.
#
#   tools/ci/check-ray.sh [BUILD]      (default: build)
#
# Bounded: a limit on the whole run (its nodes are processes of this machine, on 127.0.0.1 only);
# where it is hit, or the run fails, the Ray processes it left are stopped. Exit status: pytest's
# (0 only if every test passed; none skips), 124 past the limit.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
limit_s="${INFER_RAY_LIMIT_S:-600}"
if [[ ! -f "$build/python/infer/__init__.py" ]]; then
  echo "check-ray: $build has no Python package (configure with -DINFER_BUILD_PYTHON=ON)" >&2
  exit 1
fi
py="$("$root/tools/dev/ray-venv.sh")"
start=$SECONDS
status=0
PYTHONPATH="$build/python" INFER_BUILD_DIR="$build" \
  timeout --kill-after=15 "$limit_s" "$py" -m pytest -q -p no:cacheprovider -W ignore::DeprecationWarning \
  "$root/tests/ray" || status=$?
if ((status != 0)); then
  "$(dirname "$py")/ray" stop --force >/dev/null 2>&1 || true
  ((status == 124)) && echo "check-ray: past the ${limit_s} s limit" >&2
fi
echo "check-ray: tests/ray ran in $((SECONDS - start)) s (exit $status)" >&2
exit "$status"
