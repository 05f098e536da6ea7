#!/usr/bin/env bash
# Installs the Debian packages infer needs to build and test. Idempotent: packages already
# installed are skipped without touching the network. Run as root (or with sudo available).
#
#   tools/install-deps.sh          build + test dependencies
#   tools/install-deps.sh --train  also PyTorch and numpy, for tools/train.py and tools/golden.py
#
# The CUDA toolkit and cuDNN are not Debian packages here; they are expected at /usr/local/cuda
# (the build works without them, CPU only).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libopenblas-dev        # sgemm for the CPU backend
  nlohmann-json3-dev     # safetensors headers, --json output
  libtomlplusplus-dev    # model TOML and VERSIONS.toml
  libcli11-dev           # command line
  libssl-dev             # SHA-256 of model files (OpenSSL libcrypto EVP), checked against VERSIONS.toml
  libstb-dev             # image decode and resize (header-only)
  libgtest-dev           # tests
  zlib1g-dev             # tests: reading the gzip'd Fashion-MNIST files, writing PNG headers
  dataset-fashion-mnist  # tests: the 10k test images for the accuracy check
)
if [[ "${1:-}" == "--train" ]]; then
  packages+=(python3-torch python3-numpy)
fi

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
