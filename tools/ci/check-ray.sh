#!/usr/bin/env bash
# Batch inference on Ray (examples/ray/classify_folder.py; docs/python.md, "Batch inference on a
# cluster") tested on a 3-node local cluster: tests/ray with pytest, in the Ray venv
# (tools/dev/ray-venv.sh), the infer package from the build tree. Called by .ci/run.
#
#   tools/ci/check-ray.sh [BUILD]      (default: build)
#
# Bounded: a limit on the whole run (INFER_RAY_LIMIT_S, default 600 s; its nodes are processes of
# this machine, on 127.0.0.1 only); the Ray processes a run leaves are stopped. Exit status:
# pytest's (0 only if every test passed; none skips), 124 past the limit.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
limit_s="${INFER_RAY_LIMIT_S:-600}"
if [[ ! -f "$build/python/infer/__init__.py" ]]; then
  echo "check-ray: $build has no Python package (configure with -DINFER_BUILD_PYTHON=ON)" >&2
  exit 1
fi
py="$("$root/tools/dev/ray-venv.sh")"
# Ray's files (sessions, sockets, logs) in a folder of this run's own, so that what a failed run
# leaves is found by it and stopped, not every Ray of this machine.
RAY_TMPDIR="$(mktemp -d /tmp/infer-ray.XXXXXX)"
export RAY_TMPDIR
start=$SECONDS
status=0
# SIGINT at the limit: pytest stops as on ^C and runs the fixtures' teardown (the cluster's
# shutdown); SIGKILL 15 s later if that hangs.
PYTHONPATH="$build/python" INFER_BUILD_DIR="$build" \
  timeout -s INT --kill-after=15 "$limit_s" "$py" -m pytest -q -p no:cacheprovider -W ignore::DeprecationWarning \
  "$root/tests/ray" || status=$?
((status == 124)) && echo "check-ray: past the ${limit_s} s limit" >&2
# Whatever of this run's Ray is still up (its command lines name RAY_TMPDIR): stopped.
pkill -KILL -f -- "$RAY_TMPDIR" 2>/dev/null || true
rm -rf "$RAY_TMPDIR"
echo "check-ray: tests/ray ran in $((SECONDS - start)) s (exit $status)" >&2
exit "$status"
