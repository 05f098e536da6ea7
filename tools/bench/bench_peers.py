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
GPU peers, when a CUDA GPU is visible to PyTorch: eager with cudnn.benchmark=True and a captured
CUDA graph (torch.cuda.CUDAGraph), in the precision of our run: fp32 with TF32 off, tf32 with
TF32 on (cuDNN and matmul), fp16 with the model and the inputs in half (--precision picks them).
--devices gpu skips the CPU rows (tools/release/gpu-check.sh).

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


def bench_torch_gpu(model, inputs, batches, seconds, graph, precision):
    torch.backends.cudnn.benchmark = True
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    dev = torch.device("cuda")
    dtype = torch.float16 if precision == "fp16" else torch.float32
    m = copy.deepcopy(model).to(dev, dtype)
    inputs = inputs.astype(np.float16) if precision == "fp16" else inputs
    sync = torch.cuda.synchronize
    rows = []
    with torch.no_grad():
        for b in batches:
            if not graph:
                rows.append(time_batches(lambda x: m(torch.from_numpy(x).to(dev)).cpu().numpy(), inputs, b,
                                         seconds, sync))
                continue
            # Captured on a real batch (not zeros); replays copy each new batch into it.
            static_in = torch.from_numpy(inputs[:b]).to(dev)
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    m(static_in)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                static_out = m(static_in)

            def run(x):
                static_in.copy_(torch.from_numpy(x))
                g.replay()
                return static_out.cpu().numpy()
            rows.append(time_batches(run, inputs, b, seconds, sync))
    return rows


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
        for precision in args.precision.split(","):
            ours_gpu = infer_bench(bench_exe, "gpu", batches, args.seconds, 0, precision)
            if "stand-in" in ours_gpu["backend"]:  # tests/standin on LD_LIBRARY_PATH: not a GPU
                sys.exit(f"bench_peers: our GPU backend runs on the CPU stand-in ({ours_gpu['backend']}); "
                         "its numbers are not GPU results: take tests/standin off LD_LIBRARY_PATH")
            eager = bench_torch_gpu(model, inputs, batches, args.seconds, False, precision)
            graph = bench_torch_gpu(model, inputs, batches, args.seconds, True, precision)
            tables.append(("gpu", precision, "PyTorch eager (cudnn.benchmark)", ours_gpu["results"], eager))
            tables.append(("gpu", precision, "PyTorch CUDA graph", ours_gpu["results"], graph))
            notes.append(f"ours (gpu, {precision}): {ours_gpu['backend']}; start-up {ours_gpu['startup_ms']:.1f} ms; "
                         f"accuracy {ours_gpu['accuracy']:.4f}")
            o = {r["batch"]: r for r in ours_gpu["results"]}
            e = {r["batch"]: r for r in eager}
            g = {r["batch"]: r for r in graph}
            if 1 in o:
                targets.append((f"gpu {precision} batch 1 p50 <= 0.050 ms: {o[1]['p50_ms']:.3f} ms", o[1]["p50_ms"] <= 0.050))
                targets.append((f"gpu {precision} batch 1 >= 3x faster than PyTorch eager: "
                                f"{e[1]['p50_ms'] / o[1]['p50_ms']:.2f}x", e[1]["p50_ms"] >= 3 * o[1]["p50_ms"]))
            if 1024 in o:
                best = max(e[1024]["images_per_s"], g[1024]["images_per_s"])
                targets.append((f"gpu {precision} batch 1024 >= the faster PyTorch: {o[1024]['images_per_s'] / best:.2f}x",
                                o[1024]["images_per_s"] >= best))

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
    lines.append("targets (issues 4, 13 and 33), from this run:")
    for what, met in targets:
        lines.append(f"- {'met' if met else 'MISSED'}: {what}")
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
