#!/usr/bin/env bash
# Benchmarks: builds infer (tools/dev/build.sh), makes a Python environment with Debian's PyTorch and
# ONNX Runtime from PyPI (build/bench-venv, once), and runs tools/bench/bench_peers.py with the given
# arguments (e.g. --threads 2 --batch 1,64,1024 --record).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$root/build}"
"$root/tools/dev/install-deps.sh" --train
"$root/tools/dev/build.sh" >/dev/null
venv="$build/bench-venv"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import onnxruntime, onnx" 2>/dev/null; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  # numpy<2: Debian's PyTorch 1.13 is built against numpy 1.x (keeps Debian's numpy).
  "$venv/bin/pip" install -q "numpy<2" onnxruntime onnx
fi
exec "$venv/bin/python" "$root/tools/bench/bench_peers.py" --build "$build" "$@"
