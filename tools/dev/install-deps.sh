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
#
# The CUDA toolkit and cuDNN are not Debian packages here; they are expected at /usr/local/cuda
# (the build works without them, CPU only).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libopenblas-dev        # sgemm for the plain CPU kernels (CpuKernels::Plain)
  libdnnl-dev            # oneDNN: the CPU backend's JIT primitives (--cpu-kernels onednn)
  nlohmann-json3-dev     # safetensors headers, --json output
  libtomlplusplus-dev    # model TOML and VERSIONS.toml
  libcli11-dev           # command line
  libcpp-httplib-dev     # infer serve: HTTP/1.1 server (serve/http_listener.cpp); the tests' HTTP client
  libgrpc++-dev protobuf-compiler-grpc  # infer serve: gRPC (serve/grpc_server.cpp, serve/inference.proto)
  libssl-dev             # SHA-256 of model files (OpenSSL libcrypto EVP), checked against VERSIONS.toml
  libstb-dev             # image decode and resize (header-only)
  libgtest-dev           # tests
  zlib1g-dev             # PNG decompression-bomb check; tests: gzip'd Fashion-MNIST, writing PNGs
  dataset-fashion-mnist  # tests: the 10k test images for the accuracy check
  libonnx-dev            # ONNX import: ONNX's schema, /usr/include/onnx/onnx.proto (formats/CMakeLists.txt)
  protobuf-compiler libprotobuf-dev  # protoc compiles that schema; the lite runtime parses models
  libonnx-testdata       # tests: ONNX's operator conformance cases (/usr/share/libonnx-testdata)
  python3-torchvision    # tests: torchvision models exported to ONNX at test time (and PyTorch itself)
  python3-numpy python3-venv  # tests: tools/dev/ort-venv.sh (ONNX Runtime from PyPI beside Debian's numpy)
)
for arg in "$@"; do
  case "$arg" in
    --train) packages+=(python3-torch) ;;
    --sanitizers | --fuzz) packages+=(clang-14 libclang-rt-14-dev) ;;
    --bundle) packages+=(patchelf debootstrap) ;;
    --windows) packages+=(g++-mingw-w64-x86-64-posix binutils-mingw-w64-x86-64 libz-mingw-w64-dev wine64) ;;
    *) echo "install-deps: unknown option $arg (known: --train, --sanitizers, --fuzz, --bundle, --windows)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
echo "install-deps: installing ${missing[*]}" >&2
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
