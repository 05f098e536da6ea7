#!/usr/bin/env bash
# Prints the path of a Python that has Debian's python3-torch / python3-torchvision / numpy and
# ONNX Runtime from PyPI, making it once: a virtual environment (with Debian's site packages
# visible) under ${INFER_CACHE:-~/.cache/infer}/ort-venv, with the pinned onnxruntime wheel installed
# without its dependencies (numpy comes from Debian; the inference session needs nothing else).
# Outside the repository; a second run needs no network. For tools/train/torchvision_conformance.py.
set -euo pipefail
version=1.23.2
venv="${INFER_CACHE:-$HOME/.cache/infer}/ort-venv"
if ! "$venv/bin/python" -c "import onnxruntime, sys; sys.exit(onnxruntime.__version__ != '$version')" 2>/dev/null; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv" >&2
  "$venv/bin/pip" install -q --no-deps --disable-pip-version-check "onnxruntime==$version" >&2
fi
echo "$venv/bin/python"
