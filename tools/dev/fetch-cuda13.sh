#!/usr/bin/env bash
# Lays out a CUDA 13.0 toolkit that builds the CUDA 13 GPU backend (libinfer_cudnn_cu13.so), from
# NVIDIA's CUDA 13 wheels on PyPI, into ${INFER_CUDA13_ROOT:-${INFER_CACHE:-~/.cache/infer}/cuda13}:
# for a machine without the toolkit at /usr/local/cuda, such as deploy/container/Containerfile's build
# stage. The toolkit's own layout, so that nvcc's nvcc.profile and CMake's FindCUDAToolkit find it:
#
#   bin/      nvcc, cudafe++, ptxas, fatbinary, nvlink (nvidia-cuda-nvcc)
#   nvvm/     cicc and libdevice (nvidia-nvvm)
#   include/  the CUDA runtime headers, crt/ (nvidia-cuda-crt), cccl/nv/ (<nv/target>, which
#             cuda_fp16.h includes; the rest of CCCL is not needed) and the cuDNN 9.19 headers
#   lib/      libcudart.so.13 and the static runtime CMake's compiler check links, libcudnn.so.9 (the
#             front library, which is all the link needs), each with its unversioned .so link
#   lib64 -> lib, targets/x86_64-linux/{include,lib} -> ../../{include,lib}
#   VERSIONS  what was fetched, one `wheel version` per line
#
# The versions are those of the toolkit this project's CUDA 13 backend is built and validated with
# (VERSIONS.toml: cuda.built 13.0.*, cudnn.built 9.19.*). Only the members named below are
# downloaded (tools/dev/fetch_wheel.py, each checked against the wheel's RECORD sha256): about
# 200 MB unpacked, cached in ${INFER_WHEEL_CACHE:-~/.cache/infer/wheels}. Not a runtime: cuDNN's
# sub-libraries and cuBLAS are not fetched. Built in a temporary folder and renamed into place.
#
# Build with it: PATH="$INFER_CUDA13_ROOT/bin:$PATH" CUDNN_ROOT="$INFER_CUDA13_ROOT" cmake ...
# Exit status: 0 done (or already there), 3 network failure, 4 a hash mismatch (fetch_wheel.py's).
set -euo pipefail

root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${INFER_CACHE:-$HOME/.cache/infer}"
dest="${INFER_CUDA13_ROOT:-$cache/cuda13}"
export INFER_WHEEL_CACHE="${INFER_WHEEL_CACHE:-$cache/wheels}"
platform=manylinux_x86_64

# wheel version members... (paths under nvidia/cu13/ keep their place in the toolkit; cuDNN's
# nvidia/cudnn/{include,lib} join include/ and lib/)
wheels=(
  "nvidia-cuda-nvcc 13.0.88 nvidia/cu13/bin/nvcc nvidia/cu13/bin/nvcc.profile nvidia/cu13/bin/cudafe++ nvidia/cu13/bin/ptxas nvidia/cu13/bin/fatbinary nvidia/cu13/bin/nvlink nvidia/cu13/bin/bin2c nvidia/cu13/bin/crt/* nvidia/cu13/include/*"
  "nvidia-cuda-crt 13.0.88 nvidia/cu13/include/crt/*"
  "nvidia-nvvm 13.0.88 nvidia/cu13/nvvm/bin/cicc nvidia/cu13/nvvm/libdevice/*"
  "nvidia-cuda-runtime 13.0.96 nvidia/cu13/include/* nvidia/cu13/lib/libcudart.so.13 nvidia/cu13/lib/libcudart_static.a nvidia/cu13/lib/libcudadevrt.a"
  "nvidia-cuda-culibos 13.0.85 nvidia/cu13/lib/libculibos.a"
  "nvidia-cuda-cccl 13.0.85 nvidia/cu13/include/cccl/nv/*"
  "nvidia-cudnn-cu13 9.19.0.56 nvidia/cudnn/include/cudnn*.h nvidia/cudnn/lib/libcudnn.so.9"
)

want="$(printf '%s\n' "${wheels[@]}" | awk '{print $1, $2}')"
if [[ -f "$dest/VERSIONS" && "$(cat "$dest/VERSIONS")" == "$want" ]]; then
  echo "fetch-cuda13: $dest is up to date" >&2
  exit 0
fi

mkdir -p "$(dirname "$dest")"
tmp="$(mktemp -d "${dest}.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
for line in "${wheels[@]}"; do
  read -r -a w <<<"$line"
  name="${w[0]}" version="${w[1]}"
  python3 "$root_dir/tools/dev/fetch_wheel.py" "$name" "$version" "$platform" "${w[@]:2}" >/dev/null
  unpacked="$INFER_WHEEL_CACHE/$name-$version-$platform/nvidia"
  for part in "$unpacked"/cu13 "$unpacked"/cudnn; do
    [[ -d "$part" ]] && cp -R "$part/." "$tmp/"
  done
done
find "$tmp" -name '__init__.py' -delete
find "$tmp" -name '__pycache__' -prune -exec rm -rf {} +
chmod 0755 "$tmp"/bin/* "$tmp"/nvvm/bin/* "$tmp"/lib/*.so*
chmod 0644 "$tmp"/bin/nvcc.profile
chmod -R a+rX "$tmp"
ln -s libcudart.so.13 "$tmp/lib/libcudart.so"
ln -s libcudnn.so.9 "$tmp/lib/libcudnn.so"
ln -s lib "$tmp/lib64"
mkdir -p "$tmp/targets/x86_64-linux"
ln -s ../../include "$tmp/targets/x86_64-linux/include"
ln -s ../../lib "$tmp/targets/x86_64-linux/lib"
printf '%s\n' "$want" >"$tmp/VERSIONS"

rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
echo "fetch-cuda13: laid out $dest ($(du -sh "$dest" | cut -f1))" >&2
