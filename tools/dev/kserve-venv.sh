#!/usr/bin/env bash
# Prints the path of a Python with KServe's model server and ONNX Runtime from PyPI, making it once:
# a virtual environment under ${INFER_CACHE:-~/.cache/infer}/kserve-venv (Debian's numpy visible
# through its site packages). The peer of infer serve in bench/serve/bench_serve.py. Outside the
# repository; a second run needs no network.
set -euo pipefail
kserve=0.21.0
ort=1.23.2
venv="${INFER_CACHE:-$HOME/.cache/infer}/kserve-venv"
if ! "$venv/bin/python" -c "import sys, onnxruntime; from importlib.metadata import version as v; sys.exit(v('kserve') != '$kserve' or onnxruntime.__version__ != '$ort')" 2>/dev/null; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "kserve==$kserve" "onnxruntime==$ort" >&2
fi
echo "$venv/bin/python"
