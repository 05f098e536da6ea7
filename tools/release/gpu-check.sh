#!/usr/bin/env bash
# The one-shot device check: run on a machine with an NVIDIA GPU where nothing can be installed,
# from a bundle made by tools/release/gpu-bundle.sh and unpacked at any path:
#
#   tar xzf infer-gpu-bundle.tar.gz && infer-gpu-bundle/tools/gpu-check.sh
#   tools/release/gpu-check.sh [ROOT]     ROOT: a bundle or a build folder (bin/, share/infer, share/infer-tests);
#                                 default: the bundle this script is in, else <source>/build
#
# Steps, each under `timeout`, all within 8 minutes ($INFER_GPU_CHECK_BUDGET_S seconds, below):
#   infer --version; infer --check (where it fails, the later steps use this machine's own manifest,
#   infer --write-manifest, and say so); infer --device gpu on a sample; the cuDNN plan tests; the
#   GPU-vs-CPU backend tests; the 10k-image accuracy through --device gpu in fp32, tf32 and fp16
#   (fp32 alone on the CPU stand-in);
#   torchvision's architectures exported to ONNX against ONNX Runtime on the GPU backend (the data
#   made in the background by tools/train/torchvision_conformance.py where python3 has torch, torchvision
#   and onnxruntime, or given as $INFER_CONFORMANCE_DIR), and `infer --model X.onnx` on the samples,
#   --device cpu against gpu; the benchmark against PyTorch on the GPU (tools/bench/bench_peers.py:
#   eager, CUDA graph and torch.compile, on the shipped model and on ResNet-18, MobileNetV2 and
#   EfficientNet-B0 through their ONNX export; the raw JSON of every run in bench-raw/);
#   then the CUDA 12 backend on the same GPU (a 580 driver runs CUDA 12 programs too): a sample with
#   --cuda 12, the GPU-vs-CPU tests with INFER_CUDA=12, and one table of both backends' accuracy on
#   the 10k test images and speed (infer-bench, fp32/tf32/fp16, batch 1 and 64), with the CUDA 12
#   backend's first result with the driver's JIT cache off and on (CUDA_CACHE_DISABLE); the
#   start-up breakdown (infer-bench: module, context, handle, planning per step, first batch) with
#   CUDA_MODULE_LOADING at its default and at EAGER; the launch floor (infer-launch-floor: a graph of
#   empty kernels and pinned copies), which the batch-1 targets are measured against.
# A step whose Python packages are missing is "not run", not a failure. It ends with the summary
# table, one row per step. Exit 0 only if every step ran and passed.
#
# Logs: every step's output in $OUT when set, else ./gpu-check-logs-<date>-<time>, plus the whole
# run in gpu-check.log and the table in summary.txt there.
#
# CUDA libraries. libinfer_cudnn_cu13.so needs libcudart.so.13 and libcudnn.so.9. It looks beside
# itself, in ../lib, then /usr/local/cuda/lib64 (its RUNPATH). Where the loader cannot find them
# (ldconfig -p, /usr/local/cuda/lib64), this script looks for the CUDA 13 pip wheels and puts
# their folders on LD_LIBRARY_PATH, saying so. The layouts, read from the wheels on PyPI
# (pip download --no-deps; unzip -l):
#   nvidia-cuda-runtime 13.x (13.5.37)  nvidia/cu13/lib/libcudart.so.13   (nvidia-cuda-runtime-cu13
#                                       is only a deprecated 0.0.1 placeholder naming this package)
#   nvidia-cudnn-cu13 9.x (9.28.1.4)    nvidia/cudnn/lib/libcudnn.so.9 (RPATH $ORIGIN) and the
#                                       libraries it loads itself: libcudnn_{graph,ops,cnn,adv,ext,
#                                       heuristic,engines_precompiled,engines_runtime_compiled,
#                                       engines_tensor_ir}.so.9; it depends on nvidia-cublas, whose
#                                       CUDA 13 build shares nvidia/cu13/lib.
# The CUDA 12 backend (libinfer_cudnn_cu12.so) finds libcudart.so.12 in the bundle's lib/ (carried
# there) and needs a cuDNN built for CUDA 12, which no bundle can carry: $INFER_CUDA12_LIB_DIRS
# (colon-separated folders), else the site-packages folder that holds the nvidia-cudnn-cu12 wheel
# (nvidia/cudnn/lib, beside a nvidia_cudnn_cu12-*.dist-info; its cuBLAS, nvidia-cublas-cu12, in
# nvidia/cublas/lib), else the loader's own libcudnn.so.9 when `infer --check` finds it built for
# CUDA 12. Without one, the CUDA 12 steps are "not run", saying so.
# Looked in: $INFER_CUDA_LIB_DIRS (colon-separated folders, used first and as they are), the
# site-packages python3 reports (if python3 exists), and /usr/lib/python3*/dist-packages,
# /usr/local/lib/python3*/{site,dist}-packages, ~/.local/lib/python3*/site-packages, $VIRTUAL_ENV
# and $CONDA_PREFIX (lib/python3*/site-packages).
#
# Skips. The GPU suites run with INFER_REQUIRE_GPU=1 (tests/support/test_util.h), under which a test that
# cannot reach a usable GPU fails instead of skipping. So a skip that remains is never for want of
# a GPU: it is a test that does not apply on this machine; it is listed by name in its row and does
# not fail the check. (GpuBackend.UnavailableReasonIsOneLine, the no-GPU case, runs itself in a child
# process with CUDA_VISIBLE_DEVICES=-1 where a GPU is usable, so it does not skip either.)
#
# The CPU stand-in (tests/standin/: the project's CPU implementation of libcudart/libcudnn, used by
# tests and the bundle rehearsal, tools/ci/rehearse-bundle.sh): when infer names it ("stand-in" in
# infer --version or in the device tag), every result here is a rehearsal of the plumbing on the
# CPU, NOT a GPU result; the script says so in a banner at the start and in the summary, and does
# not run the benchmark.
set -uo pipefail  # an array that may be empty is expanded as ${a[@]+"${a[@]}"}: bash before 4.4 calls "${a[@]}" of an empty one unbound
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# --bench-only FILE: FILE is the tests-passed file of an earlier run (written at the end: this
# bundle and device, then the test steps that passed). When it names this bundle (BUNDLE, a clean
# commit) on this same kind of device, each test step it lists is skipped, saying so, and the rest
# runs: the sample, the benchmarks, the start-up breakdown, both backends' table. Otherwise every
# step runs, saying why.
usage="usage: gpu-check.sh [--bench-only TESTS_PASSED_FILE] [BUNDLE_OR_BUILD_DIR]"
bench_only_file="" folder=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bench-only)
      [[ $# -ge 2 && -n "$2" ]] || { echo "gpu-check: --bench-only needs the tests-passed file of an earlier run" >&2; exit 2; }
      bench_only_file="$2"
      shift 2
      ;;
    -*) echo "gpu-check: unknown option $1; $usage" >&2; exit 2 ;;
    *)
      [[ -z "$folder" ]] || { echo "gpu-check: one folder only; $usage" >&2; exit 2; }
      folder="$1"
      shift
      ;;
  esac
