#!/usr/bin/env python3
"""Runs infer-bench and the peers a user would pick instead, on the same model (built from our
TOML + safetensors, so identical weights), the same Fashion-MNIST test images and batch sizes,
and prints one table with the ratio ours/theirs, all from one run.

    tools/bench/bench.sh [--threads N] [--batch 1,64,1024] [--seconds S] [--cpu-kernels onednn,plain] [--cpu-isa avx2]
                   [--architectures resnet18,mobilenet_v2] [--first-image resnet18,...] [--contention resnet18,...]
                   [--devices cpu,gpu|none] [--record]

(tools/bench/bench.sh makes the Python environment: Debian's PyTorch plus ONNX Runtime from PyPI.)

CPU peers: PyTorch eager (eval, no_grad, same thread count) and ONNX Runtime (the model exported
to ONNX from PyTorch; intra-op threads = the same count, one inter-op thread).
GPU peers, when a CUDA GPU is visible to PyTorch (gpu_peers.py): eager with cudnn.benchmark=True, a
captured CUDA graph (torch.cuda.CUDAGraph) and torch.compile (max-autotune, else reduce-overhead;
fullgraph, frozen weights; each compile in a child capped at --compile-cap-s, all of them within
--compile-budget-s; its compile time is its start-up), in the precision of our run: fp32 with TF32
off, tf32 with TF32 on (cuDNN and matmul), fp16 with the model and the inputs in half (--precision
picks them). --gpu-architectures: torchvision models at 224x224 (random weights, seeded) through
`infer-bench --model X.onnx --device gpu` against the same three peers on the same module, at
--gpu-architecture-batch in --gpu-architecture-precision. Our device-side split (h2d, compute,
d2h, device p50/p99, from CUDA events) is printed for every GPU run of ours; --raw-dir DIR keeps
each run's raw JSON (ours and the peers') there. The start-up and batch-1 targets use
infer-launch-floor (--json) from the same build as the floor. --devices gpu skips the CPU rows
(tools/release/gpu-check.sh).

--cpu-kernels: our CPU runs to compare, each against the same peer rows: onednn (the default) or
onednn-direct (oneDNN without its Winograd convolution) or plain (the im2col + OpenBLAS kernels).
--cpu-isa avx2: the whole run, ours and the peers, on an AVX-512 CPU made to look AVX2-only: the
script runs itself again with build/bin/libinfer_isa_cap.so as LD_AUDIT, which hides AVX-512 and
AMX from CPUID in this process and every program it starts (bench/isa_cap.c), so oneDNN, OpenBLAS,
ONNX Runtime's MLAS and PyTorch all choose their AVX2 kernels. Needs CPUID faulting (Linux, the
CPU flag cpuid_fault). native (the default): every program sees the CPU as it is.
--architectures: torchvision models at 224x224 (random weights), ours on their torch.onnx.export.

After the table come the issue's targets, each marked met or MISSED from the same run's numbers.

Ours times Backend::top_k with k = 3, as `infer` does (host images in, three classes per image
out); the peers return their whole output (10 probabilities per image). Latency is per batch, from
host input to host output, timed with a steady clock around the call
(for the GPU the peers synchronise before reading the clock). --record appends the table, the
machine and the versions to bench/RESULTS.md.
"""
import argparse
import copy
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# infer_model lives in tools/train/ (beside it in a bundle's flat tools/).
sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
import infer_model  # noqa: E402
from isa_cap import cap_isa_or_reexec  # noqa: E402
from start_and_contention import contention_rows, first_image_rows  # noqa: E402
from peer_timing import export_onnx, ort_session, time_batches  # noqa: E402
from gpu_peers import CompileBudget, bench_torch_compile, bench_torch_gpu, compile_workdir  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# The repository's root from tools/bench/; in a GPU bundle, whose tools/ is flat, the bundle's root
# (where bin/ is).
ROOT = os.path.dirname(HERE) if os.path.isdir(os.path.join(os.path.dirname(HERE), "bin")) else \
    os.path.dirname(os.path.dirname(HERE))


