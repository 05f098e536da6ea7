#!/usr/bin/env bash
# The Python binding library, chosen by measurement (issue 35): nanobind and pybind11 (both the
# PyPI versions pinned in tools/dev/py-venv.sh) build the same probe module (bench/bindings/: a
# class, a float32 array in without a copy, a new array out that owns its buffer, the GIL released
# around the work, a typed exception), and this prints, for each:
#   - build time from a clean folder (the library's own sources included), release flags, one job;
#   - the module's size, stripped;
#   - the time of one call from Python on 1 and on 64 Fashion-MNIST-sized samples (1x28x28 floats),
#     median of 7 timeit repeats, both modules timed alternately in one process.
#   tools/bench/bench-bindings.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
py="$("$root/tools/dev/py-venv.sh")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake_args=(-S "$root/bench/bindings" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$py"
            -Dnanobind_DIR="$("$py" -c 'import nanobind; print(nanobind.cmake_dir())')"
            -Dpybind11_DIR="$("$py" -c 'import pybind11; print(pybind11.get_cmake_dir())')")
declare -A build_s size_kib
for lib in nanobind pybind11; do
  rm -rf "$work/build"
  cmake "${cmake_args[@]}" >/dev/null
  start=$(date +%s.%N)
  cmake --build "$work/build" --target "${lib}_probe" -j 1 >/dev/null
  build_s[$lib]=$(echo "$(date +%s.%N) - $start" | bc)
  module=("$work"/build/"${lib}"_probe*.so)
  strip -o "$work/$lib.so" "${module[0]}"
  size_kib[$lib]=$(( $(stat -c %s "$work/$lib.so") / 1024 ))
  cp "${module[0]}" "$work/"
done
printf '| library | build s (clean, -j1) | module KiB (stripped) |\n|---|---:|---:|\n'
for lib in nanobind pybind11; do printf '| %s | %.1f | %d |\n' "$lib" "${build_s[$lib]}" "${size_kib[$lib]}"; done
echo
cd "$work"
"$py" - <<'PY'
import statistics
import timeit

import numpy as np

import nanobind_probe
import pybind11_probe

models = {"nanobind": nanobind_probe.Model(10), "pybind11": pybind11_probe.Model(10)}
rng = np.random.default_rng(0)
print("| library | samples | us per call (median of 7) |")
print("|---|---:|---:|")
for n in (1, 64):
    x = rng.standard_normal((n, 1, 28, 28), dtype=np.float32)
    for name, m in models.items():
        assert np.allclose(m.run(x)[:, 0], x.reshape(n, -1).sum(axis=1), rtol=1e-4, atol=1e-3), name
    times = {name: [] for name in models}
    for _ in range(7):  # alternating, so that both see the same machine
        for name, m in models.items():
            times[name].append(min(timeit.repeat(lambda: m.run(x), number=2000, repeat=1)) / 2000 * 1e6)
    for name in models:
        print(f"| {name} | {n} | {statistics.median(times[name]):.2f} |")
PY
