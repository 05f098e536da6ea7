#!/usr/bin/env bash
# Makes the device-check bundle: a self-contained folder (and a .tar.gz of it) that runs
# tools/release/gpu-check.sh from any path on a bare Ubuntu 24.04 with the NVIDIA driver, CUDA 13 and a
# Python with PyTorch and the nvidia-cudnn-cu13 wheel, where nothing can be installed.
#
#   tools/release/gpu-bundle.sh [BUILD_DIR [OUT_DIR]]    (default: build, and BUILD_DIR)
#   -> OUT_DIR/infer-gpu-bundle/ and OUT_DIR/infer-gpu-bundle.tar.gz; prints their sizes
#
#   bin/    infer (and infer-serve, which `infer serve` runs), infer-bench, infer-launch-floor and the test executables
#           that matter on a GPU
#   lib/    both GPU backends, libinfer_cudnn_cu13.so and libinfer_cudnn_cu12.so (infer looks in
#           ../lib too), and the shared libraries the binaries need that such a machine lacks:
#           OpenBLAS and its libgfortran and libquadmath, oneDNN and its libgomp and libOpenCL (an
#           ICD loader it links, never used), toml++, libcrypto, and infer serve's HTTP and gRPC
#           libraries (cpp-httplib, OpenSSL, brotli, gRPC, protobuf, abseil). Never libc, libstdc++, libm,
#           libgcc_s (the system's), never the CPU stand-in, and of NVIDIA's libraries only
#           libcudart.so.12 (0.7 MB, redistributable): a CUDA 13 machine lacks the CUDA 12 runtime the
#           CUDA 12 backend links, and carrying it lets that backend run there with a cuDNN for
#           CUDA 12 of the machine's (gpu-check.sh looks for one). cuDNN for CUDA 12 itself (about a
#           GB with the cuBLAS it loads) cannot travel within the size limit.
#   share/infer, share/infer-tests   the build's copies: the model, VERSIONS.toml, samples, test data
#   share/fashion-mnist              the Fashion-MNIST test files (t10k-*.gz)
#   tools/  gpu-check.sh and the loader-cache.sh it sources, bench_peers.py (the benchmark step),
#           torchvision_conformance.py (the ONNX conformance data, made on the machine), and the
#           tools/ modules they import
#
# The binaries find lib/ through their RUNPATH $ORIGIN/../lib (CMakeLists.txt); the bundled
# libraries get RUNPATH $ORIGIN here (patchelf), because a library's own dependencies
# (libopenblas -> libgfortran) are looked up through that library's RUNPATH, not the executable's.
# The executables are stripped. The .tar.gz, what travels to a device machine (64 MiB there), is at
# most 60 MiB; more is an error.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
out="$(mkdir -p "${2:-$build}" && cd "${2:-$build}" && pwd)"
bundle="$out/infer-gpu-bundle"
data="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"
readonly max_mib=60

die() { echo "gpu-bundle: $*" >&2; exit 1; }
command -v patchelf >/dev/null || "$root/tools/dev/install-deps.sh" --bundle
for f in infer infer-bench infer_gpu_tests; do
  [[ -x "$build/bin/$f" ]] || die "$build/bin/$f not built (tools/dev/build.sh)"
done
[[ -f "$build/share/infer/weights/fashion.toml" && -d "$build/share/infer-tests" ]] ||
  die "$build/share/infer{,-tests} missing: rebuild with this CMakeLists.txt (tools/dev/build.sh)"
[[ -f "$data/t10k-images-idx3-ubyte.gz" ]] || die "no Fashion-MNIST test files in $data (set FASHION_MNIST_DIR)"
for major in 13 12; do
  [[ -f "$build/bin/libinfer_cudnn_cu$major.so" ]] ||
    echo "gpu-bundle: warning: $build/bin/libinfer_cudnn_cu$major.so not built: the bundle has no CUDA $major backend" >&2
done
# The CUDA 12 runtime the CUDA 12 backend was built against (tools/dev/fetch-cuda12.sh's layout).
cuda12_root="${INFER_CUDA12_ROOT:-${INFER_CACHE:-$HOME/.cache/infer}/cuda12}"
if [[ -f "$build/bin/libinfer_cudnn_cu12.so" && ! -f "$cuda12_root/lib/libcudart.so.12" ]]; then
  die "the CUDA 12 backend is built but $cuda12_root/lib/libcudart.so.12 is missing (tools/dev/fetch-cuda12.sh)"
fi