def bench_torch_cpu(model, inputs, batches, seconds):
    x_all = torch.from_numpy(inputs)
    with torch.no_grad():
        return [time_batches(lambda x: model(x).numpy(), x_all, b, seconds) for b in batches]


def bench_onnxruntime(model, inputs, batches, seconds, threads, opset=13, ours=None):
    """ONNX Runtime on the module exported to ONNX (batch dimension free); `ours`, when given, is
    called with the exported file's path while it exists (to run infer-bench on the same file)."""
    import onnxruntime as ort
    with tempfile.TemporaryDirectory() as d:
        path = export_onnx(model, inputs[:1], os.path.join(d, "model.onnx"), opset)
        sess = ort_session(path, threads)
        rows = [time_batches(lambda x: sess.run(None, {"x": x})[0], inputs, b, seconds) for b in batches]
        if ours is not None:
            ours(path)
    return rows, ort.__version__


def bench_architectures(names, bench_exe, kernels_list, batches, seconds, threads, label):
    """torchvision architectures at 224x224 on the CPU: the module (random weights, eval mode) in
    PyTorch, its torch.onnx.export in ONNX Runtime and in ours (infer-bench --model X.onnx, each of
    kernels_list; `label` names a kernel set in the table). Random weights: the work per image is the architecture's, whatever the values.
    Returns table rows as (device, precision, peer, ours rows, peer rows) and notes."""
    import torchvision
    tables, notes, targets = [], [], []
    torch.manual_seed(0)
    inputs = np.random.default_rng(0).standard_normal((32, 3, 224, 224), dtype=np.float32)
    for name in names:
        module = getattr(torchvision.models, name)().eval()
        ours_by_kernels = {}
        run_ours = lambda path: ours_by_kernels.update(  # noqa: E731  on the exported file, while it exists
            {k: infer_bench(bench_exe, "cpu", batches, seconds, threads, kernels=k, model=path) for k in kernels_list})
        ort_rows, ort_version = bench_onnxruntime(module, inputs, batches, seconds, threads, opset=14, ours=run_ours)
        torch_rows = bench_torch_cpu(module, inputs, batches, seconds)
        for kernels, ours in ours_by_kernels.items():
            device = f"cpu {label(kernels)} {name} 224x224"
            tables.append((device, "fp32", f"PyTorch {torch.__version__} eager", ours["results"], torch_rows))
            tables.append((device, "fp32", f"ONNX Runtime {ort_version}", ours["results"], ort_rows))
            notes.append(f"ours ({device}): {ours['backend']}")
            o = {r["batch"]: r for r in ours["results"]}
            x = {r["batch"]: r for r in ort_rows}
            for b in batches:
                targets.append((f"{device} batch {b} >= ONNX Runtime: {o[b]['images_per_s'] / x[b]['images_per_s']:.2f}x",
                                o[b]["images_per_s"] >= x[b]["images_per_s"]))
    return tables, notes, targets


def infer_bench(exe, device, batches, seconds, threads, precision=None, kernels=None, model=None):
    """infer-bench's JSON; `model`: another model than the shipped one (then Backend::forward is
    timed, --top-k 0: such a model need not end in a softmax)."""
    cmd = [exe, "--device", device, "--json", "--batch", ",".join(map(str, batches)), "--seconds", str(seconds)]
    if model:
        cmd += ["--model", model, "--top-k", "0"]
    if threads:
        cmd += ["--threads", str(threads)]
    if precision:
        cmd += ["--precision", precision]
    if kernels:
        cmd += ["--cpu-kernels", kernels]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def infer_one_image_ms(exe, shipped, runs=20):
    """`infer` on one image, process start to printed result (median wall time)."""
    image = os.path.join(shipped, "samples", "ankle-boot.png")
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([exe, "--device", "cpu", image], check=True, capture_output=True)
        times.append((time.perf_counter() - t) * 1000.0)
    return statistics.median(times)


