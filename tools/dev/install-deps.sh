#!/usr/bin/env bash
# Installs the Debian packages infer needs to build and test. Idempotent: packages already
# installed are skipped without touching the network. Run as root (or with sudo available).
#
#   tools/dev/install-deps.sh          build + test dependencies
#   tools/dev/install-deps.sh --train  also PyTorch, numpy and venv, for tools/train/train.py, golden.py, bench.sh
#   tools/dev/install-deps.sh --sanitizers
#                                  also clang 14 and its runtimes (ASan, UBSan, libFuzzer), for the
#                                  sanitizer build and the fuzz targets (.ci/run, tools/dev/fuzz.sh)
#   tools/dev/install-deps.sh --fuzz   the same as --sanitizers
#   tools/dev/install-deps.sh --bundle also patchelf and debootstrap, for tools/release/gpu-bundle.sh (RUNPATH of
#                                  the bundled libraries) and tools/ci/rehearse-bundle.sh (a minimal root)
#   tools/dev/install-deps.sh --windows
#                                  also the mingw-w64 cross compiler (gcc 12, POSIX threads), its zlib
#                                  and wine64, for the Windows build tested under wine (tools/dev/windows.sh)
#   tools/dev/install-deps.sh --containers
#                                  also podman, buildah and runc (with uidmap, fuse-overlayfs, slirp4netns,
#                                  netavark, iptables, catatonit), for the images (tools/deploy/build-images.sh,
#                                  tools/ci/check-container.sh), and /etc/containers/containers.conf.d/50-infer.conf:
#                                  runc as the runtime (crun fails on these machines' rlimits and hybrid
#                                  cgroups), default_ulimits for nofile and nproc, the netavark network
#                                  backend. Rewritten only when its content differs.
#
# The CUDA toolkit and cuDNN are not Debian packages here; they are expected at /usr/local/cuda
# (the build works without them, CPU only).
set -euo pipefail

# The build's packages (tools/dev/build-packages.txt, shared with deploy/container/Containerfile),
# then the tests'.
packages=()
while read -r -a words; do packages+=("${words[@]}"); done < <(sed 's/#.*//' "$(dirname "${BASH_SOURCE[0]}")/build-packages.txt")
packages+=(
  libgtest-dev           # tests
  dataset-fashion-mnist  # tests: the 10k test images for the accuracy check
  libonnx-testdata       # tests: ONNX's operator conformance cases (/usr/share/libonnx-testdata)
  python3-torchvision    # tests: torchvision models exported to ONNX at test time (and PyTorch itself)
  python3-numpy python3-venv  # tests: tools/dev/ort-venv.sh (ONNX Runtime from PyPI beside Debian's numpy)
  python3-dev            # the Python package (python/: its extension module's headers; nanobind from PyPI)
  ccache                 # CMakeLists.txt compiles through it: CI builds the same sources in several folders
)
containers=0
for arg in "$@"; do
  case "$arg" in
    --train) packages+=(python3-torch) ;;
    --sanitizers | --fuzz) packages+=(clang-14 libclang-rt-14-dev) ;;
    --bundle) packages+=(patchelf debootstrap) ;;
    --windows) packages+=(g++-mingw-w64-x86-64-posix binutils-mingw-w64-x86-64 libz-mingw-w64-dev wine64) ;;
    --containers)
      containers=1
      packages+=(podman buildah runc uidmap fuse-overlayfs slirp4netns netavark aardvark-dns iptables catatonit) ;;
    *) echo "install-deps: unknown option $arg (known: --train, --sanitizers, --fuzz, --bundle, --windows, --containers)" >&2; exit 2 ;;
  esac
done

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi

# podman's settings for these machines, as a drop-in beside the packaged defaults.
containers_conf() {
  local conf=/etc/containers/containers.conf.d/50-infer.conf want
  want='# Written by tools/dev/install-deps.sh --containers.
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"

[network]
network_backend = "netavark"'
  if [[ "$(cat "$conf" 2>/dev/null)" != "$want" ]]; then
    echo "install-deps: writing $conf" >&2
    "${sudo_cmd[@]}" mkdir -p "$(dirname "$conf")"
    printf '%s\n' "$want" | "${sudo_cmd[@]}" tee "$conf.tmp" >/dev/null
    "${sudo_cmd[@]}" mv "$conf.tmp" "$conf"
  fi
}

missing=()
for p in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} > 0)); then
  echo "install-deps: installing ${missing[*]}" >&2
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
if ((containers)); then containers_conf; fi
