#!/usr/bin/env bash
# Lays out the NVIDIA libraries a GPU backend runs on, from NVIDIA's PyPI wheels (as PyTorch ships
# them), for the GPU image (deploy/container/Containerfile, stage nvidia-runtime):
#
#   deploy/container/nvidia-runtime.sh MAJOR DEST      (MAJOR: 13 or 12)
#   -> DEST/lib/       the CUDA runtime, cuDNN 9 with every sub-library, cuBLASLt (which cuDNN's
#                      engines load) and NVRTC (cuDNN's runtime-compiled engines)
#      DEST/licenses/  each wheel's license, named after the wheel
#      DEST/VERSIONS   `wheel version` per line
#
# Exact versions, each satisfying VERSIONS.toml for its backend:
#   13: CUDA runtime 13.0 (cuda.runtime 13.*), cuDNN 9.19.0 for CUDA 13 (cudnn.version >=9.19, <10,
#       cuda_major 13): the versions the CUDA 13 backend is built with (tools/dev/fetch-cuda13.sh),
#       cuBLAS 13.1 and NVRTC 13.0 of the same toolkit.
#   12: CUDA runtime 12.0 (the one the CUDA 12 backend is built against, tools/dev/fetch-cuda12.sh,
#       so the driver floor stays 525.60.13), cuDNN 9.10.2 for CUDA 12 (>=9.10, <10: the last to serve
#       compute capability 5.0-7.2), with the cuBLAS 12.8 and NVRTC 12.8 that PyTorch's CUDA 12.8
#       wheels pair with that cuDNN.
# Only the libraries are fetched (tools/dev/fetch_wheel.py: the wheels' members, each checked against
# the wheel's RECORD sha256), never headers, static libraries or cuBLAS itself (cuDNN loads cuBLASLt
# alone). HTTPS verification uses SSL_CERT_FILE when it is set.
set -euo pipefail
root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ $# -eq 2 ]] || { echo "usage: nvidia-runtime.sh 13|12 DEST" >&2; exit 2; }
major="$1" dest="$2"
platform=manylinux_x86_64

# wheel version members...
case "$major" in
  13) wheels=(
        "nvidia-cuda-runtime 13.0.96 nvidia/cu13/lib/libcudart.so.13 *.dist-info/licenses/*"
        "nvidia-cudnn-cu13 9.19.0.56 nvidia/cudnn/lib/libcudnn*.so.9 *.dist-info/licenses/*"
        "nvidia-cublas 13.1.0.3 nvidia/cu13/lib/libcublasLt.so.13 *.dist-info/licenses/*"
        "nvidia-cuda-nvrtc 13.0.88 nvidia/cu13/lib/libnvrtc.so.13 nvidia/cu13/lib/libnvrtc-builtins.so.13.0 *.dist-info/licenses/*"
      ) ;;
  12) wheels=(
        "nvidia-cuda-runtime-cu12 12.0.146 nvidia/cuda_runtime/lib/libcudart.so.12 *.dist-info/License.txt"
        "nvidia-cudnn-cu12 9.10.2.21 nvidia/cudnn/lib/libcudnn*.so.9 *.dist-info/licenses/*"
        "nvidia-cublas-cu12 12.8.4.1 nvidia/cublas/lib/libcublasLt.so.12 *.dist-info/License.txt"
        "nvidia-cuda-nvrtc-cu12 12.8.93 nvidia/cuda_nvrtc/lib/libnvrtc.so.12 nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.8 *.dist-info/License.txt"
      ) ;;
  *) echo "nvidia-runtime.sh: MAJOR is 13 or 12, not '$major'" >&2; exit 2 ;;
esac

mkdir -p "$dest/lib" "$dest/licenses"
for line in "${wheels[@]}"; do
  read -r -a w <<<"$line"
  name="${w[0]}" version="${w[1]}"
  # Quoted globs: fetch_wheel.py matches them against the wheel's members.
  python3 "$root_dir/tools/dev/fetch_wheel.py" "$name" "$version" "$platform" "${w[@]:2}" >"$dest/members.txt"
  while read -r f; do
    case "$f" in
      */lib/*) cp "$f" "$dest/lib/" ;;
      *) cp "$f" "$dest/licenses/$name-$version-$(basename "$f")" ;;
    esac
  done <"$dest/members.txt"
  echo "$name $version" >>"$dest/VERSIONS"
done
rm -f "$dest/members.txt"
chmod 0755 "$dest"/lib/*
chmod 0644 "$dest"/licenses/* "$dest/VERSIONS"
echo "nvidia-runtime: CUDA $major libraries in $dest ($(du -sh "$dest" | cut -f1))" >&2
