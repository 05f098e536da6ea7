#!/usr/bin/env python3
"""Plants known one-line bugs in the GPU backend, one at a time, and checks that the GPU tests catch each.

Every mutant below is a realistic slip in our own code (the backend, its kernels, its plan), written as
an exact replacement of one piece of the source. For each, in a scratch copy of this checkout (never
the checkout itself), the script plants it, rebuilds, runs the GPU label on the CPU stand-in
(tests/standin; not a GPU) and records the first test that fails: "killed". A mutant that every GPU
test passes "survived", and shows a gap in the tests. The GPU tests of one CUDA major run (cu12: the
backend's sources are the same for both majors).

    tools/dev/mutants.py                    every mutant; a baseline run of the GPU label first
    tools/dev/mutants.py --only topk-off-by-one --no-baseline
    tools/dev/mutants.py --list

The scratch copy (--scratch, default /tmp/infer-mutants) holds the tracked and untracked files of this
checkout and its own build (the default preset); it is kept between runs, so that a second run only
rebuilds what the mutants touch. The first run builds the GPU tests' targets: tens of minutes on
two cores. The mutants marked "precision" also print the share of each precision's bound they use
(EveryPrecisionMatchesCpuWithinItsDerivedBound's "[ bound use ]" lines), next to a correct run's.

Exit status: 0 when every mutant was killed, 1 when one survived, 2 when the script could not run (a
mutant whose text is no longer in its file, a build that fails, a baseline that is not green).
Not part of .ci/run: docs/testing.md says when to run it.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ["infer_gpu_tests", "infer_gpu_accuracy_tests", "infer_gpu_conformance_tests"]
PRECISION_TEST = "GpuBackend.EveryPrecisionMatchesCpuWithinItsDerivedBound"
SLOW = "GpuAccuracy"  # the accuracy suite: minutes per precision on the stand-in
TEST_TIMEOUT_S = 600


@dataclass
class Mutant:
    name: str
    file: str
    old: str
    new: str
    what: str
    hint: str  # the tests to run first (a ctest -R regex; "Precision" alone would match the slow GpuAccuracy)
    precision: bool = False  # print the precision test's bound use


MUTANTS = [
    # The ten of issue 32's first round.
    Mutant("conv-beta-one", "backends/cudnn/calls.cpp",
           "workspace.get(), workspace.bytes(), &kZero, y.desc(), y.data());",
           "workspace.get(), workspace.bytes(), &kOne, y.desc(), y.data());",
           "beta = 1 on cudnnConvolutionForward: y accumulates the previous pass",
           "PartialRuns|EveryOpAlone|ShippedModel"),
    Mutant("pool-strides-swapped", "backends/cudnn/plan.cpp",
           "a.kernel_w, a.pad_h, a.pad_w, a.stride_h, a.stride_w));",
           "a.kernel_w, a.pad_h, a.pad_w, a.stride_w, a.stride_h));",
           "pooling descriptor: vertical and horizontal strides swapped", "EveryOpAlone"),
    Mutant("workspace-half-allocated", "backends/cudnn/convolution_algorithms.cpp",
           'workspace_ = DeviceBuffer(needed, "convolution workspace");',
           'workspace_ = DeviceBuffer(needed / 2, "convolution workspace");',
           "the workspace allocated at half the size the chosen algorithms need", "EveryOpAlone|EveryStepsChoice"),
    Mutant("one-image-fewer", "backends/cudnn/passes.cpp",
           "const std::size_t out_bytes = static_cast<std::size_t>(pass.n) * last.out.size() * sizeof(float);",
           "const std::size_t out_bytes = static_cast<std::size_t>(pass.n - 1) * last.out.size() * sizeof(float);",
           "one image fewer copied back to the host", "EveryOpAlone|ShippedModel"),
    Mutant("no-stream-sync", "backends/cudnn/passes.cpp",
           '      enqueue(pass, false);\n    }\n    INFER_CUDA_CHECK("forward pass", cudaStreamSynchronize(stream_.get()));\n',
           "      enqueue(pass, false);\n    }\n",
           "no cudaStreamSynchronize before the host reads the results", "EveryOpAlone|ShippedModel"),
    Mutant("fallback-input-not-converted", "backends/cudnn/convolution.cpp",
           "  INFER_KERNEL_CHECK(layer_context(layer),\n"
           "                     convert_half_nhwc_to_float_nchw(kernels_, in(step.input()), fallback_x_.out(), n, step.in.c,\n"
           "                                                     step.in.h, step.in.w, stream));\n",
           "",
           "fp16 float fallback: the step's input never converted to float NCHW", "Fp16Fallback|EveryPrecision"),
    Mutant("fused-z-is-y", "backends/cudnn/convolution.cpp",
           "add_z ? tensor_in(step.residual->z) : TensorIn(y, zero_z_.in()),",
           "add_z ? tensor_in(step.residual->z) : tensor_in(out_index),",
           "the fused call's z (alpha2 = 0) is the output itself, not the zero buffer", "FusedSteps|FusedConvolution|NaN"),
    Mutant("transposed-weight", "backends/cudnn/weights.cpp",
           "  if (plan.storage_type() == CUDNN_DATA_FLOAT) return float_bytes(weight);\n",
           "  if (plan.storage_type() == CUDNN_DATA_FLOAT) {\n"
           "    if (layer.kind != LayerKind::Linear) return float_bytes(weight);\n"
           "    const std::size_t rows = static_cast<std::size_t>(layer.out.c), cols = weight.size() / rows;\n"
           "    std::vector<float> t(weight.size());\n"
           "    for (std::size_t i = 0; i < rows; ++i)\n"
           "      for (std::size_t j = 0; j < cols; ++j) t[j * rows + i] = weight[i * cols + j];\n"
           "    return float_bytes(t);\n"
           "  }\n",
           "fully connected weights uploaded transposed (float: fp32, tf32)", "EveryPrecision", precision=True),
    Mutant("buffer-reused-early", "backends/cudnn/plan.cpp",
           "  const std::size_t buffer = new_buffer(layer.out, storage_type_);\n  for (std::size_t i = index;",
           "  const std::size_t buffer =\n"
           "      index > 0 && layer.out.size() == x.dims.size() ? x.buffer : new_buffer(layer.out, storage_type_);\n"
           "  for (std::size_t i = index;",
           "a convolution writes the buffer its input is still read from (freed one step early)",
           "EveryOpAlone|ShippedModel"),
    # The four gaps issue 32 found.
    Mutant("topk-off-by-one", "backends/cudnn/kernels/top_k.cuh",
           "out_classes[j] = previous_index;", "out_classes[j] = previous_index + 1;",
           "top-k kernel: each class index one too high", "TopK"),
    Mutant("pool-pads-swapped", "backends/cudnn/plan.cpp",
           "a.kernel_w, a.pad_h, a.pad_w, a.stride_h, a.stride_w));",
           "a.kernel_w, a.pad_w, a.pad_h, a.stride_h, a.stride_w));",
           "pooling descriptor: vertical and horizontal padding swapped", "EveryOpAlone"),
    Mutant("workspace-half-passed", "backends/cudnn/convolution.cpp",
           "workspace_.out().first(workspace), o.y);", "workspace_.out().first(workspace / 2), o.y);",
           "cudnnConvolutionForward given half the workspace it asked for", "EveryStepsChoice|EveryOpAlone"),
    Mutant("fp16-transposed-weight", "backends/cudnn/weights.cpp",
           "half[(ki * rs + r) * c + ci] = float_to_half(weight[(ki * c + ci) * rs + r]);",
           "half[rs == 1 ? ci * k + ki : (ki * rs + r) * c + ci] = float_to_half(weight[(ki * c + ci) * rs + r]);",
           "fp16: fully connected (and 1x1) weights uploaded transposed", "EveryPrecision", precision=True),
    # One off-by-one in each of our other kernels (issue 32, item 1).
    Mutant("convert-off-by-one", "backends/cudnn/kernels/convert.cuh",
           "const size_t y = i / w % h;", "const size_t y = (i / w + 1) % h;",
           "half NHWC to float NCHW: every row read from the next one", "EveryPrecision|Fp16"),
    Mutant("pointwise-off-by-one", "backends/cudnn/kernels/pointwise.cuh",
           "+ threadIdx.x; i < count;", "+ threadIdx.x; i + 1 < count;",
           "pointwise kernel: the last element never written", "EveryOpAlone|Pointwise"),
    # Issue 32, item 4: a wrong operand and a wrong scale, against the precision test's bounds.
    Mutant("folded-step-unfolded-weight", "backends/cudnn/weights.cpp",
           "upload(filter_bytes(plan_, producer, folded.weight), context);",
           "upload(filter_bytes(plan_, producer, producer.params.weight), context);",
           "a folded conv+bn step given the conv's own weight (the batch-norm scale lost): a wrong operand",
           "EveryPrecision", precision=True),
    Mutant("avgpool-counts-padding", "backends/cudnn/plan.cpp",
           "} else if (!a.count_include_pad) {", "} else if (a.count_include_pad) {",
           "average pooling divides by the padded window where the model excludes padding: a wrong scale",
           "EveryPrecision", precision=True),
]


def run(cmd, **kw):
    return subprocess.run(cmd, text=True, **kw)


def sync_scratch(src: Path) -> None:
    """Copies this checkout's tracked and untracked (not ignored) files into src, rewriting only the
    files whose content differs, so that the scratch build stays incremental."""
    files = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                capture_output=True, check=True).stdout.split("\0")
    for rel in filter(None, files):
        origin = ROOT / rel
        if not origin.is_file() or origin.is_symlink():
            continue
        target = src / rel
        data = origin.read_bytes()
        if target.is_file() and target.read_bytes() == data:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        shutil.copymode(origin, target)


def build(src: Path, log: Path) -> bool:
    with log.open("w") as out:
        if not (src / "build" / "CMakeCache.txt").exists():
            if run(["cmake", "--preset", "default"], cwd=src, stdout=out, stderr=subprocess.STDOUT).returncode:
                return False
        jobs = str(os.cpu_count() or 2)
        return run(["cmake", "--build", "build", "-j", jobs, "--target", *TARGETS], cwd=src, stdout=out,
                   stderr=subprocess.STDOUT).returncode == 0


def test_env(build_dir: Path) -> dict:
    env = dict(os.environ)
    standin = str(build_dir / "standin" / "lib")
    env["LD_LIBRARY_PATH"] = standin + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["INFER_REQUIRE_GPU"] = "1"
    return env


def first_failure(build_dir: Path, regex: str, exclude: str | None = None) -> tuple[str | None, int]:
    """Runs the GPU tests matching regex (and not exclude), stopping at the first failure: (its name
    or None, tests run)."""
    result = run(["ctest", "-L", "gpu", "-R", regex, *(["-E", exclude] if exclude else []), "--stop-on-failure",
                  "--timeout", str(TEST_TIMEOUT_S)], cwd=build_dir, env=test_env(build_dir), capture_output=True)
    names = re.findall(r"Test +#\d+: (\S+) [ .]*\**(\w+)", result.stdout)
    for name, status in names:
        if status != "Passed":
            return name, len(names)
    if result.returncode != 0 and "No tests were found" not in result.stdout:
        return "ctest exit " + str(result.returncode), len(names)
    return None, len(names)


def bound_use(build_dir: Path) -> list[str]:
    """The precision test's "[ bound use ]" lines (cu12), whether it passes or not."""
    result = run([str(build_dir / "bin" / "infer_gpu_tests"), "--gtest_filter=" + PRECISION_TEST],
                 cwd=build_dir, env=dict(test_env(build_dir), INFER_CUDA="12"), capture_output=True,
                 timeout=TEST_TIMEOUT_S)
    return [line.split("] ", 1)[1] for line in result.stdout.splitlines() if line.startswith("[ bound use ]")]


