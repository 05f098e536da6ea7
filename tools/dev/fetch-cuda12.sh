#!/usr/bin/env bash
# Lays out what the CUDA 12 GPU backend (libinfer_cudnn_cu12.so) is built with, from NVIDIA's
# CUDA 12 wheels on PyPI, into ${INFER_CUDA12_ROOT:-${INFER_CACHE:-~/.cache/infer}/cuda12}:
#
#   include/  the CUDA 12.0 runtime headers (cuda.h, cuda_runtime.h, cuda_fp16.h ...), the crt/
#             headers they include (from the nvcc wheel) and the cuDNN 9.10.2 headers
#   lib/      libcudart.so.12 (12.0), libcudnn.so.9 (the 9.10.2 front library, which loads its
#             sub-libraries at run time) and NVRTC 12.0 (libnvrtc.so.12, libnvrtc-builtins.so.12.0),
#             each with its unversioned .so link for the linker
#   VERSIONS  what was fetched, one `wheel version` per line
#
# Only the members named below are downloaded (tools/dev/fetch_wheel.py: HTTP range requests, each
# member checked against the wheel's RECORD sha256), about 25 MB, cached in
# ${INFER_WHEEL_CACHE:-~/.cache/infer/wheels}; a second run needs no network. The layout is built
# in a temporary folder and renamed into place, so an interrupted run leaves no half layout.
#
# Why these versions (docs/gpu.md, "The CUDA 12 backend"): the 12.0 runtime and NVRTC 12.0 make
# code that every CUDA 12 driver (>= 525.60.13) runs; NVRTC 12.0 writes PTX ISA 8.0 for
# compute_50, which those drivers JIT for every GPU from Maxwell on. cuDNN 9.10.2 is the last
# cuDNN for CUDA 12 that still serves compute capability 5.0-7.2 (manifest/facts.toml).
#
# Exit status: 0 done (or already there), 3 network failure, 4 a hash mismatch (fetch_wheel.py's).
set -euo pipefail

root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${INFER_CACHE:-$HOME/.cache/infer}"
dest="${INFER_CUDA12_ROOT:-$cache/cuda12}"
export INFER_WHEEL_CACHE="${INFER_WHEEL_CACHE:-$cache/wheels}"
platform=manylinux_x86_64

# wheel version members...
wheels=(
  "nvidia-cuda-runtime-cu12 12.0.146 nvidia/cuda_runtime/include/* nvidia/cuda_runtime/lib/libcudart.so.12"
  "nvidia-cuda-nvcc-cu12 12.0.140 nvidia/cuda_nvcc/include/crt/*"
  "nvidia-cudnn-cu12 9.10.2.21 nvidia/cudnn/include/cudnn*.h nvidia/cudnn/lib/libcudnn.so.9"
  "nvidia-cuda-nvrtc-cu12 12.0.140 nvidia/cuda_nvrtc/include/nvrtc.h nvidia/cuda_nvrtc/lib/libnvrtc*.so.12*"
)

want="$(printf '%s\n' "${wheels[@]}" | awk '{print $1, $2}')"
if [[ -f "$dest/VERSIONS" && "$(cat "$dest/VERSIONS")" == "$want" ]]; then
  echo "fetch-cuda12: $dest is up to date" >&2
  exit 0
fi

mkdir -p "$(dirname "$dest")"   # a fresh machine has no ~/.cache/infer yet
tmp="$(mktemp -d "${dest}.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/include" "$tmp/lib"
for line in "${wheels[@]}"; do
  read -r -a w <<<"$line"
  name="${w[0]}" version="${w[1]}"
  python3 "$root_dir/tools/dev/fetch_wheel.py" "$name" "$version" "$platform" "${w[@]:2}" >/dev/null
  unpacked="$INFER_WHEEL_CACHE/$name-$version-$platform/nvidia"
  for inc in "$unpacked"/*/include; do
    [[ -d "$inc" ]] && cp -R "$inc/." "$tmp/include/"
  done
  for lib in "$unpacked"/*/lib; do
    [[ -d "$lib" ]] && find "$lib" -maxdepth 1 -name 'lib*.so*' -exec cp {} "$tmp/lib/" \;
  done
done
find "$tmp/include" -name '__init__.py' -delete
rm -rf "$tmp/include/__pycache__"
chmod 0755 "$tmp"/lib/*.so*
for lib in libcudart.so.12 libcudnn.so.9 libnvrtc.so.12; do
  ln -s "$lib" "$tmp/lib/${lib%.*}"
done
printf '%s\n' "$want" >"$tmp/VERSIONS"

rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
echo "fetch-cuda12: laid out $dest ($(du -sh "$dest" | cut -f1))" >&2
