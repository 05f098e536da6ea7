#!/usr/bin/env bash
# GPU check: run on a machine with an NVIDIA GPU where nothing can be installed, with a build
# folder made elsewhere (tools/build.sh on the same OS) copied next to the source tree.
#
#   tools/gpu-check.sh [BUILD_DIR]        (default: build)
#
# Prints infer --version, runs the GPU test suites and the 10k-image accuracy through
# --device gpu, benchmarks ours against PyTorch on the GPU in fp32, tf32 and fp16
# (tools/bench_peers.py), and ends with a summary table and the ratio table. Exit status 0 only
# if nothing failed and the GPU tests actually ran (a skipped GPU test is reported as SKIPPED, never as a pass).
#
# cuDNN may be only inside a Python environment (the nvidia-cudnn-cu13 wheel): if the loader
# cannot find libcudnn.so.9, the script looks in Python's site-packages (nvidia/cudnn/lib,
# nvidia/cuda_runtime/lib) and puts what it finds on LD_LIBRARY_PATH, saying so.
# The Fashion-MNIST test files are looked for in $FASHION_MNIST_DIR, /usr/share/datasets/fashion-mnist
# and .data/fashion-mnist in the source tree.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)" || { echo "gpu-check: no build folder ${1:-$root/build}" >&2; exit 2; }
bin="$build/bin"
declare -a rows

row() { rows+=("$(printf '| %-34s | %-8s | %s |' "$1" "$2" "$3")"); }

section() { printf '\n=== %s ===\n' "$1"; }

# --- environment -----------------------------------------------------------------------------
section "machine"
uname -srm
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader || true
else
  echo "nvidia-smi: not found"
fi

libdirs=()
if ! ldconfig -p 2>/dev/null | grep -q 'libcudnn.so.9 '; then
  for py in python3 /usr/bin/python3; do
    command -v "$py" >/dev/null || continue
    while IFS= read -r d; do libdirs+=("$d"); done < <("$py" - <<'PY' 2>/dev/null
import site, sys, os
paths = site.getsitepackages() + [site.getusersitepackages()] + sys.path
seen = set()
for p in paths:
    for sub in ("nvidia/cudnn/lib", "nvidia/cuda_runtime/lib", "nvidia/cublas/lib"):
        d = os.path.join(p, sub)
        if os.path.isdir(d) and d not in seen:
            seen.add(d); print(d)
PY
)
    ((${#libdirs[@]})) && break
  done
  if ((${#libdirs[@]})); then
    joined="$(IFS=:; echo "${libdirs[*]}")"
    export LD_LIBRARY_PATH="$joined${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "libcudnn.so.9 is not in the loader cache; using Python's copies: $joined"
  fi
fi

data=""
for d in "${FASHION_MNIST_DIR:-}" /usr/share/datasets/fashion-mnist "$root/.data/fashion-mnist"; do
  if [[ -n "$d" && -f "$d/t10k-images-idx3-ubyte.gz" ]]; then data="$d"; break; fi
done
[[ -n "$data" ]] && export FASHION_MNIST_DIR="$data"

# --- infer --version -------------------------------------------------------------------------
section "infer --version"
"$bin/infer" --version
"$bin/infer" --device gpu "$root/samples/ankle-boot.png"
rc=$?
if ((rc == 0)); then row "infer --device gpu on a sample" "ok" "exit 0"; else row "infer --device gpu on a sample" "FAIL" "exit $rc"; fi

# --- GPU test suites ---------------------------------------------------------------------------
# gtest's own summary lines are parsed; SKIPPED tests are counted apart from passes.
run_suite() {
  local name="$1" exe="$2"; shift 2
  section "$name"
  if [[ ! -x "$exe" ]]; then row "$name" "MISSING" "$exe not built"; return; fi
  local log; log="$(mktemp)"
  "$exe" --gtest_brief=0 "$@" 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  local passed skipped failed
  passed=$(grep -c '^\[       OK \]' "$log")
  skipped=$(grep -c '^\[  SKIPPED \]' "$log")
  failed=$(grep -c '^\[  FAILED  \] .*(' "$log")
  local verdict="ok"
  if ((status != 0 || failed > 0)); then verdict="FAIL"; elif ((skipped > 0)); then verdict="SKIPPED"; fi
  row "$name" "$verdict" "$passed passed, $failed failed, $skipped skipped"
  rm -f "$log"
}
# On this machine a GPU test that cannot reach the device is a failure, not a skip (a missing
# libinfer_cudnn.so, say): the tests read INFER_REQUIRE_GPU.
export INFER_REQUIRE_GPU=1
run_suite "cuDNN plan tests" "$bin/infer_cudnn_plan_tests"
run_suite "GPU vs CPU backend tests" "$bin/infer_gpu_tests"
run_suite "10k accuracy, --device gpu" "$bin/infer_accuracy_tests" --gtest_filter='*Gpu*'

# --- benchmark: ours and PyTorch on this GPU, per precision --------------------------------------
# tools/bench_peers.py with the machine's own python3 (PyTorch with CUDA); 1 s per configuration,
# about 3 minutes for three precisions. Its ratio table and the targets are printed last.
section "benchmark"
bench_log="$(mktemp)"
if python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  PYTHONUNBUFFERED=1 timeout 360 python3 "$root/tools/bench_peers.py" --build "$build" --devices gpu \
    --precision fp32,tf32,fp16 --batch 1,64,1024 --seconds 1 2>&1 | tee "$bench_log"
  status=${PIPESTATUS[0]}
  missed=$(grep -c '^- MISSED' "$bench_log")
  if ((status != 0)); then row "benchmark vs PyTorch" "FAIL" "exit $status (see above)";
  else row "benchmark vs PyTorch" "ok" "ran; $missed target(s) missed (goals, not tests)"; fi
else
  row "benchmark vs PyTorch" "MISSING" "python3 with a CUDA-enabled PyTorch not found"
fi

# --- summary -----------------------------------------------------------------------------------
section "summary"
printf '| %-34s | %-8s | %s |\n' "check" "result" "details"
printf '|%s|%s|%s|\n' "------------------------------------" "----------" "----------------------------------"
printf '%s\n' "${rows[@]}"
if grep -q '^| gpu' "$bench_log"; then
  section "ours / PyTorch on this GPU (same run)"
  grep -E '^\| (device|---|gpu)|^targets|^- (met|MISSED)|^ours \(gpu' "$bench_log"
fi
rm -f "$bench_log"
if printf '%s\n' "${rows[@]}" | grep -qE '\| (FAIL|MISSING|SKIPPED) '; then exit 1; fi
exit 0
