#!/usr/bin/env bash
# Runs bench/serve/bench_serve.py (its docstring says what it measures) with the environments it
# needs, made once outside the repository: perf_analyzer from the tritonclient wheel
# (tools/dev/serve-venv.sh; it needs Debian's libb64-0d and a libcudart.so.12, which
# tools/dev/fetch-cuda12.sh lays out), PyTorch with ONNX Runtime (tools/dev/ort-venv.sh) and KServe
# (tools/dev/kserve-venv.sh). Build first (tools/dev/build.sh).
#
#   bench/serve/bench_serve.sh            the table on stdout
#   bench/serve/bench_serve.sh --record   and appended to bench/RESULTS.md
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ "$(dpkg-query -W -f='${Status}' libb64-0d 2>/dev/null)" == "install ok installed" ]] ||
  { echo "bench-serve: perf_analyzer needs libb64-0d: apt-get install libb64-0d" >&2; exit 2; }
serve_py="$("$root/tools/dev/serve-venv.sh")"
cuda12="${INFER_CUDA12_ROOT:-${INFER_CACHE:-$HOME/.cache/infer}/cuda12}"
[[ -f "$cuda12/lib/libcudart.so.12" ]] || "$root/tools/dev/fetch-cuda12.sh" >&2
export LD_LIBRARY_PATH="$cuda12/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"   # perf_analyzer links libcudart.so.12
exec "$serve_py" "$root/bench/serve/bench_serve.py" --perf-analyzer "$(dirname "$serve_py")/perf_analyzer" \
  --torch-python "$("$root/tools/dev/ort-venv.sh")" --kserve-python "$("$root/tools/dev/kserve-venv.sh")" "$@"
