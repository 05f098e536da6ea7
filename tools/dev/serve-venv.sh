#!/usr/bin/env bash
# Prints the path of a Python with NVIDIA's tritonclient (HTTP and gRPC) from PyPI, making it once: a
# virtual environment (Debian's numpy visible through its site packages) under
# ${INFER_CACHE:-~/.cache/infer}/serve-venv. For the server's conformance and load tests
# (tests/serve/test_serve.py) and the serving benchmark (bench/serve/). Outside the repository; a
# second run needs no network.
set -euo pipefail
version=2.51.0
venv="${INFER_CACHE:-$HOME/.cache/infer}/serve-venv"
if ! "$venv/bin/python" -c "import tritonclient.http, tritonclient.grpc, sys; from importlib.metadata import version as v; sys.exit(v('tritonclient') != '$version')" 2>/dev/null; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "tritonclient[http,grpc]==$version" >&2
fi
echo "$venv/bin/python"
