#!/usr/bin/env bash
# Rehearses the device check (tools/release/gpu-check.sh) from the bundle (tools/release/gpu-bundle.sh) on the CPU
# stand-in, in a minimal Debian root that has none of this machine's packages: what the first
# real GPU run will do, short of the GPU. Called by .ci/run; run as root (debootstrap, chroot, mount).
#
#   tools/ci/rehearse-bundle.sh BUILD_DIR
#
# 1. tools/release/gpu-bundle.sh BUILD_DIR: the bundle and its size.
# 2. A minimal root: debootstrap --variant=minbase bookworm, from the mirror this machine's apt uses,
#    kept as a tarball in $INFER_REHEARSAL_CACHE (default /var/cache/infer-rehearsal) so that the
#    next run unpacks it in seconds; without the cache (or when it cannot be written) it is made afresh.
# 3. The bundle unpacked at another path inside it (/opt/somewhere/else/infer-gpu-bundle), the
#    stand-in's libcudart.so.13 and libcudnn.so.9 (and the cuDNN sub-library names) in a CUDA 13
#    wheel layout under /usr/local/lib/python3.12/dist-packages/nvidia/{cu13,cudnn}/lib (where pip
#    puts them; minbase has no python3, so gpu-check.sh finds them by globbing), the stand-in's
#    libcudart.so.12 in the CUDA 12 wheel's nvidia/cuda_runtime/lib, named with the cuDNN folder
#    by INFER_CUDA12_LIB_DIRS for the CUDA 12 steps (ahead of the bundle's own libcudart.so.12, which
#    needs a real driver), and the driver's libcuda.so.1 and libnvidia-ml.so.1 where a driver puts
#    them (/usr/lib/x86_64-linux-gnu, then ldconfig).
# 4. In the root: ldd of every bundled binary (nothing missing), infer --device cpu on a sample,
#    then `chroot ROOT .../tools/release/gpu-check.sh` under a timeout, its logs copied out, with the
#    build's torchvision conformance data at 64x64 as $INFER_CONFORMANCE_DIR (no python3 there).
#    Then gpu-check.sh --bench-only with the tests-passed file that run wrote: the suites skipped,
#    the start-up breakdown and the rest run.
# Ends with GREEN or RED, the bundle size and the time of each part; exit 0 only if GREEN.
# The stand-in (BUILD_DIR/standin/lib: libcudart.so.13 and .12, libcudnn.so.9, libcuda.so.1,
# libnvidia-ml.so.1) is never put into the bundle, only into the rehearsal's root.
set -euo pipefail
root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ $# -eq 1 ]] || { echo "usage: tools/ci/rehearse-bundle.sh BUILD_DIR" >&2; exit 2; }
build="$(cd "$1" && pwd)"
[[ $(id -u) -eq 0 ]] || { echo "rehearse-bundle: run as root (debootstrap, chroot, mount)" >&2; exit 2; }
standin="$build/standin/lib"
inside=/opt/somewhere/else              # the bundle's path in the root: not the build's
site=/usr/local/lib/python3.12/dist-packages

rehearsal=rehearse-bundle
# shellcheck source=tools/ci/minimal-root.sh
source "$root_dir/tools/ci/minimal-root.sh"
t0=$SECONDS
rehearsal_start rehearsal

# --- 1. the bundle --------------------------------------------------------------------------------
t=$SECONDS
"$root_dir/tools/dev/install-deps.sh" --bundle
"$root_dir/tools/release/gpu-bundle.sh" "$build" "$work" | tee "$work/bundle.txt"
size_line="$(tail -n1 "$work/bundle.txt")"
timed "bundle" "SECONDS - t"

# --- 2. the minimal root --------------------------------------------------------------------------
t=$SECONDS
minimal_root "$root" "$work/debootstrap.log"
timed "minimal root" "SECONDS - t"

# --- 3. the bundle at another path, the stand-in where the target's NVIDIA libraries would be --------
mkdir -p "$root$inside"
tar -xzf "$work/infer-gpu-bundle.tar.gz" -C "$root$inside"
bundle="$inside/infer-gpu-bundle"
have_standin=1
for f in libcudart.so.13 libcudart.so.12 libcudnn.so.9 libcuda.so.1 libnvidia-ml.so.1; do
  [[ -e "$standin/$f" ]] || { have_standin=0; say "the stand-in is not built: $standin/$f missing"; }
done
if ((have_standin)); then
  mkdir -p "$root$site/nvidia/cu13/lib" "$root$site/nvidia/cudnn/lib" "$root$site/nvidia/cuda_runtime/lib"
  cp -L "$standin/libcudart.so.13" "$root$site/nvidia/cu13/lib/"
  cp -L "$standin/libcudart.so.12" "$root$site/nvidia/cuda_runtime/lib/"
  for f in "$standin"/libcudnn*.so.9; do cp -L "$f" "$root$site/nvidia/cudnn/lib/"; done
  cp -L "$standin/libcuda.so.1" "$standin/libnvidia-ml.so.1" "$root/usr/lib/x86_64-linux-gnu/"
  chroot "$root" /sbin/ldconfig
fi

mount_root "$root"

