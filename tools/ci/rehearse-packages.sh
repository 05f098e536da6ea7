#!/usr/bin/env bash
# Rehearses the packages (cmake/Packaging.cmake) in a minimal Debian root that has none of this
# machine's packages (tools/ci/minimal-root.sh). Called by .ci/run; run as root (chroot, mount, apt).
#
#   tools/ci/rehearse-packages.sh BUILD_DIR
#
# 1. tools/release/package.sh: the infer, infer-dev, infer-gpu-cu13 and infer-gpu-cu12 .debs and the
#    .tar.gz, built with the
#    "package" preset (build-package/: installed under /usr, libdir lib/x86_64-linux-gnu). BUILD_DIR
#    is a build with the tests (tools/dev/build.sh), whose CPU stand-in (standin/lib) step 3 uses.
#    No file in them holds a path of this machine's source or build trees (`strings`).
# 2. In the root: `apt-get install ./infer_*.deb`, which brings the Debian libraries it declares
#    (from the mirror the root's apt uses), then
#    - infer --check: the report, exit 0 (the machine fits VERSIONS.toml) or 5 (it does not: no
#      NVIDIA driver there), never a crash;
#    - infer on a sample: classified on the CPU (the notice says why not the GPU).
# 2b. infer-dev.deb, with cmake and g++ from the mirror: examples/ configured with find_package(infer)
#    against /usr, built, and run on the sample: it prints what infer prints.
# 3. infer-gpu-cu13 and infer-gpu-cu12 installed too, the CPU stand-in for the CUDA runtime and
#    cuDNN (tests/standin, not a GPU) where NVIDIA's CUDA packages put theirs: libcudart.so.13 at
#    /usr/local/cuda/lib64, libcudart.so.12 at /usr/local/cuda-12/lib64 (both known to the loader
#    through /etc/ld.so.conf.d, as NVIDIA's packages arrange), cuDNN with the first; the driver's
#    libraries in /usr/lib/x86_64-linux-gnu: infer
#    --device gpu runs the CUDA 13 backend on a 580 driver and the CUDA 12 one on a 550 driver
#    (INFER_STANDIN_DRIVER_CUDA), so each packaged module is found where GNUInstallDirs put it
#    (/usr/lib/x86_64-linux-gnu/infer) and finds NVIDIA's libraries where they are.
# 4. The packages purged and the .tar.gz unpacked at another path: its infer classifies the sample
#    with its own model (--version names it): a relocated tree.
# Ends with GREEN or RED and the time of each part; exit 0 only if GREEN.
set -euo pipefail
root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ $# -eq 1 ]] || { echo "usage: tools/ci/rehearse-packages.sh BUILD_DIR (a build with the stand-in)" >&2; exit 2; }
build="$(cd "$1" && pwd)"
[[ $(id -u) -eq 0 ]] || { echo "rehearse-packages: run as root (chroot, mount, apt)" >&2; exit 2; }
rehearsal=rehearse-packages
# shellcheck source=tools/ci/minimal-root.sh
source "$root_dir/tools/ci/minimal-root.sh"
standin="$build/standin/lib"
sample=/usr/share/infer/samples/ankle-boot.png
t0=$SECONDS
rehearsal_start packages