rm -rf "$bundle" "$bundle.tar.gz"
mkdir -p "$bundle"/{bin,lib,share/fashion-mnist,tools}
exes=(infer infer-serve infer-bench infer-launch-floor infer_gpu_tests infer_gpu_accuracy_tests infer_gpu_conformance_tests infer_accuracy_tests
      infer_cudnn_plan_tests infer_cudnn_views_tests)   # those built; the optional ones exist only with CUDA or in newer trees
for f in "${exes[@]}"; do
  [[ -x "$build/bin/$f" ]] && cp "$build/bin/$f" "$bundle/bin/"
done
for major in 13 12; do
  [[ -f "$build/bin/libinfer_cudnn_cu$major.so" ]] && cp "$build/bin/libinfer_cudnn_cu$major.so" "$bundle/lib/"
done
[[ -f "$bundle/lib/libinfer_cudnn_cu12.so" ]] && cp -L "$cuda12_root/lib/libcudart.so.12" "$bundle/lib/"
cp -r "$build/share/infer" "$build/share/infer-tests" "$bundle/share/"
# The tests' copies of shipped files (the model, samples, VERSIONS.toml) become relative links to
# share/infer's: 2 MiB less, and the bundle stays relocatable.
(cd "$bundle/share/infer-tests" && find . -type f | while read -r f; do
  if cmp -s "$f" "../infer/$f"; then ln -sf "$(realpath --relative-to="$(dirname "$f")" "../infer/$f")" "$f"; fi
done)
cp "$data"/t10k-images-idx3-ubyte.gz "$data"/t10k-labels-idx1-ubyte.gz "$bundle/share/fashion-mnist/"
cp "$root/tools/release/gpu-check.sh" "$root/tools/release/loader-cache.sh" "$root/tools/bench/bench_peers.py" "$root/tools/train/torchvision_conformance.py" "$bundle/tools/"
# and the modules of tools/ that those import (`import X`, `from X import`), transitively: a missing
# one is found only when the step runs on the device (bench_peers.py's isa_cap once was).
added=1
while ((added)); do
  added=0
  for py in "$bundle"/tools/*.py; do
    for mod in $(sed -nE 's/^[[:space:]]*(from|import)[[:space:]]+([A-Za-z_][A-Za-z0-9_]*).*/\2/p' "$py" | sort -u); do
      src=("$root"/tools/*/"$mod.py")   # tools/ is grouped in folders; the bundle's tools/ is flat
      if [[ -f "${src[0]}" && ! -f "$bundle/tools/$mod.py" ]]; then
        cp "${src[0]}" "$bundle/tools/"; added=1
      fi
    done
  done
done

# The libraries to carry: what the binaries resolve to here, by soname, less the system's own and
# NVIDIA's. ldd lists the whole closure of what they link.
# infer serve's: cpp-httplib (with OpenSSL and brotli) and gRPC (with protobuf, abseil, re2, c-ares).
keep='^lib(openblas|gfortran|quadmath|dnnl|gomp|OpenCL|tomlplusplus|crypto|protobuf-lite|cpp-httplib|ssl|brotli(common|dec|enc)|grpc(\+\+)?|gpr|upb|absl_[a-z0-9_]+|protobuf|cares|address_sorting|re2)\.so'
# never carried: the target's own (glibc, libstdc++, libgcc_s, zlib: in every Ubuntu and Debian base
# system) and NVIDIA's (the driver, CUDA and the wheels there; the CPU stand-in in a rehearsal).
never='^(libc|libstdc\+\+|libm|libgcc_s|libdl|libpthread|librt|libz|ld-linux.*|linux-vdso|libcudart|libcudnn.*|libcuda|libnvidia-ml|libcublas.*)\.so'
declare -A wanted=()
collect() {  # collect FILE: the libraries FILE needs, into wanted
  while read -r soname arrow path _; do
    [[ "$arrow" == "=>" && -f "$path" ]] || continue
    if [[ "$soname" =~ $keep ]]; then wanted[$soname]="$path"
    elif [[ ! "$soname" =~ $never && "$path" != "$build"/* ]]; then
      die "$1 needs $soname ($path): neither carried nor known to be on the target; add it to gpu-bundle.sh"
    fi
  done < <(ldd "$1" 2>/dev/null)
}
for f in "$bundle"/bin/* "$bundle"/lib/libinfer_cudnn_cu*.so; do
  [[ -e "$f" ]] && collect "$f"
done
# OpenBLAS is opened at run time (backends/cpu/gemm/gemm_openblas.cpp), so no ldd lists it: found as
# the dynamic loader finds it, and carried with what it needs (libgfortran, libquadmath).
# shellcheck source=tools/release/loader-cache.sh
source "$root/tools/release/loader-cache.sh"
openblas="$(ld_cache_path libopenblas.so.0)" || die "libopenblas.so.0 is not installed (ldconfig -p); the plain kernels open it"
wanted[libopenblas.so.0]="$openblas"
collect "$openblas"
# set_runpath FILE RUNPATH. patchelf 0.14 (bookworm) overwrites the old RUNPATH string with 'X's
# when it sets a new one, and the linker stores a symbol name that is a suffix of that string in
# it: "read" inside ".../openblas-pthread" became "XXXX", and infer-bench failed to start on the
# first GPU machine. Removing the RUNPATH first and then adding one appends a new string, leaving
# the old bytes alone; the dynamic symbols' names must be the same afterwards.
dynamic_symbols() { nm -D "$1" 2>/dev/null | awk '{print $NF}' | sort; }
set_runpath() {
  local before; before="$(dynamic_symbols "$1")"
  patchelf --remove-rpath "$1" && patchelf --set-rpath "$2" "$1" || die "patchelf failed on $1"
  [[ "$(dynamic_symbols "$1")" == "$before" ]] || die "setting the RUNPATH of $1 changed its dynamic symbols' names"
}
for soname in "${!wanted[@]}"; do
  path="${wanted[$soname]}"
  [[ "$path" == *standin* ]] && die "$soname resolves to the stand-in ($path): never bundled"
  cp -L "$path" "$bundle/lib/$soname"
  chmod u+w "$bundle/lib/$soname"
  set_runpath "$bundle/lib/$soname" '$ORIGIN'
done
# The executables: stripped, and RUNPATH only $ORIGIN/../lib (no folder of this build machine).
strip --strip-unneeded "$bundle"/bin/*
for f in "$bundle"/bin/*; do set_runpath "$f" '$ORIGIN/../lib'; done
git -C "$root" rev-parse --short HEAD >/dev/null 2>&1 &&
  echo "infer $(git -C "$root" describe --always --dirty 2>/dev/null), bundled $(date -u +%F)" >"$bundle/BUNDLE"

# Each binary must resolve every library here, with the system's libc/libstdc++ and nothing of
# the build machine beyond them (NVIDIA's are looked up at run time on the target).
for f in "$bundle"/bin/* "$bundle"/lib/*; do
  while read -r soname arrow path _; do
    [[ "$arrow" == "=>" ]] || continue
    if [[ "$path" == not ]]; then
      [[ "$soname" =~ $never ]] || die "$f: $soname not found"
    elif [[ "$soname" == libcudart.so.12 && "$f" == */libinfer_cudnn_cu12.so && "$path" != "$bundle/lib/$soname" ]]; then
      die "$f resolves libcudart.so.12 to $path, not the bundle's own"
    elif [[ "$path" != "$bundle"/* && ! "$soname" =~ $never ]]; then
      die "$f resolves $soname outside the bundle: $path"
    fi
  done < <(ldd "$f")
done

# And each one starts from the bundle (--help, or the test list) with every symbol bound at start
# (LD_BIND_NOW: lazily, "XXXX" failed only at the first read()): a binary the loader refuses is
# found here, not on the device.
for f in "$bundle"/bin/*; do
  case "$(basename "$f")" in
    infer | infer-serve | infer-bench | infer-launch-floor) args=(--help) ;;
    *) args=(--gtest_list_tests) ;;
  esac
  LD_BIND_NOW=1 "$f" "${args[@]}" >/dev/null 2>"$out/start-check.err" ||
    die "$f ${args[*]} failed: $(head -c 300 "$out/start-check.err")"
done
rm -f "$out/start-check.err"

(cd "$out" && tar czf infer-gpu-bundle.tar.gz infer-gpu-bundle)
size_b=$(du -sb "$bundle" | cut -f1)
size_mib=$(((size_b + 1048575) / 1048576))
tar_mib=$(( ($(stat -c %s "$bundle.tar.gz") + 1048575) / 1048576 ))
echo "gpu-bundle: $bundle: ${size_mib} MiB (${size_b} bytes); $bundle.tar.gz: ${tar_mib} MiB (limit ${max_mib} MiB)"
((tar_mib <= max_mib)) || die "the bundle's .tar.gz is over ${max_mib} MiB"