done
if [[ -n "$folder" ]]; then
  root="$(cd "$folder" && pwd)" || { echo "gpu-check: no folder $folder" >&2; exit 2; }
elif [[ -x "$here/../bin/infer" ]]; then
  root="$(cd "$here/.." && pwd)"      # in a bundle: tools/ beside bin/
else
  root="$(cd "$here/../.." && pwd)/build"  # in the source tree: tools/release/
fi
# Its Python steps: beside it in a bundle (a flat tools/), in tools/bench and tools/train of the source tree.
conformance_py="$here/torchvision_conformance.py"
[[ -f "$conformance_py" ]] || conformance_py="$here/../train/torchvision_conformance.py"
bench_py="$here/bench_peers.py"
[[ -f "$bench_py" ]] || bench_py="$here/../bench/bench_peers.py"
bin="$root/bin"
[[ -x "$bin/infer" ]] || { echo "gpu-check: $bin/infer not found (give a bundle or build folder)" >&2; exit 2; }

logs="${OUT:-$PWD/gpu-check-logs-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$logs" || { echo "gpu-check: cannot create the log folder $logs" >&2; exit 2; }
logs="$(cd "$logs" && pwd)"
rm -f "$logs/tests-passed"  # only this run's passing may write it
exec > >(tee -a "$logs/gpu-check.log") 2>&1
tee_pid=$!
finish() { exec >&- 2>&-; wait "$tee_pid" 2>/dev/null; exit "$1"; }  # every line is out before the exit

# All steps together: 8 minutes. INFER_GPU_CHECK_BUDGET_S changes that and scales every step's
# timeout with it: for the rehearsal on the CPU stand-in (tools/ci/rehearse-bundle.sh), where the 10k-image
# accuracy in three precisions takes minutes on the CPU; never needed on a GPU.
readonly budget_s="${INFER_GPU_CHECK_BUDGET_S:-480}"
start_s=$SECONDS
standin=0
declare -a rows

row() { rows+=("$(printf '| %-30s | %-12s | %s |' "$1" "$2" "$3")"); }
section() { printf '\n=== %s ===\n' "$1"; }
left_s() { echo $((budget_s - (SECONDS - start_s))); }

banner() {
  printf '\n%s\n' "################################################################################"
  printf '%s\n' "##  REHEARSAL ON THE CPU STAND-IN (tests/standin), NOT A GPU RESULT.          ##"
  printf '%s\n' "##  libcudart/libcudnn here are the project's CPU implementation: this run     ##"
  printf '%s\n' "##  checks the bundle, the loader paths and our host code, not NVIDIA's        ##"
  printf '%s\n' "##  libraries, kernels, numerics or timing.                                    ##"
  printf '%s\n\n' "################################################################################"
}

# run_step NAME CAP_S LOG CMD...: runs CMD under timeout (CAP_S, or what is left of the budget),
# its output to the terminal and to $logs/LOG. Sets step_rc (124: timed out, 125: no time left).
run_step() {
  local name="$1" cap=$(($2 * budget_s / 480)) log="$logs/$3"
  shift 3
  local left; left=$(left_s)
  ((left < cap)) && cap=$left
  if ((cap <= 0)); then
    echo "gpu-check: $name: not started, the 8-minute budget is spent" | tee "$log"
    step_rc=125
    return
  fi
  echo "\$ $* (timeout ${cap} s; log $log)"
  timeout --kill-after=10 "$cap" "$@" 2>&1 | tee "$log"
  step_rc=${PIPESTATUS[0]}
  ((step_rc == 124 || step_rc == 137)) && { echo "gpu-check: $name: timed out after ${cap} s"; step_rc=124; }
}

# --- machine and libraries ------------------------------------------------------------------
section "machine"
echo "bundle/build: $root"
echo "logs: $logs"
uname -srm
if command -v nvidia-smi >/dev/null; then
  timeout 30 nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader || true
else
  echo "nvidia-smi: not found"
fi