# --- 1. the packages ------------------------------------------------------------------------------
t=$SECONDS
"$root_dir/tools/dev/install-deps.sh" --bundle   # debootstrap
"$root_dir/tools/release/package.sh" >"$work/package.txt" 2>"$work/package.log" || { cat "$work/package.log" >&2; say "tools/release/package.sh failed"; exit 1; }
sed 's/^/  /' "$work/package.txt" >&2
packages="$root_dir/build-package/packages"
# No file in a package holds a path of this machine's source or build trees.
mkdir -p "$work/contents"
for deb in "$packages"/*.deb; do dpkg-deb -x "$deb" "$work/contents"; done
tar -xzf "$packages"/infer-*-Linux.tar.gz -C "$work/contents"
if "$root_dir/tools/dev/find-build-paths.sh" "$work/contents" "$root_dir" >"$work/paths.txt"; then
  say "no packaged file holds $root_dir ($(find "$work/contents" -type f | wc -l) files)"
else
  cat "$work/paths.txt" >&2
  red "packaged files hold $root_dir (above)"
fi
timed "tools/release/package.sh" "SECONDS - t"

# --- 2. infer.deb in a minimal root ---------------------------------------------------------------
t=$SECONDS
minimal_root "$root" "$work/debootstrap.log"
mount_root "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
mkdir -p "$root/tmp/packages"
cp "$packages"/*.deb "$packages"/*.tar.gz "$root/tmp/packages/"
timed "minimal root" "SECONDS - t"
t=$SECONDS
apt_get() { in_root "$root" env DEBIAN_FRONTEND=noninteractive apt-get -qq -o=Dpkg::Use-Pty=0 "$@"; }
apt_get update >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; say "apt-get update failed in the root"; exit 1; }
deb=("$root"/tmp/packages/infer_*_amd64.deb)
if apt_get install -y --no-install-recommends "${deb[0]#"$root"}" >>"$work/apt.log" 2>&1; then
  say "infer.deb installed with: $(in_root "$root" dpkg-query -W -f='${Depends}' infer)"
else
  tail -n 30 "$work/apt.log" >&2
  red "apt-get install infer.deb failed in the minimal root (above)"
fi
timed "apt-get install infer.deb" "SECONDS - t"

rc=0
in_root "$root" infer --check >"$work/check.txt" 2>&1 || rc=$?
sed 's/^/  /' "$work/check.txt" >&2
if [[ $rc -ne 0 && $rc -ne 5 ]]; then red "infer --check exit $rc in the root (0 or 5 expected)"; fi
grep -q 'driver' "$work/check.txt" || red "infer --check printed no report"
say "infer --check: exit $rc"
out="$(in_root "$root" infer "$sample" 2>&1)" || red "infer $sample failed in the root"
echo "$out" | sed 's/^/  /' >&2
[[ "$out" == *": Ankle boot 0."*"[cpu]"* ]] || red "infer did not classify $sample on the CPU"

# --- 2b. infer-dev.deb: the example built against the installed package ----------------------------
t=$SECONDS
dev=("$root"/tmp/packages/infer-dev_*_amd64.deb)
mkdir -p "$root/tmp/example"
cp "$root_dir/examples/CMakeLists.txt" "$root_dir/examples/classify.cpp" "$root/tmp/example/"
if apt_get install -y --no-install-recommends cmake make g++ "${dev[0]#"$root"}" >>"$work/apt.log" 2>&1 &&
  in_root "$root" cmake -S /tmp/example -B /tmp/example/build >>"$work/example.log" 2>&1 &&
  in_root "$root" cmake --build /tmp/example/build >>"$work/example.log" 2>&1; then
  example="$(in_root "$root" /tmp/example/build/classify "$sample" 2>"$work/example.err")" || true
  command="$(in_root "$root" infer "$sample" 2>/dev/null)" || true
  if [[ -z "$example" || "$example" != "$command" ]]; then
    cat "$work/example.err" >&2
    red "the example built against infer-dev prints '$example' (its stderr above), infer '$command'"
  fi
  say "the example, built against infer-dev with find_package(infer), prints what infer prints: $example"
else
  tail -n 20 "$work/apt.log" "$work/example.log" >&2
  red "building the example against infer-dev in the root failed (above)"
fi
timed "infer-dev and the example" "SECONDS - t"

# --- 3. infer-gpu-cu13.deb and infer-gpu-cu12.deb, on the stand-in where NVIDIA's libraries go -----
gpu_debs=("$root"/tmp/packages/infer-gpu-cu13_*_amd64.deb "$root"/tmp/packages/infer-gpu-cu12_*_amd64.deb)
if [[ -f "${gpu_debs[0]}" && -f "${gpu_debs[1]}" && -f "$standin/libcudnn.so.9" && -f "$standin/libcudart.so.12" ]]; then
  in_root "$root" dpkg -i "${gpu_debs[0]#"$root"}" "${gpu_debs[1]#"$root"}" >>"$work/apt.log" 2>&1 ||
    red "dpkg -i infer-gpu-cu13.deb infer-gpu-cu12.deb failed"
  mkdir -p "$root/usr/local/cuda/lib64" "$root/usr/local/cuda-12/lib64"
  cp -L "$standin/libcudart.so.13" "$standin"/libcudnn*.so.9 "$root/usr/local/cuda/lib64/"
  cp -L "$standin/libcudart.so.12" "$root/usr/local/cuda-12/lib64/"
  cp -L "$standin/libcuda.so.1" "$standin/libnvidia-ml.so.1" "$root/usr/lib/x86_64-linux-gnu/"
  # As NVIDIA's CUDA packages do, the toolkits' library folders are made known to the loader.
  printf '%s\n' /usr/local/cuda/lib64 /usr/local/cuda-12/lib64 >"$root/etc/ld.so.conf.d/cuda-rehearsal.conf"
  in_root "$root" ldconfig 2>/dev/null  # (it notes that the copied libraries are not links)
  for driver in 13000:cu13 12040:cu12; do
    out="$(in_root "$root" env INFER_STANDIN_DRIVER_CUDA="${driver%%:*}" infer --device gpu "$sample" 2>&1)" ||
      red "infer --device gpu failed in the root with a driver of CUDA ${driver%%:*}: $out"
    echo "$out" | sed 's/^/  /' >&2
    [[ "$out" == *": Ankle boot 0."*"[gpu (${driver#*:}): "*"stand-in"* ]] ||
      red "infer --device gpu did not run the ${driver#*:} backend on the stand-in (driver CUDA ${driver%%:*})"
  done
  say "infer-gpu-cu13: $(in_root "$root" dpkg -L infer-gpu-cu13 | grep '\.so$')"
  say "infer-gpu-cu12: $(in_root "$root" dpkg -L infer-gpu-cu12 | grep '\.so$')"
  [[ "$(in_root "$root" dpkg -L infer)" == *"/usr/lib/x86_64-linux-gnu/libinfer.so."* ]] ||
    red "libinfer.so is not in the multiarch libdir /usr/lib/x86_64-linux-gnu"
else
  red "no infer-gpu-cu13 or infer-gpu-cu12 package, or no stand-in ($standin) to rehearse them with"
fi

# --- 4. the tarball, relocated ----------------------------------------------------------------------
# The packages are purged first, so that nothing under /usr can stand in for the tree's own files.
in_root "$root" dpkg --purge infer-gpu-cu13 infer-gpu-cu12 infer-dev infer >>"$work/apt.log" 2>&1 ||
  red "dpkg --purge infer-gpu-cu13 infer-gpu-cu12 infer-dev infer failed"
[[ ! -e "$root/usr/share/infer" ]] || red "/usr/share/infer is still there after the purge"
mkdir -p "$root/opt/somewhere/else"
tar -xzf "$root"/tmp/packages/infer-*-Linux.tar.gz -C "$root/opt/somewhere/else"
tree=("$root"/opt/somewhere/else/infer-*-Linux)
tree="${tree[0]#"$root"}"
if [[ ! -x "$root$tree/bin/infer" ]]; then
  red "the tarball has no bin/infer"
else
  out="$(in_root "$root" "$tree/bin/infer" --device cpu "$tree/share/infer/samples/ankle-boot.png" 2>&1)" ||
    red "the tarball's infer failed: $out"
  echo "$out" | sed 's/^/  /' >&2
  [[ "$out" == *": Ankle boot 0."* ]] || red "the tarball's infer (at $tree) did not classify the sample"
  model_line="$(in_root "$root" "$tree/bin/infer" --version 2>&1 | grep 'model:')" || true
  [[ "$model_line" == *"$tree/share/infer/weights/fashion.toml"* ]] ||
    red "the tarball's infer does not read its own model: $model_line"
fi
timed "total" "SECONDS - t0"

echo
echo "=== packages rehearsed in a minimal root: $verdict ==="
printf '  %s\n' "${timings[@]}"
((${#reasons[@]})) && printf '  RED: %s\n' "${reasons[@]}"
[[ $verdict == GREEN ]]