# --- 4. in the root --------------------------------------------------------------------------------
verdict=GREEN
reasons=()
for f in "$root$bundle"/bin/* "$root$bundle"/lib/*.so*; do
  rel="${f#"$root"}"
  if in_root "$root" ldd "$rel" | grep -E 'not found' | grep -vE 'lib(cudart|cudnn|cuda|nvidia-ml)' >&2; then
    verdict=RED; reasons+=("$rel: a library not found in the minimal root (above)")
  fi
done
say "ldd in the root: $([[ $verdict == GREEN ]] && echo "every bundled binary resolves its libraries" || echo "missing libraries")"
sample_out="$(in_root "$root" "$bundle/bin/infer" --device cpu "$bundle/share/infer/samples/ankle-boot.png" 2>&1)" || true
echo "$sample_out" >&2
if [[ "$sample_out" != *": Ankle boot 0."* ]]; then verdict=RED; reasons+=("infer --device cpu in the root did not classify the sample"); fi

t=$SECONDS
logs="$work/gpu-check-logs"
if ((have_standin)); then
  rc=0
  # The stand-in computes on this machine's CPU: the 10k-image accuracy alone takes minutes per
  # precision, so the check gets $INFER_REHEARSAL_BUDGET_S (default 25 minutes) instead of its 8.
  budget="${INFER_REHEARSAL_BUDGET_S:-1500}"
  # The torchvision conformance data at 64x64 (the build's test fixture made it): the minimal root
  # has no python3 to make it, as a GPU machine would.
  conformance=()
  if [[ -f "$build/conformance/64/conformance.json" ]]; then
    mkdir -p "$root/var/tmp/infer-conformance-64"
    cp "$build/conformance/64/"* "$root/var/tmp/infer-conformance-64/"
    conformance=(INFER_CONFORMANCE_DIR=/var/tmp/infer-conformance-64)
  else
    verdict=RED; reasons+=("no $build/conformance/64 (the conformance test fixture's data): that step not rehearsed")
  fi
  in_root "$root" env OUT=/var/tmp/gpu-check-logs INFER_GPU_CHECK_BUDGET_S="$budget" "${conformance[@]}" \
    INFER_CUDA12_LIB_DIRS="$site/nvidia/cudnn/lib:$site/nvidia/cuda_runtime/lib" \
    timeout --kill-after=10 $((budget + 60)) "$bundle/tools/gpu-check.sh" || rc=$?
  mkdir -p "$logs" && cp -r "$root/var/tmp/gpu-check-logs/." "$logs/" 2>/dev/null || true
  ((rc == 0)) || { verdict=RED; reasons+=("gpu-check.sh exit $rc in the root"); }
  grep -qi 'stand-in' "$logs/summary.txt" 2>/dev/null ||
    { verdict=RED; reasons+=("gpu-check.sh's summary does not say it ran on the stand-in"); }
  grep -qE '^\| infer --cuda 12, a sample +\| ok ' "$logs/summary.txt" 2>/dev/null ||
    { verdict=RED; reasons+=("gpu-check.sh did not run the CUDA 12 backend from the bundle"); }
  grep -qE '^\| start-up breakdown +\| ok ' "$logs/summary.txt" 2>/dev/null ||
    { verdict=RED; reasons+=("gpu-check.sh did not print the start-up breakdown"); }
  # Again with --bench-only and the tests-passed file the first run wrote: the suites are skipped,
  # the rest runs and passes.
  if [[ -s "$root/var/tmp/gpu-check-logs/tests-passed" ]]; then
    rc=0
    in_root "$root" env OUT=/var/tmp/gpu-check-bench-only INFER_GPU_CHECK_BUDGET_S="$budget" \
      INFER_CUDA12_LIB_DIRS="$site/nvidia/cudnn/lib:$site/nvidia/cuda_runtime/lib" timeout --kill-after=10 $((budget + 60)) "$bundle/tools/gpu-check.sh" --bench-only \
      /var/tmp/gpu-check-logs/tests-passed || rc=$?
    ((rc == 0)) || { verdict=RED; reasons+=("gpu-check.sh --bench-only exit $rc in the root"); }
    bench_only_summary="$root/var/tmp/gpu-check-bench-only/summary.txt"
    grep -qE '^\| GPU vs CPU backend tests +\| skipped ' "$bench_only_summary" 2>/dev/null ||
      { verdict=RED; reasons+=("gpu-check.sh --bench-only did not skip the test suites"); }
    grep -qE '^\| start-up breakdown +\| ok ' "$bench_only_summary" 2>/dev/null ||
      { verdict=RED; reasons+=("gpu-check.sh --bench-only did not run the start-up breakdown"); }
  elif ((rc == 0)); then
    verdict=RED; reasons+=("gpu-check.sh passed but wrote no tests-passed file")
  fi
  keep="${OUT:-$build}/rehearsal-gpu-check-logs"
  rm -rf "$keep" && cp -r "$logs" "$keep" 2>/dev/null && say "gpu-check logs: $keep"
  if [[ -d "$root/var/tmp/gpu-check-bench-only" && -d "$keep" ]]; then
    cp -r "$root/var/tmp/gpu-check-bench-only" "$keep/bench-only" 2>/dev/null || true
  fi
else
  verdict=RED; reasons+=("no stand-in in $standin (libcudart.so.13 and .12, libcudnn.so.9, libcuda.so.1, libnvidia-ml.so.1): gpu-check.sh not run")
fi
timed "gpu-check.sh in the root" "SECONDS - t"
timed "total" "SECONDS - t0"

echo
echo "=== bundle rehearsal on the CPU stand-in (not a GPU result): $verdict ==="
echo "${size_line#gpu-bundle: }"
printf '  %s\n' "${timings[@]}"
((${#reasons[@]})) && printf '  RED: %s\n' "${reasons[@]}"
[[ $verdict == GREEN ]]
