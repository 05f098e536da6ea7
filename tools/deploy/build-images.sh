#!/usr/bin/env bash
# Builds infer's container images (deploy/container/Containerfile) with podman, offline but for apt's
# mirror and PyPI, as root:
#
#   tools/deploy/build-images.sh                 the CPU image: localhost/infer:<version>-cpu
#   tools/deploy/build-images.sh --gpu           and the GPU image: localhost/infer:<version>-gpu-cu13
#   tools/deploy/build-images.sh --gpu --cuda 12     ... with the CUDA 12 backend instead: -gpu-cu12
#   tools/deploy/build-images.sh --gpu-only ...  the GPU image alone
#   --base IMAGE   the base (default $INFER_IMAGE_BASE, else localhost/infer-base:bookworm, made here
#                  from tools/ci/minimal-root.sh's debootstrap cache when missing); a registry image
#                  such as docker.io/library/debian:bookworm-slim where a registry is reachable
#
# Size targets (what the images hold: Debian 12 minbase, infer.deb and the Debian libraries it
# declares; the GPU image adds one CUDA major's runtime, cuDNN, cuBLASLt and NVRTC):
#   -cpu       <= 300 MB
#   -gpu-cu13  <= 1.6 GB  (cuDNN 9.19 for CUDA 13 is 0.5 GB, cuBLASLt 13 0.55 GB, NVRTC 0.1 GB)
#   -gpu-cu12  <= 2.4 GB  (cuDNN 9.10 for CUDA 12 1.05 GB, it still carries Maxwell to Volta, cuBLASLt 12 0.75 GB)
# Each image's size is printed at the end, and a size over its target is a warning.
#
# The podman and buildah packages and their settings: tools/dev/install-deps.sh --containers (run
# here). The host's CA bundle ($SSL_CERT_FILE, else /etc/ssl/certs/ca-certificates.crt), which HTTPS
# to PyPI needs on these machines, is passed as a build secret: mounted for the fetching steps only,
# never in a layer. The base is never pulled when it is local (--pull=never). Build layers and the
# wheels' cache stay in podman's storage, so a second build with the same sources takes seconds.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
say() { echo "build-images: $*" >&2; }

cpu=1 gpu=0 cuda=13
base="${INFER_IMAGE_BASE:-localhost/infer-base:bookworm}"
while (($#)); do
  case "$1" in
    --gpu) gpu=1 ;;
    --gpu-only) gpu=1 cpu=0 ;;
    --cuda) cuda="${2:?--cuda 13|12}"; shift ;;
    --base) base="${2:?--base IMAGE}"; shift ;;
    *) echo "usage: tools/deploy/build-images.sh [--gpu | --gpu-only] [--cuda 13|12] [--base IMAGE]" >&2; exit 2 ;;
  esac
  shift
done
[[ "$cuda" == 13 || "$cuda" == 12 ]] || { say "--cuda is 13 or 12, not $cuda"; exit 2; }
[[ $(id -u) -eq 0 ]] || { say "run as root (podman's storage under /var/lib/containers)"; exit 2; }
"$root/tools/dev/install-deps.sh" --containers

# --- the local base: tools/ci/minimal-root.sh's debootstrap minbase, less apt's downloads and lists,
# the manuals and the translations (about 120 MB instead of 200) ---------------------------------
t=$SECONDS
if [[ "$base" == localhost/infer-base:* ]] && ! podman image exists "$base"; then
  # shellcheck disable=SC2034  # the prefix of minimal-root.sh's messages
  rehearsal=build-images
  # shellcheck source=tools/ci/minimal-root.sh
  source "$root/tools/ci/minimal-root.sh"
  work="$(mktemp -d /var/tmp/infer-base.XXXXXX)"
  trap 'rm -rf --one-file-system "$work"' EXIT
  cache="${INFER_REHEARSAL_CACHE:-/var/cache/infer-rehearsal}/minbase-bookworm.tar"
  if [[ ! -f "$cache" ]]; then
    "$root/tools/dev/install-deps.sh" --bundle   # debootstrap
    minimal_root "$work/root" "$work/debootstrap.log"
  fi
  if [[ -f "$cache" ]]; then
    cp "$cache" "$work/base.tar"
  else   # the cache could not be written: the root made above
    tar -cf "$work/base.tar" -C "$work/root" .
  fi
  tar -tf "$work/base.tar" | grep -E '^\./(var/cache/apt/archives/.*\.deb|var/lib/apt/lists/.*_.*|usr/share/(man|locale|doc)/.*[^/])$' |
    grep -v '/copyright$' >"$work/drop.txt" || true
  tar --delete -f "$work/base.tar" -T "$work/drop.txt"
  podman import --change 'CMD ["/bin/bash"]' "$work/base.tar" "$base" >/dev/null
  rm -rf --one-file-system "$work"
  trap - EXIT
  say "base $base imported from $cache in $((SECONDS - t)) s ($(podman image inspect --format '{{.Size}}' "$base" | awk '{printf "%.0f MB", $1 / 1e6}'))"
fi
pull=()
if [[ "$base" == localhost/* ]]; then pull=(--pull=never); fi

# --- the build arguments: the labels' values -------------------------------------------------------
version="$(sed -n 's/^project(infer VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
[[ -n "$version" ]] || { say "no 'project(infer VERSION x.y.z' in CMakeLists.txt"; exit 1; }
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
if [[ "$revision" != unknown && -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
  revision="$revision-dirty"   # built from a working tree with changes not committed
fi
source_url="$(git remote get-url origin 2>/dev/null || true)"
created="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
versions_sha256="$(sha256sum VERSIONS.toml | cut -d' ' -f1)"
ca="${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}"
secret=()
if [[ -s "$ca" ]]; then secret=(--secret "id=ca-bundle,src=$ca"); fi

build() {   # build TARGET TAG [ARGS...]
  local target="$1" tag="$2" start=$SECONDS
  shift 2
  say "building $tag (target $target, base $base)"
  podman build "${pull[@]}" "${secret[@]}" -f deploy/container/Containerfile --target "$target" -t "$tag" \
    --build-arg BASE="$base" --build-arg VERSION="$version" --build-arg REVISION="$revision" \
    --build-arg CREATED="$created" --build-arg SOURCE="$source_url" \
    --build-arg VERSIONS_SHA256="$versions_sha256" "$@" . >&2
  say "$tag built in $((SECONDS - start)) s"
}

sizes=()
size_of() {   # size_of TAG TARGET_MB
  local mb
  mb="$(podman image inspect --format '{{.Size}}' "$1" | awk '{printf "%.0f", $1 / 1e6}')"
  sizes+=("$1: $mb MB (target <= $2 MB)")
  if ((mb > $2)); then say "warning: $1 is $mb MB, over its target of $2 MB"; fi
}
if ((cpu)); then
  build cpu "localhost/infer:$version-cpu"
  size_of "localhost/infer:$version-cpu" 300
fi
if ((gpu)); then
  build gpu "localhost/infer:$version-gpu-cu$cuda" --build-arg CUDA_MAJOR="$cuda"
  if [[ "$cuda" == 13 ]]; then size_of "localhost/infer:$version-gpu-cu13" 1600; else size_of "localhost/infer:$version-gpu-cu12" 2400; fi
fi
printf '%s\n' "${sizes[@]}"
