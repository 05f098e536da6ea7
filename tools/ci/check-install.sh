#!/usr/bin/env bash
# Installs a build (default: build/) into a temporary prefix, as `cmake --install` does for anyone,
# and checks the installed tree:
#   1. no installed file holds a path of this machine's source tree, build tree or of the prefix
#      itself (`strings` on every file); libinfer.so exports the public API only;
#   2. examples/classify.cpp builds against it with find_package(infer) and prints, for every
#      installed sample, exactly what the installed `infer` prints;
#   3. with the GPU module built: it is installed, and the installed infer and the example find it
#      in <libdir>/infer and run on it (on the CPU stand-in, tests/standin: not a GPU). Here the
#      libdir is lib; tools/ci/rehearse-packages.sh checks Debian's lib/x86_64-linux-gnu;
#   4. with share/infer moved away, infer and the example name the file they looked for (exit 3):
#      there is no fallback to a source or build folder.
# CI runs it (.ci/run); so can anyone, after tools/dev/build.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
work="$(mktemp -d /tmp/infer-install.XXXXXX)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
say() { echo "check-install: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
say "installed $(find "$prefix" -type f | wc -l) files into $prefix"

# 1. No path of this machine in any installed file; the library exports the API and nothing else.
if ! "$root/tools/dev/find-build-paths.sh" "$prefix" "$root" "$build" "$prefix" >"$work/paths.txt"; then
  cat "$work/paths.txt" >&2
  fail "installed files hold paths of this machine (above)"
fi
say "no installed file holds $root, $build or $prefix"
library="$(find "$prefix" -name 'libinfer.so.*.*.*' -type f)"
[[ -n "$library" ]] || fail "no libinfer.so installed"
exported="$(nm -D --defined-only "$library" | awk '{print $3}' | c++filt)"
# The API's names (api/exports.map): the engine lives in namespace infer too (infer::Network,
# infer::api::...), so "infer::" alone would let a widened export map through.
api='^((typeinfo for |typeinfo name for |vtable for )infer::[A-Za-z]*Error|infer::[A-Za-z]*Error::|infer::Classifier::(~|Classifier\(|[a-z])|infer::(version|version_string|build_info|runtime_info|check_environment|write_environment_manifest|write_node_features|cpu_fallback_message|set_cpu_threads|image_file_extensions|model_info)(\[abi:cxx11\])?\()'
if grep -vE "$api" <<<"$exported"; then
  fail "libinfer.so exports more than the API (above)"
fi
say "libinfer.so exports $(wc -l <<<"$exported") symbols, all of the API"

# 2. The example, built against the installed package, answers as the installed infer.
cmake -S "$root/examples" -B "$work/example" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/example" >/dev/null
samples=("$prefix"/share/infer/samples/*)
"$prefix/bin/infer" "${samples[@]}" >"$work/infer.txt" 2>"$work/infer.err"
"$work/example/classify" "${samples[@]}" >"$work/example.txt" 2>"$work/example.err"
diff "$work/infer.txt" "$work/example.txt" >&2 || fail "the example and infer differ (above)"
say "the example (find_package(infer)) prints what infer prints for ${#samples[@]} samples:"
sed 's/^/  /' "$work/example.txt" >&2

# 3. The GPU modules, where GNUInstallDirs put them, on the stand-in: each backend in turn (a
# driver of CUDA 13.0 runs the CUDA 13 one, a driver of CUDA 12.4 the CUDA 12 one).
modules=()
for major in 13 12; do
  module="$(find "$prefix" -path "*/infer/libinfer_cudnn_cu$major.so" -type f)"
  if [[ -f "$build/bin/libinfer_cudnn_cu$major.so" && -z "$module" ]]; then
    fail "the build has the CUDA $major GPU module, the install has not: no <libdir>/infer/libinfer_cudnn_cu$major.so"
  fi
  [[ -n "$module" ]] && modules+=("$major:$module")
done
if ((${#modules[@]})) && [[ -f "$build/standin/lib/libcudnn.so.9" ]]; then
  for entry in "${modules[@]}"; do
    major="${entry%%:*}" module="${entry#*:}"
    driver=13000
    ((major == 12)) && driver=12040
    export_env=(env "LD_LIBRARY_PATH=$build/standin/lib" "INFER_STANDIN_DRIVER_CUDA=$driver")
    "${export_env[@]}" "$prefix/bin/infer" --device gpu "${samples[0]}" >"$work/gpu.txt" 2>"$work/gpu.err" ||
      fail "the installed infer cannot use ${module#"$prefix"/}: $(cat "$work/gpu.err")"
    grep -q "\[gpu (cu$major): .*stand-in" "$work/gpu.txt" ||
      fail "infer --device gpu did not run the CUDA $major backend on the stand-in: $(cat "$work/gpu.txt")"
    "${export_env[@]}" "$work/example/classify" "${samples[0]}" >"$work/example-gpu.txt" 2>&1
    "${export_env[@]}" "$prefix/bin/infer" "${samples[0]}" >"$work/infer-gpu.txt" 2>/dev/null
    diff "$work/infer-gpu.txt" "$work/example-gpu.txt" >&2 || fail "on the stand-in, the example and infer differ (above)"
    say "the installed infer and the example load ${module#"$prefix"/} (stand-in, driver CUDA $driver): $(cat "$work/gpu.txt")"
  done
else
  say "no GPU module or stand-in built: step 3 skipped"
fi

# 4. A missing data folder is an error naming the path looked for.
mv "$prefix/share/infer" "$prefix/share/infer.moved"
status=0
"$prefix/bin/infer" --device cpu "${samples[0]/share\/infer/share/infer.moved}" >/dev/null 2>"$work/missing.err" || status=$?
[[ $status -eq 3 ]] || fail "infer without share/infer: exit $status, not 3"
grep -qF "$prefix/share/infer/weights/fashion.toml" "$work/missing.err" || fail "infer does not name the file: $(cat "$work/missing.err")"
status=0
"$work/example/classify" "${samples[0]/share\/infer/share/infer.moved}" >/dev/null 2>"$work/missing-example.err" || status=$?
[[ $status -eq 3 ]] && grep -qF "$prefix/share/infer/weights/fashion.toml" "$work/missing-example.err" ||
  fail "the example without share/infer: exit $status: $(cat "$work/missing-example.err")"
say "without share/infer, infer and the example say: $(tail -1 "$work/missing.err")"
say "passed"
