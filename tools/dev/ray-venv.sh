#!/usr/bin/env bash
# Prints the path of a Python with Ray (Ray Data) for batch inference on a cluster (issue 35:
# examples/ray/, tests/ray/, tools/bench/bench_ray.py), making it once: a virtual environment of its
# own (Debian's site packages not visible: Ray Data wants newer numpy, pyarrow and pandas than
# Debian's) under ${INFER_CACHE:-~/.cache/infer}/ray-venv, with the pins below from PyPI. The infer
# package comes from the build tree (PYTHONPATH=<build>/python): its module needs only the
# interpreter, Debian's python3, which the venv shares. Outside the repository; a second run needs
# no network.
set -euo pipefail
pins=("ray[data]==2.60.0" numpy==2.4.6 pyarrow==26.0.1 pandas==3.1.1 pillow==13.0.0 pytest==9.2.0)
venv="${INFER_CACHE:-$HOME/.cache/infer}/ray-venv"
stamp="$venv/infer-pins"
if [[ ! -x "$venv/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "${pins[*]}" ]]; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "${pins[@]}" >&2
  echo "${pins[*]}" >"$stamp"
fi
echo "$venv/bin/python"