def launch_floor_ms(build):
    """The launch floor from infer-launch-floor --json (bench/launch_floor.cu): one CUDA graph of a
    pinned copy in, 12 empty kernels and a copy out, p50 host to host, in ms; (None, why) without it."""
    exe = os.path.join(build, "bin", "infer-launch-floor")
    if not os.path.exists(exe):
        return None, f"no {exe}"
    try:
        done = subprocess.run([exe, "--json"], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return None, "infer-launch-floor ran over 60 s"
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return None, f"infer-launch-floor exit {done.returncode}: {done.stderr.strip()[-200:]}"
    floor = json.loads(lines[-1])
    return floor["pass_p50_us"] / 1000.0, floor


def startup_split(ours):
    """From infer-bench's JSON: (the CUDA context and cuDNN handle, ms; the first result beyond them,
    ms; our planning, ms: the plan and the algorithm choice with its workspace queries)."""
    phases = ours.get("startup_phases", [])
    setup = sum(p["ms"] for p in phases if p["phase"].startswith(("CUDA context", "cuDNN handle")))
    planning = sum(p["ms"] for p in phases if p["phase"].startswith(("plan:", "algorithm")))
    return setup, ours["first_result_ms"] - setup, planning


def keep_raw(raw_dir, name, obj):
    if raw_dir:
        os.makedirs(raw_dir, exist_ok=True)
        with open(os.path.join(raw_dir, name + ".json"), "w") as f:
            json.dump(obj, f, indent=1)


def bench_gpu(args, model, inputs, batches, bench_exe):
    """Ours on the GPU against eager, CUDA graph and torch.compile: the shipped model in each
    --precision, then the --gpu-architectures' ONNX exports. torch.compile runs last, within its
    budget, so a slow compile costs its own rows only. Returns table rows, notes, targets and the
    lines after the table (our device-side split)."""
    tables, notes, targets = [], [], []
    split = ["", "ours on the GPU, device side (CUDA events, ms; host p50 is host to host; h2d, compute and d2h "
             "are each their own median):", "",
             "| model | precision | batch | host p50 | device p50 | device p99 | h2d p50 | compute p50 | d2h p50 |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    # The peers a user would also try, and why they are not rows (issue 34).
    notes.append("TensorRT: not measurable on the lent GPU machine: its PyPI wheel (tensorrt) fetches its "
                 "libraries from NVIDIA's own package index at install, which that machine cannot reach")
    notes.append("ONNX Runtime's CUDA build: not measurable on the lent GPU machine: onnxruntime-gpu is about "
                 "256 MB, over the 64 MiB a run there can carry")
    floor_ms, floor = launch_floor_ms(args.build)
    notes.append(f"launch floor (infer-launch-floor): {floor}" if floor_ms is not None else
                 f"launch floor: not measured ({floor})")
    runs = []  # (label, precision, module, inputs, batches, ours, eager, graph)

    def run_ours_and_eager(label, precision, module, x, bs, model_path=None):
        ours = infer_bench(bench_exe, "gpu", bs, args.seconds, 0, precision, model=model_path)
        if "stand-in" in ours["backend"]:  # tests/standin on LD_LIBRARY_PATH: not a GPU
            sys.exit(f"bench_peers: our GPU backend runs on the CPU stand-in ({ours['backend']}); "
                     "its numbers are not GPU results: take tests/standin off LD_LIBRARY_PATH")
        eager = bench_torch_gpu(module, x, bs, args.seconds, False, precision)
        graph = bench_torch_gpu(module, x, bs, args.seconds, True, precision)
        runs.append((label, precision, module, x, bs, ours, eager, graph))

    for precision in args.precision.split(","):
        run_ours_and_eager("fashion", precision, model, inputs, batches)
    with tempfile.TemporaryDirectory() as onnx_dir:
        try:
            import torchvision
        except ImportError:
            torchvision = None
            if args.gpu_architectures:
                notes.append(f"--gpu-architectures {args.gpu_architectures}: not measured: no torchvision here")
        if args.gpu_architectures and torchvision is not None:
            arch_batches = [int(b) for b in args.gpu_architecture_batch.split(",")]
            x = np.random.default_rng(0).standard_normal((2 * max(arch_batches), 3, 224, 224), dtype=np.float32)
            for name in args.gpu_architectures.split(","):
                torch.manual_seed(0)  # the same weights for ours (the export) and the peers (the module)
                module = getattr(torchvision.models, name)().eval()
                path = export_onnx(module, x[:1], os.path.join(onnx_dir, name + ".onnx"), 14)
                for precision in args.gpu_architecture_precision.split(","):
                    run_ours_and_eager(name, precision, module, x, arch_batches, path)

    budget = CompileBudget(args.compile_budget_s)
    workdirs = {}
    try:
        for label, precision, module, x, bs, ours, eager, graph in runs:
            if args.compile_budget_s <= 0:
                compiled = {"not_measured": "--compile-budget-s 0"}
            else:
                if label not in workdirs:
                    workdirs[label] = compile_workdir()
                compiled = bench_torch_compile(module, x, bs, args.seconds, precision, args.compile_cap_s, budget,
                                               workdirs[label].name)
            keep_raw(args.raw_dir, f"gpu-{label}-{precision}",
                     {"ours": ours, "eager": eager, "cuda_graph": graph, "torch_compile": compiled})
            device = "gpu" if label == "fashion" else f"gpu {label} 224x224"
            accuracy = f"; accuracy {ours['accuracy']:.4f}" if ours.get("accuracy") is not None else ""
            notes.append(f"ours ({device}, {precision}): {ours['backend']}; start-up {ours['startup_ms']:.1f} ms, first "
                         f"result {ours['first_result_ms']:.1f} ms after the model load{accuracy}")
            tables.append((device, precision, "PyTorch eager (cudnn.benchmark)", ours["results"], eager))
            tables.append((device, precision, "PyTorch CUDA graph", ours["results"], graph))
            if "rows" in compiled:
                tables.append((device, precision, f"torch.compile {compiled['mode']}", ours["results"], compiled["rows"]))
                per_batch = ", ".join(f"batch {b}: {t:.1f} s" for b, t in compiled["compile_s"].items())
                notes.append(f"torch.compile ({device}, {precision}): mode {compiled['mode']}, PyTorch "
                             f"{compiled['torch']}; start-up (compile and first call) {per_batch}")
            else:
                notes.append(f"torch.compile ({device}, {precision}): not measured: {compiled['not_measured']}")
            for r in ours["results"]:
                if "device_p50_ms" in r:
                    split.append(f"| {label} | {precision} | {r['batch']} | {r['p50_ms']:.3f} | {r['device_p50_ms']:.3f} | "
                                 f"{r['device_p99_ms']:.3f} | {r['h2d_p50_ms']:.3f} | {r['compute_p50_ms']:.3f} | "
                                 f"{r['d2h_p50_ms']:.3f} |")
            targets += gpu_targets(label, precision, ours, eager, graph, compiled, floor_ms)
    finally:
        for w in workdirs.values():
            w.cleanup()
    return tables, notes, targets, split


def gpu_targets(label, precision, ours, eager, graph, compiled, floor_ms):
    """The GPU targets of issues 13 and 34 for one run: (what, met), met None where a number is missing."""
    o = {r["batch"]: r for r in ours["results"]}
    e = {r["batch"]: r for r in eager}
    g = {r["batch"]: r for r in graph}
    c = {r["batch"]: r for r in compiled.get("rows", [])}
    why = compiled.get("not_measured", "torch.compile gave no row for this batch")
    out = []
    if label != "fashion":
        for b, r in o.items():
            if b in c:
                ratio = r["images_per_s"] / c[b]["images_per_s"]
                out.append((f"gpu {label} {precision} batch {b} >= torch.compile: {ratio:.2f}x", ratio >= 1.0))
            else:
                out.append((f"gpu {label} {precision} batch {b} >= torch.compile: {why}", None))
        return out
    setup, beyond, planning = startup_split(ours)
    out.append((f"gpu {precision} first result {ours['first_result_ms']:.0f} ms: CUDA context and cuDNN handle "
                f"{setup:.0f} ms + {beyond:.0f} ms <= 300 ms", beyond <= 300.0))
    out.append((f"gpu {precision} our planning (plan, algorithms, workspace queries) {planning:.1f} ms <= 50 ms",
                planning <= 50.0))
    if 1 in o:
        out.append((f"gpu {precision} batch 1 p50 <= 0.050 ms: {o[1]['p50_ms']:.3f} ms", o[1]["p50_ms"] <= 0.050))
        out.append((f"gpu {precision} batch 1 >= 3x faster than PyTorch eager: {e[1]['p50_ms'] / o[1]['p50_ms']:.2f}x",
                    e[1]["p50_ms"] >= 3 * o[1]["p50_ms"]))
        if floor_ms is None:
            out.append((f"gpu {precision} batch 1 <= 1.5x the launch floor: no floor measured", None))
        else:
            out.append((f"gpu {precision} batch 1 p50 {o[1]['p50_ms']:.3f} ms <= 1.5x the launch floor "
                        f"{floor_ms:.3f} ms: {o[1]['p50_ms'] / floor_ms:.2f}x", o[1]["p50_ms"] <= 1.5 * floor_ms))
        if precision in ("tf32", "fp16"):
            if 1 in c:
                out.append((f"gpu {precision} batch 1 ahead of torch.compile: p50 {o[1]['p50_ms']:.3f} ms vs "
                            f"{c[1]['p50_ms']:.3f} ms", o[1]["p50_ms"] < c[1]["p50_ms"]))
            else:
                out.append((f"gpu {precision} batch 1 ahead of torch.compile: {why}", None))
    if 1024 in o:
        best = max(e[1024]["images_per_s"], g[1024]["images_per_s"])
        out.append((f"gpu {precision} batch 1024 >= the faster PyTorch: {o[1024]['images_per_s'] / best:.2f}x",
                    o[1024]["images_per_s"] >= best))
        if 1024 in c:
            ratio = o[1024]["images_per_s"] / c[1024]["images_per_s"]
            out.append((f"gpu {precision} batch 1024 ahead of torch.compile: {ratio:.2f}x", ratio > 1.0))
        else:
            out.append((f"gpu {precision} batch 1024 ahead of torch.compile: {why}", None))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="build folder (or unpacked tools/release/gpu-bundle.sh bundle) with bin/infer-bench and share/infer")
    ap.add_argument("--batch", default="1,64,1024")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--record", action="store_true", help="append the results to bench/RESULTS.md")
    ap.add_argument("--devices", default="cpu,gpu", help="cpu, gpu or both (gpu only when PyTorch sees a CUDA GPU)")
    ap.add_argument("--precision", default="fp32,tf32,fp16", help="GPU precisions to compare")
    ap.add_argument("--architectures", default="",
                    help="also torchvision architectures at 224x224 on the CPU, comma-separated (e.g. "
                         "resnet18,mobilenet_v2), at --architecture-batch")
    ap.add_argument("--architecture-batch", default="1,16")
    ap.add_argument("--gpu-architectures", default="",
                    help="torchvision architectures at 224x224 on the GPU, comma-separated (e.g. "
                         "resnet18,mobilenet_v2,efficientnet_b0): ours on their ONNX export against the GPU peers")
    ap.add_argument("--gpu-architecture-batch", default="1,64")
    ap.add_argument("--gpu-architecture-precision", default="tf32,fp16")
    ap.add_argument("--compile-cap-s", type=float, default=90.0, help="the most one torch.compile child may take")
    ap.add_argument("--compile-budget-s", type=float, default=300.0,
                    help="all torch.compile children together (0: no torch.compile peer)")
    ap.add_argument("--raw-dir", default="", help="keep each GPU run's raw JSON (ours and the peers') in this folder")
    ap.add_argument("--cpu-kernels", default="onednn", help="our CPU runs, comma-separated: onednn, onednn-direct (no Winograd), plain")
    ap.add_argument("--cpu-isa", choices=["native", "avx2"], default="native",
                    help="avx2: hide AVX-512 from every program of the run (ours and the peers)")
    ap.add_argument("--first-image", default="",
                    help="torchvision architectures, comma-separated: one image from process start to result, "
                         "ours against ONNX Runtime's session creation plus first run (start_and_contention.py)")
    ap.add_argument("--contention", default="",
                    help="torchvision architectures, comma-separated: batch-1 latency idle and beside a busy loop on "
                         "core 0, ours and ONNX Runtime (start_and_contention.py)")
    args = ap.parse_args()
    if args.cpu_isa == "avx2":
        cap_isa_or_reexec(args.build, "bench_peers")
    batches = [int(b) for b in args.batch.split(",")]
    devices = args.devices.split(",")
    bench_exe = os.path.join(args.build, "bin", "infer-bench")
    infer_exe = os.path.join(args.build, "bin", "infer")
    shipped = os.path.join(args.build, "share", "infer")  # the model and samples, as infer finds them

    torch.set_num_threads(args.threads)
    model = infer_model.load_model(os.path.join(shipped, "weights", "fashion.toml"))
    images, _ = infer_model.load_fashion("t10k")
    inputs = model.preprocess(images).numpy().astype(np.float32)

    label = lambda kernels: kernels if args.cpu_isa == "native" else f"{kernels} AVX2-only"  # noqa: E731
    tables = []  # (device, precision, peer name, ours, theirs rows)
    notes = []
    targets = []  # (what, met)
    if "cpu" in devices:
        torch_rows = bench_torch_cpu(model, inputs, batches, args.seconds)
        ort_rows, ort_version = bench_onnxruntime(model, inputs, batches, args.seconds, args.threads)
        one_image = infer_one_image_ms(infer_exe, shipped)
        notes.append(f"`infer` one image, process start to printed result: {one_image:.1f} ms (median of 20)")
        targets.append((f"`infer` one image < 50 ms: {one_image:.1f} ms", one_image < 50.0))
        for kernels in args.cpu_kernels.split(","):
            ours_cpu = infer_bench(bench_exe, "cpu", batches, args.seconds, args.threads, kernels=kernels)
            device = f"cpu {label(kernels)}"
            tables.append((device, "fp32", f"PyTorch {torch.__version__} eager", ours_cpu["results"], torch_rows))
            tables.append((device, "fp32", f"ONNX Runtime {ort_version}", ours_cpu["results"], ort_rows))
            notes.append(f"ours ({device}): {ours_cpu['backend']}; start-up {ours_cpu['startup_ms']:.1f} ms; "
                         f"accuracy {ours_cpu['accuracy']:.4f}; peak RSS {ours_cpu['peak_rss_mib']:.1f} MiB")
            by_batch = lambda rows: {r["batch"]: r for r in rows}  # noqa: E731
            o, t, x = by_batch(ours_cpu["results"]), by_batch(torch_rows), by_batch(ort_rows)
            if 64 in o:
                targets.append((f"{device} batch 64 >= 1.5x PyTorch: {o[64]['images_per_s'] / t[64]['images_per_s']:.2f}x",
                                o[64]["images_per_s"] >= 1.5 * t[64]["images_per_s"]))
                targets.append((f"{device} batch 64 >= ONNX Runtime: {o[64]['images_per_s'] / x[64]['images_per_s']:.2f}x",
                                o[64]["images_per_s"] >= x[64]["images_per_s"]))
            if 1 in o:
                targets.append((f"{device} batch 1 >= ONNX Runtime: {o[1]['images_per_s'] / x[1]['images_per_s']:.2f}x",
                                o[1]["images_per_s"] >= x[1]["images_per_s"]))
    if "cpu" in devices and args.architectures:
        t, n, g = bench_architectures(args.architectures.split(","), bench_exe, args.cpu_kernels.split(","),
                                      [int(b) for b in args.architecture_batch.split(",")], args.seconds, args.threads,
                                      label)
        tables += t
        notes += n
        targets += g
    extra = []  # the first-image and contention tables, after the main one
    if args.first_image or args.contention:
        import onnxruntime
        notes.append(f"first image and contention: ONNX Runtime {onnxruntime.__version__}")
    if args.first_image:
        photo = os.path.join(ROOT, "samples", "photo-sneaker.jpg")
        extra += ["", f"one image, start to result (median of 10 each, alternating; ours: `infer --model X.onnx "
                      f"--device cpu` on {os.path.basename(photo)}, the whole process; ONNX Runtime: session "
                      "creation plus the first run, default options):", "",
                  "| model | ours ms | ONNX Runtime ms | ours/ONNX Runtime |", "|---|---:|---:|---:|"]
        for name, ours, theirs in first_image_rows(infer_exe, args.first_image.split(","), photo):
            extra.append(f"| {name} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f} |")
            targets.append((f"first image {name}: ours {ours:.1f} ms <= ONNX Runtime {theirs:.1f} ms", ours <= theirs))
    if args.contention:
        extra += ["", "batch-1 latency idle and beside a busy loop pinned to core 0 (p50 ms; slowdown = loaded / idle):",
                  "", "| model | runner | idle p50 ms | loaded p50 ms | slowdown |", "|---|---|---:|---:|---:|"]
        rows, (ours_default, theirs_default) = contention_rows(bench_exe, args.contention.split(","), args.seconds)
        for name, what, idle, loaded in rows:
            extra.append(f"| {name} | {what} | {idle:.2f} | {loaded:.2f} | {loaded / idle:.2f}x |")
        slowdown = {(name, what): loaded / idle for name, what, idle, loaded in rows}
        for name in args.contention.split(","):
            ours, theirs = slowdown[(name, ours_default)], slowdown[(name, theirs_default)]
            targets.append((f"contention {name}: our default slows {ours:.2f}x <= ONNX Runtime's {theirs:.2f}x",
                            ours <= theirs))
    gpu_note = "no CUDA GPU visible to PyTorch: GPU rows not measured"
    if "gpu" in devices and torch.cuda.is_available():
        gpu_note = f"GPU: {torch.cuda.get_device_name(0)}, PyTorch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}"
        t, n, g, e = bench_gpu(args, model, inputs, batches, bench_exe)
        tables += t
        notes += n
        targets += g
        extra += e

    lines = []
    lines.append(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}; threads {args.threads}; "
                 f"{gpu_note}")
    if args.cpu_isa == "avx2":
        lines.append("cpu isa: AVX2 for every program of this run, ours and the peers: AVX-512 and AMX hidden from CPUID "
                     "by bench/isa_cap.c (LD_AUDIT)")
    lines.extend(notes)
    if tables:
        lines.append("")
        lines.append("| device | precision | peer | batch | ours img/s | peer img/s | ours/peer | ours p50 ms | peer p50 ms | ours p99 ms | peer p99 ms |")
        lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for device, precision, peer, ours, theirs in tables:
        for o, t in zip(ours, theirs):
            lines.append(f"| {device} | {precision} | {peer} | {o['batch']} | {o['images_per_s']:.0f} | {t['images_per_s']:.0f} | "
                         f"{o['images_per_s'] / t['images_per_s']:.2f} | {o['p50_ms']:.3f} | {t['p50_ms']:.3f} | "
                         f"{o['p99_ms']:.3f} | {t['p99_ms']:.3f} |")
    lines.extend(extra)
    lines.append("")
    lines.append("targets (issues 4, 13, 33 and 34), from this run:")
    for what, met in targets:
        lines.append(f"- {'not measured' if met is None else 'met' if met else 'MISSED'}: {what}")
    text = "\n".join(lines)
    print(text)
    if args.record:
        path = os.path.join(ROOT, "bench", "RESULTS.md")
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        cmd = "tools/bench/bench.sh " + " ".join(sys.argv[1:])
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True).stdout.strip()
        cmd += f"` at commit `{head}{' (with uncommitted changes)' if dirty else ''}"
        with open(path, "a") as f:
            f.write(f"\n## {stamp}\n\ncommand: `{cmd.strip()}`\n\n{text}\n")
        print(f"appended to {path}")


if __name__ == "__main__":
    main()