# shellcheck source=tools/release/loader-cache.sh
source "$here/loader-cache.sh"   # ld_cache, in_ld_cache: beside this script, in the tree and the bundle
loader_has() {  # loader_has SONAME: the dynamic loader finds it without LD_LIBRARY_PATH help
  in_ld_cache "$1" ||
    [[ -e /usr/local/cuda/lib64/$1 ]]   # in libinfer_cudnn_cu13.so's RUNPATH
}
site_dirs() {  # candidate site-packages folders, one a line
  local py d
  for py in python3 /usr/bin/python3; do
    command -v "$py" >/dev/null || continue
    timeout 20 "$py" -c 'import site, sys
print("\n".join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))' 2>/dev/null
    break
  done
  for d in /usr/lib/python3*/dist-packages /usr/local/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages \
           "${HOME:-/root}"/.local/lib/python3*/site-packages \
           ${VIRTUAL_ENV:+"$VIRTUAL_ENV"/lib/python3*/site-packages} \
           ${CONDA_PREFIX:+"$CONDA_PREFIX"/lib/python3*/site-packages}; do
    [[ -d "$d" ]] && echo "$d"
  done
}
libdirs=() tail_libdirs=()
add_libdir() { local d; for d in ${libdirs[@]+"${libdirs[@]}"}; do [[ "$d" == "$1" ]] && return; done; libdirs+=("$1"); }
if [[ -n "${INFER_CUDA_LIB_DIRS:-}" ]]; then
  IFS=: read -r -a override <<<"$INFER_CUDA_LIB_DIRS"
  for d in ${override[@]+"${override[@]}"}; do [[ -n "$d" ]] && add_libdir "$d"; done
  echo "INFER_CUDA_LIB_DIRS: ${libdirs[*]}"
fi
# cuBLAS(Lt) too: cuDNN's sub-libraries load it themselves, through their own paths and the loader's
# (ldconfig, LD_LIBRARY_PATH), never through libinfer_cudnn_cu13.so's RUNPATH.
for pair in "libcudart.so.13:nvidia/cu13/lib" "libcudnn.so.9:nvidia/cudnn/lib" "libcublasLt.so.13:nvidia/cu13/lib"; do
  soname="${pair%%:*}" sub="${pair#*:}"
  if [[ -n "${INFER_CUDA_LIB_DIRS:-}" ]]; then continue; fi
  if [[ "$soname" == libcublas* ]]; then in_ld_cache "$soname" && continue
  elif loader_has "$soname"; then continue; fi
  found=""
  while IFS= read -r d; do
    if [[ -n "$d" && -e "$d/$sub/$soname" ]]; then found="$d/$sub"; break; fi
  done < <(site_dirs)
  [[ -z "$found" && "$soname" == libcublas* && -e /usr/local/cuda/lib64/$soname ]] && found=/usr/local/cuda/lib64
  if [[ -n "$found" && "$soname" == libcublas* ]]; then
    # last on the path: only for what nothing before it has (a wheel's folder holds a libcudart too)
    tail_libdirs+=("$found")
    echo "$soname: not in ldconfig's cache; cuDNN's sub-libraries get $found's, last on LD_LIBRARY_PATH"
  elif [[ -n "$found" ]]; then
    add_libdir "$found"
    echo "$soname: not in the loader's paths; using the CUDA 13 wheel's copy in $found"
  else
    echo "$soname: not in the loader's paths and no CUDA 13 wheel found (pip nvidia-cuda-runtime / nvidia-cudnn-cu13 / nvidia-cublas)"
  fi