def apply(src: Path, m: Mutant) -> str:
    path = src / m.file
    text = path.read_text()
    if text.count(m.old) != 1:
        raise SystemExit(f"mutants: {m.name}: the text to replace occurs {text.count(m.old)} times in {m.file} "
                         "(the code changed: update the mutant)")
    path.write_text(text.replace(m.old, m.new))
    return text


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scratch", default="/tmp/infer-mutants", help="the scratch copy and its build")
    p.add_argument("--only", action="append", default=[], help="a mutant's name (repeatable)")
    p.add_argument("--no-baseline", action="store_true", help="skip the unmutated GPU label run")
    p.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = p.parse_args()
    if args.list:
        for m in MUTANTS:
            print(f"{m.name:30} {m.file:45} {m.what}")
        return 0
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only]
    unknown = set(args.only) - {m.name for m in MUTANTS}
    if unknown:
        print("mutants: no mutant named " + ", ".join(sorted(unknown)), file=sys.stderr)
        return 2

    scratch = Path(args.scratch)
    src = scratch / "src"
    build_dir = src / "build"
    src.mkdir(parents=True, exist_ok=True)
    sync_scratch(src)
    print(f"mutants: scratch copy {src}; building {' '.join(TARGETS)} (log {scratch / 'build.log'})", flush=True)
    if not build(src, scratch / "build.log"):
        print(f"mutants: the unmutated build fails; see {scratch / 'build.log'}", file=sys.stderr)
        return 2
    cu12 = r"^cu12\."
    if not args.no_baseline:
        started = time.monotonic()
        failed, count = first_failure(build_dir, cu12)
        if failed or count == 0:
            print(f"mutants: the unmutated GPU label is not green ({failed or 'no tests'})", file=sys.stderr)
            return 2
        print(f"mutants: baseline: {count} GPU tests pass ({time.monotonic() - started:.0f} s)", flush=True)
    if any(m.precision for m in chosen):
        for line in bound_use(build_dir):
            print(f"  bound use, correct: {line}")

    rows = []
    for m in chosen:
        started = time.monotonic()
        original = apply(src, m)
        try:
            if not build(src, scratch / f"build-{m.name}.log"):
                print(f"mutants: {m.name} does not build; see {scratch / f'build-{m.name}.log'}", file=sys.stderr)
                return 2
            # The likely killers first, then the rest, the slow accuracy suite last.
            killer, _ = first_failure(build_dir, cu12 + ".*(" + m.hint + ")")
            if killer is None:
                killer, _ = first_failure(build_dir, cu12, exclude=SLOW)
            if killer is None:
                killer, _ = first_failure(build_dir, cu12 + ".*(" + SLOW + ")")
            uses = bound_use(build_dir) if m.precision else []
        finally:
            (src / m.file).write_text(original)
        seconds = time.monotonic() - started
        rows.append((m, killer, seconds))
        print(f"{'killed  ' if killer else 'SURVIVED'} {m.name:30} {m.file:45} {killer or '-'} ({seconds:.0f} s)",
              flush=True)
        for line in uses:
            print(f"  bound use, {m.name}: {line}")
    if not build(src, scratch / "build.log"):  # leave the scratch build unmutated
        print("mutants: the restored build fails", file=sys.stderr)
        return 2

    killed = sum(1 for _, k, _ in rows if k)
    print(f"\nmutants: {killed}/{len(rows)} killed\n")
    print("| mutant | file | what | first failing test |")
    print("| --- | --- | --- | --- |")
    for m, killer, _ in rows:
        print(f"| {m.name} | `{m.file}` | {m.what} | {killer or 'SURVIVED'} |")
    return 0 if killed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
