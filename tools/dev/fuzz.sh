#!/usr/bin/env bash
# Builds the libFuzzer targets (clang 14, ASan + UBSan) into ${FUZZ_BUILD_DIR:-build-fuzz} and runs
# each for SECONDS, starting from its seed corpus in tests/fuzz/corpus/<target>/ (copied to a working
# corpus in the build folder, so the seeds in git never grow). A crash stops that target, leaves the
# input in build-fuzz/artifacts/<target>/ and makes the script exit non-zero.
#
#   tools/dev/fuzz.sh                        60 s per target (the CI run uses 45 s, two at a time)
#   nice -n 19 tools/dev/fuzz.sh 600         the long run: 10 minutes per target, one at a time
#   tools/dev/fuzz.sh 600 fuzz_image         one target
#   FUZZ_JOBS=2 tools/dev/fuzz.sh 45         two targets at a time
#
# Each target's final libFuzzer statistics (executions, coverage) are printed at the end; the full
# logs are in build-fuzz/logs/<target>.log. Needs: tools/dev/install-deps.sh --fuzz (clang-14).
# Limits: -rss_limit_mb=2048 (decoding an image at the 50 Mpx limit takes ~1 GB under ASan);
# -timeout=60 s per input; -max_len per target below.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${1:-60}"
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then targets=(fuzz_image fuzz_safetensors fuzz_model_toml fuzz_onnx fuzz_manifest fuzz_autotune_cache fuzz_pe_file fuzz_http_request); fi
jobs="${FUZZ_JOBS:-1}"

declare -A max_len=([fuzz_image]=65536 [fuzz_safetensors]=65536 [fuzz_model_toml]=16384 [fuzz_onnx]=65536 [fuzz_manifest]=16384
                     [fuzz_autotune_cache]=16384 [fuzz_pe_file]=4096 [fuzz_http_request]=65536)
for t in "${targets[@]}"; do
  [[ -n "${max_len[$t]:-}" ]] || { echo "fuzz: no -max_len for $t: add it to max_len in tools/dev/fuzz.sh" >&2; exit 2; }
done

"$root/tools/dev/install-deps.sh" --fuzz
cmake -S "$root" --preset fuzz -B "$build" >/dev/null   # CMakePresets.json: clang 14, libFuzzer, ASan + UBSan
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >&2
mkdir -p "$build/logs"

run_one() {
  local t="$1" corpus="$build/corpus/$1" artifacts="$build/artifacts/$1/"
  mkdir -p "$corpus" "$artifacts"
  cp -n "$root/tests/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null || true
  if [[ "$t" == fuzz_onnx ]]; then  # seeds: ONNX's own small conformance models (Debian's libonnx-testdata)
    for m in /usr/share/libonnx-testdata/data/node/test_{conv,gemm,maxpool,averagepool,batchnorm,clip,concat,flatten,softmax,hard,relu,sigmoid,add,mul}*/model.onnx; do
      [[ -f "$m" ]] && cp -n "$m" "$corpus/$(basename "$(dirname "$m")").onnx"
    done
  fi
  # halt_on_error: UBSan findings are crashes too (the code is built with -fno-sanitize-recover).
  ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$build/bin/$t" "$corpus" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=60 \
    -max_len="${max_len[$t]}" -print_final_stats=1 -artifact_prefix="$artifacts" \
    >"$build/logs/$t.log" 2>&1
}

failed=0
pids=()
names=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  names+=("$t")
  if ((${#pids[@]} >= jobs)); then
    if ! wait "${pids[0]}"; then echo "fuzz: ${names[0]} found a problem: see $build/logs/${names[0]}.log" >&2; failed=1; fi
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then echo "fuzz: ${names[$i]} found a problem: see $build/logs/${names[$i]}.log" >&2; failed=1; fi
done

for t in "${targets[@]}"; do
  log="$build/logs/$t.log"
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' || echo "no stats")
  echo "fuzz: $t: ${seconds}s, $execs executions, $last"
done
exit "$failed"