done
if ((${#libdirs[@]} + ${#tail_libdirs[@]})); then
  joined="$(IFS=:; echo "${libdirs[*]}")"
  export LD_LIBRARY_PATH="$joined${LD_LIBRARY_PATH:+${joined:+:}$LD_LIBRARY_PATH}"
  for d in ${tail_libdirs[@]+"${tail_libdirs[@]}"}; do LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"; done
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
fi

data=""
for d in "${FASHION_MNIST_DIR:-}" "$root/share/fashion-mnist" /usr/share/datasets/fashion-mnist; do
  if [[ -n "$d" && -f "$d/t10k-images-idx3-ubyte.gz" ]]; then data="$d"; break; fi
done
if [[ -n "$data" ]]; then export FASHION_MNIST_DIR="$data"; echo "Fashion-MNIST: $data"; fi

# The torchvision conformance data (tools/train/torchvision_conformance.py: ONNX exports of torchvision's
# architectures with random weights, and ONNX Runtime's outputs on 100 inputs at 224x224): given
# through $INFER_CONFORMANCE_DIR (the rehearsal), else made here in the background while the first
# steps run, where python3 has torch, torchvision and onnxruntime; too large to travel in a bundle.
conf_dir="" conf_pid="" conf_note=""
# The bundle's commit (BUNDLE, written by gpu-bundle.sh; empty in a build folder). With
# --bench-only and a file for this bundle the tests will likely be skipped (the device is compared
# later), so the export is not started.
bundle_id="$(sed -n '1s/^infer \([^ ,]*\),.*/\1/p' "$root/BUNDLE" 2>/dev/null)"
likely_skip=0
if [[ -n "$bench_only_file" && -n "$bundle_id" ]]; then
  [[ "$(sed -n 1p "$bench_only_file" 2>/dev/null)" == "infer $bundle_id on "* ]] && likely_skip=1
fi
if [[ -n "${INFER_CONFORMANCE_DIR:-}" && -f "$INFER_CONFORMANCE_DIR/conformance.json" ]]; then
  conf_dir="$INFER_CONFORMANCE_DIR" conf_note="given: $conf_dir"
elif ((likely_skip)); then
  conf_note="not made: --bench-only $bench_only_file names this bundle"
elif [[ -f "$conformance_py" ]] && command -v python3 >/dev/null; then
  conf_dir="${TMPDIR:-/tmp}/infer-conformance-224" conf_note="made here: $conf_dir"
  (
    if ! timeout 60 python3 -c 'import torch, torchvision, onnxruntime' 2>/dev/null; then
      echo "python3 lacks torch, torchvision or onnxruntime" >"$logs/conformance-data.log"; echo missing >"$logs/conformance-data.rc"
    else
      timeout 300 env PYTHONUNBUFFERED=1 python3 "$conformance_py" "$conf_dir" --size 224 --count 100 \
        >"$logs/conformance-data.log" 2>&1
      echo $? >"$logs/conformance-data.rc"
    fi
  ) &
  conf_pid=$!
fi
echo "torchvision conformance data: ${conf_note:-none (no python3 or no tools/train/torchvision_conformance.py)}"

# --- infer itself ---------------------------------------------------------------------------
section "infer --version"
run_step "infer --version" 30 version.log "$bin/infer" --version
if ((step_rc == 0)); then row "infer --version" "ok" "$(grep -m1 -E '^ +cuDNN [0-9]' "$logs/version.log" | tr -s ' ' | cut -c2-90)"
else row "infer --version" "FAIL" "exit $step_rc"; fi
grep -qi 'stand-in' "$logs/version.log" && standin=1
((standin)) && banner

section "infer --check"
run_step "infer --check" 30 check.log "$bin/infer" --check
if ((step_rc == 0)); then row "infer --check" "ok" "every required item holds"
else row "infer --check" "FAIL" "exit $step_rc: $(grep -m1 '^result:' "$logs/check.log" | cut -c1-90)"; fi

# A machine that does not match VERSIONS.toml (another cuDNN, say) still gets its GPU path tested:
# the later steps run against this machine's own manifest (infer --write-manifest, which passes on
# the machine that wrote it), as tests/support/accuracy.h's INFER_TEST_MANIFEST. The FAIL above stands.
infer_manifest=()
if ((step_rc != 0)); then
  machine_manifest="$logs/machine-VERSIONS.toml"
  run_step "machine manifest" 30 machine-manifest.log "$bin/infer" --write-manifest "$machine_manifest"
  # It can still fail here: a cuDNN older than the one infer was built with breaks cuDNN's own
  # compatibility rule (runtime_compatible). The rules become advisory in this copy, said below.
  if ((step_rc == 0)) && ! "$bin/infer" --check --manifest "$machine_manifest" >/dev/null 2>&1; then
    sed -i -E 's/^([a-z_]+) = "required"/\1 = "advisory"   # required in the written file; fails here/' "$machine_manifest"
    echo "gpu-check: this machine fails its own manifest's rules (below); they are advisory in $machine_manifest"
    "$bin/infer" --check --manifest "$machine_manifest" | grep -iE 'fail|warn' || true
  fi
  if ((step_rc == 0)); then
    infer_manifest=(--manifest "$machine_manifest")
    export INFER_TEST_MANIFEST="$machine_manifest"
    echo "gpu-check: the later steps run with --manifest $machine_manifest (this machine's own), not VERSIONS.toml"
    row "  (this machine's manifest)" "note" "later steps use infer --write-manifest's, not VERSIONS.toml"
  fi
fi

section "infer --device gpu on a sample"
sample="$root/share/infer/samples/ankle-boot.png"
run_step "sample" 60 sample.log "$bin/infer" ${infer_manifest[@]+"${infer_manifest[@]}"} --device gpu "$sample"
tag="$(grep -o '\[[^]]*\]$' "$logs/sample.log" | tail -n1)"
grep -qi 'stand-in' "$logs/sample.log" && standin=1
if ((step_rc == 0)) && grep -q ': Ankle boot 0\.' "$logs/sample.log"; then
  row "infer --device gpu, a sample" "ok" "Ankle boot $tag"
else row "infer --device gpu, a sample" "FAIL" "exit $step_rc: $(head -n1 "$logs/sample.log" | cut -c1-100)"; fi

# --- what this run is: the bundle's commit on this device (the tests-passed file's line) -------------
if ((standin)); then device_id="the CPU stand-in"
else device_id="$(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sed -n 1p)"; fi
run_id=""
[[ -n "$bundle_id" && "$bundle_id" != *-dirty ]] && run_id="infer $bundle_id on ${device_id:-an unnamed GPU}"
skip_tests=0
if [[ -n "$bench_only_file" ]]; then
  passed_id="$(sed -n 1p "$bench_only_file" 2>/dev/null)"
  if [[ -z "$run_id" ]]; then
    echo "gpu-check: --bench-only: no clean commit in $root/BUNDLE; running every step"
  elif [[ "$passed_id" != "$run_id" ]]; then
    echo "gpu-check: --bench-only: $bench_only_file says '${passed_id:-nothing}', this run is '$run_id'; running every step"
  else
    skip_tests=1
    echo "gpu-check: --bench-only: the test steps passed for '$run_id' ($bench_only_file); skipping them"
  fi
fi
# step_passed NAME: the tests-passed file names this run (skip_tests) and lists NAME.
listed_steps=()
((skip_tests)) && mapfile -t -s 1 listed_steps <"$bench_only_file"
step_passed() {
  local s
  for s in ${listed_steps[@]+"${listed_steps[@]}"}; do [[ "$s" == "$1" ]] && return 0; done
  return 1
}
skipped_row() { row "$1" "skipped" "passed for this bundle and device (--bench-only $bench_only_file)"; }
# The test steps a tests-passed file may list: the suites (run_suite's names) and the ONNX CLI check.
test_steps=()
note_test_step() {
  local s
  for s in ${test_steps[@]+"${test_steps[@]}"}; do [[ "$s" == "$1" ]] && return; done
  test_steps+=("$1")
}

# --- GPU test suites ------------------------------------------------------------------------
# gtest's per-test lines are counted: "[       OK ] Suite.Name (N ms)", "[  FAILED  ] ... (N ms)",
# "[  SKIPPED ] Suite.Name (N ms)".
export INFER_REQUIRE_GPU=1
run_suite() {
  local name="$1" cap="$2" log="$3" exe="$4"
  shift 4
  section "$name"
  note_test_step "$name"
  if step_passed "$name"; then skipped_row "$name"; return; fi
  if [[ ! -x "$exe" ]]; then row "$name" "MISSING" "$exe not in the bundle"; return; fi
  run_step "$name" "$cap" "$log" "$exe" "$@"
  local passed failed skipped names verdict
  passed=$(grep -cE '^\[       OK \] .* \([0-9]+ ms\)' "$logs/$log")
  failed=$(grep -cE '^\[  FAILED  \] .* \([0-9]+ ms\)' "$logs/$log")
  skipped=$(grep -cE '^\[  SKIPPED \] .* \([0-9]+ ms\)' "$logs/$log")
  names=$(grep -E '^\[  SKIPPED \] .* \([0-9]+ ms\)' "$logs/$log" | sed -E 's/^\[  SKIPPED \] ([^ ]+).*/\1/' | paste -sd, -)
  verdict="ok"
  if ((step_rc == 124 || step_rc == 125)); then verdict="TIMEOUT"
  elif ((step_rc != 0 || failed > 0 || passed == 0)); then verdict="FAIL"; fi
  row "$name" "$verdict" "$passed passed, $failed failed, $skipped skipped${names:+ (not applicable here: $names)}$( ((step_rc != 0)) && echo "; exit $step_rc")"
}
run_suite "cuDNN plan tests" 60 plan-tests.log "$bin/infer_cudnn_plan_tests"
run_suite "GPU vs CPU backend tests" 180 gpu-tests.log "$bin/infer_gpu_tests"
# On the stand-in, fp32 only: the bundle's path to the GPU is the same in each precision, and the
# build's own test stage runs tf32 and fp16 on the stand-in already (minutes each on the CPU).
accuracy_filter=()
((standin)) && accuracy_filter=(--gtest_filter='*/fp32')
run_suite "10k accuracy, --device gpu" 180 accuracy.log "$bin/infer_gpu_accuracy_tests" ${accuracy_filter[@]+"${accuracy_filter[@]}"}

# --- torchvision architectures through the ONNX import, on the GPU ---------------------------
# tests/backends/cudnn/test_gpu_conformance.cpp against ONNX Runtime (the derived bound on one input, top-1 on all),
# then `infer --model X.onnx` itself on the bundled samples, --device cpu against --device gpu.
conf_ready=0
note_test_step "torchvision vs ONNX Runtime"
note_test_step "infer --model X.onnx"
if step_passed "torchvision vs ONNX Runtime" && step_passed "infer --model X.onnx"; then
  [[ -n "$conf_pid" ]] && kill "$conf_pid" 2>/dev/null && wait "$conf_pid" 2>/dev/null
  skipped_row "torchvision vs ONNX Runtime"
  skipped_row "infer --model X.onnx"
elif [[ -n "$conf_pid" ]]; then
  section "torchvision conformance data"
  echo "waiting for the background export (log $logs/conformance-data.log)"
  wait "$conf_pid"
  cat "$logs/conformance-data.log"
  conf_rc="$(cat "$logs/conformance-data.rc" 2>/dev/null || echo "?")"
  if [[ "$conf_rc" == 0 ]]; then conf_ready=1
  elif [[ "$conf_rc" == missing ]]; then
    row "torchvision conformance" "not run" "python3 lacks torch, torchvision or onnxruntime"
  else row "torchvision conformance" "FAIL" "tools/train/torchvision_conformance.py exit $conf_rc (conformance-data.log)"; fi
elif [[ -n "$conf_dir" ]]; then conf_ready=1
elif ((likely_skip)); then row "torchvision conformance" "not run" "the export was not started: --bench-only $bench_only_file named this bundle, but not this device"
else row "torchvision conformance" "not run" "no python3 with torch, torchvision, onnxruntime; no INFER_CONFORMANCE_DIR"; fi
if ((conf_ready)); then
  export INFER_CONFORMANCE_DIR="$conf_dir"
  run_suite "torchvision vs ONNX Runtime" 180 conformance.log "$bin/infer_gpu_conformance_tests"
  grep '^\[ conformance \]' "$logs/conformance.log" | sed 's/^\[ conformance \] /  /' >"$logs/conformance-table.txt"

  section "infer --model X.onnx, --device cpu and gpu"
  : >"$logs/onnx-cli.log"
  models="$(grep -oE '"name": *"[^"]+"' "$conf_dir/conformance.json" | sed -E 's/.*"([^"]+)"$/\1/')"
  samples="$root/share/infer/samples"
  agree=0 total=0 cli_fail=""
  # top1 FILE: "index score" of each image's best class, in infer's order (sorted paths)
  top1() { sed -E 's/.*"top":\[\{"index":([0-9]+),"label":"[^"]*","score":([-0-9.eE+]+).*/\1 \2/' "$1"; }
  for name in $models; do
    for dev in cpu gpu; do
      run_step "onnx $name $dev" 60 "onnx-$name-$dev.log" "$bin/infer" ${infer_manifest[@]+"${infer_manifest[@]}"} --model "$conf_dir/$name.onnx" \
        --device "$dev" --json --top-k 1 "$samples"
      ((step_rc == 0)) || cli_fail+=" $name/$dev(exit $step_rc)"
      grep '^{' "$logs/onnx-$name-$dev.log" >"$logs/onnx-$name-$dev.json" || true
    done
    n=$(paste -d' ' <(top1 "$logs/onnx-$name-cpu.json") <(top1 "$logs/onnx-$name-gpu.json") |
        awk -v m="$name" '{ d = $2 - $4; if (d < 0) d = -d; if (d > worst) worst = d; t++; a += ($1 == $3) }
                          END { printf "%s: top-1 %d/%d agree, max |cpu - gpu| of the best score %.3g\n", m, a, t, worst
                                print a, t > "/dev/stderr" }' 2>"$logs/onnx-$name.count" | tee -a "$logs/onnx-cli.log")
    echo "$n"
    read -r a t <"$logs/onnx-$name.count" || { a=0; t=0; }
    agree=$((agree + a)) total=$((total + t))
    rm -f "$logs/onnx-$name-cpu.json" "$logs/onnx-$name-gpu.json" "$logs/onnx-$name.count"
  done
  if [[ -n "$cli_fail" ]]; then row "infer --model X.onnx" "FAIL" "exit:$cli_fail"
  elif ((total == 0 || agree != total)); then row "infer --model X.onnx" "FAIL" "top-1 cpu vs gpu $agree/$total (onnx-cli.log)"
  else row "infer --model X.onnx" "ok" "$(wc -w <<<"$models") models x samples: top-1 cpu = gpu $agree/$total"; fi
fi

# --- benchmark: ours and PyTorch on this GPU, per precision ---------------------------------
section "benchmark"
bench_log="$logs/benchmark.log"
: >"$bench_log"
if ((standin)); then
  row "benchmark vs PyTorch" "skipped" "the CPU stand-in: timing means nothing"
elif ! command -v python3 >/dev/null ||
     ! timeout 60 python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  row "benchmark vs PyTorch" "not run" "no CUDA PyTorch (python3 -c 'import torch' with a GPU)"
elif [[ ! -f "$bench_py" ]]; then
  row "benchmark vs PyTorch" "MISSING" "$bench_py"
else
  # The benchmark gets what the budget has left but 150 s for the steps after it (the CUDA 12
  # backend, the start-up breakdown, the floor, both backends' table), and at least 240 s; of
  # that, torch.compile (the slowest peer: its compiles) gets what the rest does not need, about
  # 150 s: the shipped model in three precisions and three torchvision models in two.
  # In seconds of this run (left_s); run_step takes its cap in the 8-minute budget's seconds and
  # scales it by the budget, so it is handed back in those.
  left=$(left_s)
  bench_cap=$((left - 150))
  ((bench_cap < 240)) && bench_cap=240
  ((bench_cap > left)) && bench_cap=$left
  compile_budget=$((bench_cap > 300 ? bench_cap - 150 : bench_cap / 2))
  run_step "benchmark" "$((bench_cap * 480 / budget_s))" benchmark.log env PYTHONUNBUFFERED=1 python3 "$bench_py" --build "$root" \
    --devices gpu --precision fp32,tf32,fp16 --batch 1,64,1024 --seconds 1 \
    --gpu-architectures resnet18,mobilenet_v2,efficientnet_b0 --gpu-architecture-batch 1,64 \
    --gpu-architecture-precision tf32,fp16 --compile-budget-s "$compile_budget" --compile-cap-s 90 \
    --raw-dir "$logs/bench-raw"
  missed=$(grep -c '^- MISSED' "$bench_log")
  if ((step_rc == 124 || step_rc == 125)); then row "benchmark vs PyTorch" "TIMEOUT" "see benchmark.log"
  elif ((step_rc != 0)); then row "benchmark vs PyTorch" "FAIL" "exit $step_rc (see benchmark.log)"
  else row "benchmark vs PyTorch" "ok" "ran; $missed target(s) missed (goals, not tests)"; fi
fi

# --- the CUDA 12 backend on the same GPU, and both backends side by side -----------------------
section "the CUDA 12 backend"
cu12_dirs=()
if [[ -n "${INFER_CUDA12_LIB_DIRS:-}" ]]; then
  IFS=: read -r -a cu12_dirs <<<"$INFER_CUDA12_LIB_DIRS"
else
  while IFS= read -r d; do
    if [[ -n "$d" && -e "$d/nvidia/cudnn/lib/libcudnn.so.9" ]] && compgen -G "$d/nvidia_cudnn_cu12-*.dist-info" >/dev/null; then
      cu12_dirs=("$d/nvidia/cudnn/lib")
      [[ -d "$d/nvidia/cublas/lib" ]] && cu12_dirs+=("$d/nvidia/cublas/lib")
      break
    fi
  done < <(site_dirs)
fi
cu12_env=(env INFER_CUDA=12)
if ((${#cu12_dirs[@]})); then
  cu12_path="$(IFS=:; echo "${cu12_dirs[*]}")"
  cu12_env+=(LD_LIBRARY_PATH="$cu12_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  echo "cuDNN for CUDA 12: $cu12_path (first on LD_LIBRARY_PATH for the CUDA 12 steps)"
else
  echo "cuDNN for CUDA 12: none named (INFER_CUDA12_LIB_DIRS) and no nvidia-cudnn-cu12 wheel found; trying the loader's"
fi
cu12_runs=0
if [[ ! -f "$root/lib/libinfer_cudnn_cu12.so" && ! -f "$bin/libinfer_cudnn_cu12.so" ]]; then
  row "CUDA 12 backend" "MISSING" "libinfer_cudnn_cu12.so is not in this bundle/build"
else
  run_step "cu12 sample" 60 cu12-sample.log ${cu12_env[@]+"${cu12_env[@]}"} "$bin/infer" ${infer_manifest[@]+"${infer_manifest[@]}"} --cuda 12 "$sample"
  if ((step_rc == 0)) && grep -q ': Ankle boot 0\.' "$logs/cu12-sample.log"; then
    cu12_runs=1
    row "infer --cuda 12, a sample" "ok" "Ankle boot $(grep -o '\[[^]]*\]$' "$logs/cu12-sample.log" | tail -n1 | cut -c1-60)"
  elif ((${#cu12_dirs[@]} == 0)) && grep -q 'built for CUDA 13\|cuDNN 9 for CUDA 12\|libcudnn' "$logs/cu12-sample.log"; then
    row "infer --cuda 12, a sample" "not run" "no cuDNN for CUDA 12 here (pip nvidia-cudnn-cu12, or INFER_CUDA12_LIB_DIRS)"
  else
    row "infer --cuda 12, a sample" "FAIL" "exit $step_rc: $(grep -m1 'infer:' "$logs/cu12-sample.log" | cut -c1-100)"
  fi
fi
if ((cu12_runs)); then
  # On the stand-in, the kernels' path through the driver API (the CUDA 12 backend's own) and the
  # shipped model: the whole suite is the GPU's job, and on the CPU it takes minutes.
  filter=()
  ((standin)) && filter=(--gtest_filter='GpuBackend.ShippedModelMatchesCpu:GpuBackend.EveryOpAloneMatchesCpu:GpuBackend.TopKOnTheDeviceMatchesCpu:GpuBackend.Fp16*')
  saved_path="${LD_LIBRARY_PATH-}"
  export INFER_CUDA=12
  ((${#cu12_dirs[@]})) && export LD_LIBRARY_PATH="$cu12_path${saved_path:+:$saved_path}"
  run_suite "GPU vs CPU tests, CUDA 12" 180 gpu-tests-cu12.log "$bin/infer_gpu_tests" ${filter[@]+"${filter[@]}"}
  unset INFER_CUDA
  export LD_LIBRARY_PATH="$saved_path"
fi

# --- start-up: where the time to the first result goes (infer-bench's breakdown) ------------------
# CUDA 13 backend, with CUDA_MODULE_LOADING at its default (lazy since CUDA 12.2: kernels load on
# first use) and at EAGER (every kernel of every loaded module at context creation). On the
# stand-in the phases are a rehearsal of the plumbing: its emulated work runs at synchronisations.
section "start-up breakdown"
breakdown() { awk '/^start-up breakdown/ {p = 1; next} /^ *batch / {p = 0} p' "$1"; }  # reads the file: no pipe
startup_ms() { sed -n 's/^start-up \([0-9.]*\) ms.*/\1/p' "$1"; }
if [[ ! -x "$bin/infer-bench" ]]; then
  row "start-up breakdown" "MISSING" "$bin/infer-bench"
else
  startup_note=""
  for loading in default EAGER; do
    envs=(env INFER_CUDA=13)
    [[ "$loading" == EAGER ]] && envs+=(CUDA_MODULE_LOADING=EAGER)
    run_step "start-up $loading" 60 "startup-$loading.log" "${envs[@]}" "$bin/infer-bench" --device gpu --batch 1 \
      --seconds 0.2 --no-accuracy
    if ((step_rc != 0)); then startup_note+=" $loading: FAIL (exit $step_rc)"
    else startup_note+=" $loading: $(startup_ms "$logs/startup-$loading.log") ms"; fi
  done
  if [[ "$startup_note" == *FAIL* ]]; then row "start-up breakdown" "FAIL" "${startup_note# }"
  else row "start-up breakdown" "ok" "process start to first result,${startup_note}"; fi
fi

# --- the launch floor: what a batch-1 pass cannot go below (infer-launch-floor) -------------------
section "launch floor"
if ((standin)); then
  row "launch floor" "skipped" "the CPU stand-in: timing means nothing"
elif [[ ! -x "$bin/infer-launch-floor" ]]; then
  row "launch floor" "MISSING" "$bin/infer-launch-floor"
else
  run_step "launch floor" 60 launch-floor.log "$bin/infer-launch-floor"
  if ((step_rc == 0)); then
    row "launch floor" "ok" "one graph of copy in, 12 empty kernels, copy out: p50 $(sed -n 's/^one graph: [^0-9]*\([0-9.]*\).*/\1/p' "$logs/launch-floor.log") us"
  else row "launch floor" "FAIL" "exit $step_rc (launch-floor.log)"; fi
fi

section "both backends: accuracy and speed"
# bench_json FILE KEY: a number from infer-bench --json (one object, "results" per batch).
num() { grep -oE "\"$2\":[-0-9.eE+]+" "$1" | sed -n '1s/^[^:]*://p'; }  # sed reads all: no SIGPIPE
per_batch() { grep -oE "\"batch\":$2,\"images_per_s\":[-0-9.eE+]+" "$1" | cut -d: -f3; }
if ((standin)); then
  row "both backends, speed" "skipped" "the CPU stand-in: timing means nothing"
elif [[ ! -x "$bin/infer-bench" ]]; then
  row "both backends, speed" "MISSING" "$bin/infer-bench"
else
  table="$logs/backends.md"
  {
    echo "| backend | precision | top-1 (10k) | images/s, batch 1 | images/s, batch 64 | first result ms |"
    echo "|---|---|---|---|---|---|"
  } >"$table"
  for major in 13 12; do
    ((major == 12 && !cu12_runs)) && continue
    envs=(env INFER_CUDA=13)
    ((major == 12)) && envs=(${cu12_env[@]+"${cu12_env[@]}"})
    for p in fp32 tf32 fp16; do
      log="bench-cu$major-$p.json"
      run_step "bench cu$major $p" 60 "$log" ${envs[@]+"${envs[@]}"} "$bin/infer-bench" --device gpu --precision "$p" \
        --batch 1 64 --seconds 1 --json
      if ((step_rc == 0)); then
        echo "| cu$major | $p | $(num "$logs/$log" accuracy) | $(per_batch "$logs/$log" 1) | $(per_batch "$logs/$log" 64) | $(num "$logs/$log" first_result_ms) |" >>"$table"
      else
        echo "| cu$major | $p | FAIL (exit $step_rc) | | | |" >>"$table"
      fi
    done
  done
  if ((cu12_runs)); then
    # The CUDA 12 backend's kernels are PTX the driver compiles at first load: with its cache off
    # (CUDA_CACHE_DISABLE=1) the first result includes that compile, with the cache (second run) not.
    run_step "cu12 JIT, cache off" 60 jit-off.json ${cu12_env[@]+"${cu12_env[@]}"} CUDA_CACHE_DISABLE=1 "$bin/infer-bench" \
      --device gpu --batch 1 --seconds 0.2 --json
    run_step "cu12 JIT, cached" 60 jit-on.json ${cu12_env[@]+"${cu12_env[@]}"} "$bin/infer-bench" --device gpu --batch 1 --seconds 0.2 --json
    echo "CUDA 12 backend, first result: $(num "$logs/jit-off.json" first_result_ms) ms with CUDA_CACHE_DISABLE=1, $(num "$logs/jit-on.json" first_result_ms) ms cached" >>"$table"
  fi
  cat "$table"
  if grep -q 'FAIL' "$table"; then row "both backends, table" "FAIL" "see backends.md"
  else row "both backends, table" "ok" "backends.md: accuracy and speed per backend and precision"; fi
fi

# --- summary --------------------------------------------------------------------------------
{
  section "summary ($((SECONDS - start_s)) s)"
  ((standin)) && banner
  printf '| %-30s | %-12s | %s |\n' "step" "$( ((standin)) && echo "on STAND-IN" || echo "result")" "details"
  printf '|%s|%s|%s|\n' "--------------------------------" "--------------" "----------------------------------"
  printf '%s\n' ${rows[@]+"${rows[@]}"}
  if [[ -s "$logs/conformance-table.txt" ]]; then
    section "torchvision architectures: infer on this GPU vs ONNX Runtime"
    cat "$logs/conformance-table.txt" "$logs/onnx-cli.log" 2>/dev/null
  fi
  if [[ -s "$logs/launch-floor.log" ]]; then
    section "the launch floor on this GPU"
    cat "$logs/launch-floor.log"
  fi
  for loading in default EAGER; do
    [[ -s "$logs/startup-$loading.log" ]] || continue
    section "start-up breakdown, CUDA 13 backend, CUDA_MODULE_LOADING=$loading (ms)"
    breakdown "$logs/startup-$loading.log"
  done
  if [[ -s "$logs/backends.md" ]]; then
    section "the CUDA 13 and CUDA 12 backends on this GPU (same run)"
    cat "$logs/backends.md"
  fi
  if grep -q '^| gpu' "$bench_log"; then
    section "ours / PyTorch on this GPU (same run)"
    grep -E '^\| (device|model|---|gpu|fashion|resnet18|mobilenet_v2|efficientnet_b0) |^targets|^- (met|MISSED|not measured)|^ours \(gpu|^torch\.compile|^launch floor|^ours on the GPU' "$bench_log"
  fi
  ((standin)) && echo "RESULT ON THE CPU STAND-IN: a rehearsal of the bundle, NOT a GPU result."
  echo "logs: $logs"
} | tee "$logs/summary.txt"
for r in ${rows[@]+"${rows[@]}"}; do [[ "$r" =~ \|\ (FAIL|MISSING|TIMEOUT)\  ]] && finish 1; done
# No step failed: the file that lets a later run of this bundle on this device skip the test
# steps that passed here (each named; a step that was not run, or skipped, is not listed).
if [[ -n "$run_id" ]]; then
  passed=()
  for step in ${test_steps[@]+"${test_steps[@]}"}; do
    for r in ${rows[@]+"${rows[@]}"}; do
      [[ "$r" == "$(printf '| %-30s | %-12s |' "$step" "ok")"* ||
         "$r" == "$(printf '| %-30s | %-12s | passed for this bundle' "$step" "skipped")"* ]] && passed+=("$step")
    done
  done
  if ((${#passed[@]})); then
    printf '%s\n' "$run_id" "${passed[@]}" >"$logs/tests-passed"
    echo "tests-passed for '$run_id': ${#passed[@]} test step(s) in $logs/tests-passed (--bench-only FILE skips them next time)"
  fi
fi
finish 0
