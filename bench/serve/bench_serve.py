#!/usr/bin/env python3
"""`infer serve` against its peer, from one run, measured by the same client: NVIDIA's perf_analyzer
(from the tritonclient wheel) over the open inference protocol, on this machine's CPU.

    bench/serve/bench_serve.sh [--record] [--quick]

Rows:
  - infer-bench, offline: the engine alone at batch 1, 8, 16, 32 and 64 (the floor a server adds to);
  - infer serve, the shipped model, FP32 tensors: gRPC and HTTP at concurrency 1, 8 and 64;
  - the peer, KServe's Python model server with ONNX Runtime (bench/serve/kserve_onnx.py) serving the
    same model exported to ONNX, over gRPC at the same concurrencies (perf_analyzer's HTTP client and
    KServe 0.21's binary outputs do not agree: see docs/serving.md);
  - infer serve, torchvision's ResNet-18 (random weights, ONNX, 224x224) over gRPC at concurrency 1
    and 8, with encoded images (BYTES, a JPEG) and with FP32 tensors;
  - a soak: 100,000 gRPC requests at concurrency 8, resident memory after 10,000 and after all.
Then the issue's targets, each marked met or MISSED from this run's numbers. --record appends the
table to bench/RESULTS.md. Everything binds 127.0.0.1; every run is bounded in requests and time.

The environments (made once, outside the repository, by bench_serve.sh): perf_analyzer and
tritonclient (tools/dev/serve-venv.sh), PyTorch and ONNX Runtime for the exports
(tools/dev/ort-venv.sh), KServe (tools/dev/kserve-venv.sh)."""
import argparse
import base64
import datetime
import json
import os
import platform
import random
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "build", "bin")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class Process:
    """A server process; its ports from its first stdout line (ours) or given (the peer)."""

    def __init__(self, argv, ports=None, ready_url=None):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if ports is None:
            self.ports = json.loads(self.proc.stdout.readline())
        else:
            self.ports = ports
            deadline = time.time() + 60
            while subprocess.run(["curl", "-sf", ready_url], capture_output=True).returncode != 0:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"{argv[0]} did not become ready")
                time.sleep(0.3)

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(next(l for l in f if l.startswith("VmRSS:")).split()[1])

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def perf(perf_analyzer, model, url, protocol, concurrency, data, count, timeout=600):
    """perf_analyzer at one concurrency: throughput (inferences/s), p50 and p99 (us)."""
    with tempfile.NamedTemporaryFile(suffix=".csv") as csv:
        argv = [perf_analyzer, "-m", model, "-u", url, "-i", protocol, "--concurrency-range", str(concurrency),
                "--measurement-mode", "count_windows", "--measurement-request-count", str(count), "-s", "50",
                "--input-data", data, "-f", csv.name]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            return {"error": (r.stdout + r.stderr).strip().splitlines()[-1][:120]}
        lines = open(csv.name).read().splitlines()
        head, row = lines[0].split(","), lines[1].split(",")
        v = dict(zip(head, row))
        return {"throughput": float(v["Inferences/Second"]), "p50": float(v["p50 latency"]),
                "p99": float(v["p99 latency"])}


def tensor_data(path, shape, n=8):
    rng = random.Random(7)
    size = 1
    for d in shape:
        size *= d
    with open(path, "w") as f:
        json.dump({"data": [{"input": {"content": [rng.uniform(-1, 1) for _ in range(size)], "shape": shape}}
                            for _ in range(n)]}, f)


def image_data(path, image):
    with open(path, "w") as f:
        # perf_analyzer sends "b64" data as the tensor's bytes: for BYTES, already in its binary layout
        # (each element's 4-byte little-endian length, then the element).
        jpeg = open(image, "rb").read()
        element = struct.pack("<I", len(jpeg)) + jpeg
        json.dump({"data": [{"image": {"b64": base64.b64encode(element).decode(), "shape": [1]}}]}, f)


def infer_bench(batches, seconds):
    out = subprocess.run([os.path.join(BIN, "infer-bench"), "--device", "cpu", "--top-k", "0", "--seconds", str(seconds),
                          "--json", "--batch", *map(str, batches)], capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    return {r["batch"]: r for r in doc["results"]}, doc


def batch_counts(metrics_port):
    """The server's images run and forward passes so far (its infer_batch_size histogram)."""
    text = subprocess.run(["curl", "-s", f"127.0.0.1:{metrics_port}/metrics"], capture_output=True, text=True).stdout
    v = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, x = line.rsplit(" ", 1)
            v[k] = float(x)
    return (sum(x for k, x in v.items() if k.startswith("infer_batch_size_sum")),
            sum(x for k, x in v.items() if k.startswith("infer_batch_size_count")))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--record", action="store_true")
    p.add_argument("--quick", action="store_true", help="fewer requests per window (a smoke run, noisier)")
    p.add_argument("--perf-analyzer", required=True)
    p.add_argument("--torch-python", required=True, help="a Python with PyTorch, torchvision and onnx export")
    p.add_argument("--kserve-python", required=True)
    a = p.parse_args()
    scale = 0.2 if a.quick else 1.0
    counts = {1: int(3000 * scale), 8: int(4000 * scale), 64: int(6000 * scale)}
    work = tempfile.mkdtemp(prefix="infer-bench-serve-")
    rows, notes = [], []

    # The offline floor.
    offline, bench_doc = infer_bench([1, 8, 16, 32, 64], 2.0 * scale + 1.0)
    for b, r in offline.items():
        rows.append(("infer-bench (offline)", "fashion", "-", f"batch {b}", r["images_per_s"], r["p50_ms"] * 1000, r["p99_ms"] * 1000))

    # The shipped model, ours.
    fashion = os.path.join(work, "fashion.json")
    tensor_data(fashion, [1, 28, 28])
    ours = Process([os.path.join(BIN, "infer"), "serve", "--model", "fashion", "--device", "cpu", "--http-port", "0",
                    "--grpc-port", "0", "--metrics-port", "0"])
    results = {}
    for protocol, port in (("grpc", ours.ports["grpc_port"]), ("http", ours.ports["http_port"])):
        for c in (1, 8, 64):
            log(f"bench-serve: ours, {protocol}, concurrency {c}")
            images, passes = batch_counts(ours.ports["metrics_port"])
            r = perf(a.perf_analyzer, "fashion", f"127.0.0.1:{port}", protocol, c, fashion, counts[c])
            images_after, passes_after = batch_counts(ours.ports["metrics_port"])
            if passes_after > passes:  # this run's own forward passes (perf_analyzer's warm-up included)
                r["batch"] = (images_after - images) / (passes_after - passes)
            results[("ours", protocol, c)] = r
    ours.stop()

    # The peer: the same model through ONNX, in KServe's server with ONNX Runtime.
    onnx = os.path.join(work, "fashion.onnx")
    subprocess.run([a.torch_python, "-c", f"""
import sys, torch
sys.path.insert(0, {os.path.join(ROOT, 'tools', 'train')!r})
import infer_model
m = infer_model.load_model({os.path.join(ROOT, 'weights', 'fashion.toml')!r}).eval()
torch.onnx.export(m, torch.zeros(1, 1, 28, 28), {onnx!r}, input_names=["input"], output_names=["scores"],
                  dynamic_axes={{"input": {{0: "n"}}, "scores": {{0: "n"}}}}, opset_version=13)
"""], check=True, capture_output=True)
    http_port, grpc_port = 18480 + random.randrange(500), 19480 + random.randrange(500)
    peer = Process([a.kserve_python, "-W", "ignore", os.path.join(ROOT, "bench", "serve", "kserve_onnx.py"),
                    "--model_name", "fashion", "--onnx", onnx, "--http_port", str(http_port), "--grpc_port", str(grpc_port),
                    "--threads", str(os.cpu_count())],
                   ports={"grpc_port": grpc_port}, ready_url=f"http://127.0.0.1:{http_port}/v2/models/fashion/ready")
    for c in (1, 8, 64):
        log(f"bench-serve: KServe + ONNX Runtime, grpc, concurrency {c}")
        results[("peer", "grpc", c)] = perf(a.perf_analyzer, "fashion", f"127.0.0.1:{grpc_port}", "grpc", c, fashion,
                                            max(200, counts[c] // 4))
    peer.stop()

    for (who, protocol, c), r in sorted(results.items(), key=lambda x: (x[0][0] != "ours", x[0][1], x[0][2])):
        name = "infer serve" if who == "ours" else "KServe 0.21 + ONNX Runtime 1.23"
        if "error" in r:
            rows.append((name, "fashion", protocol, f"concurrency {c}", None, None, None, r["error"]))
        else:
            extra = f"mean batch {r['batch']:.1f}" if "batch" in r else ""
            rows.append((name, "fashion", protocol, f"concurrency {c}", r["throughput"], r["p50"], r["p99"], extra))

    # torchvision ResNet-18 through ONNX: images and tensors.
    resnet = os.path.join(work, "resnet18.onnx")
    subprocess.run([a.torch_python, "-c", f"""
import torch, torchvision
m = torchvision.models.resnet18(weights=None).eval()
torch.onnx.export(m, torch.zeros(1, 3, 224, 224), {resnet!r}, input_names=["x"], output_names=["y"],
                  dynamic_axes={{"x": {{0: "n"}}, "y": {{0: "n"}}}}, opset_version=13)
"""], check=True, capture_output=True)
    images = os.path.join(work, "images.json")
    image_data(images, os.path.join(ROOT, "samples", "photo-sneaker.jpg"))
    tensors = os.path.join(work, "resnet.json")
    tensor_data(tensors, [3, 224, 224], n=2)
    ours = Process([os.path.join(BIN, "infer"), "serve", "--model", f"resnet18={resnet}", "--device", "cpu",
                    "--http-port", "0", "--grpc-port", "0", "--metrics-port", "-1", "--max-batch", "16"])
    for label, data in (("BYTES (JPEG)", images), ("FP32", tensors)):
        for c in (1, 8):
            log(f"bench-serve: ours, resnet18 {label}, concurrency {c}")
            r = perf(a.perf_analyzer, "resnet18", f"127.0.0.1:{ours.ports['grpc_port']}", "grpc", c, data,
                     max(20, int(100 * scale)))
            rows.append(("infer serve", "resnet18 " + label, "grpc", f"concurrency {c}", r.get("throughput"),
                         r.get("p50"), r.get("p99"), r.get("error", "")))
    ours.stop()

    # The soak.
    ours = Process([os.path.join(BIN, "infer"), "serve", "--model", "fashion", "--device", "cpu", "--http-port", "0",
                    "--grpc-port", "0", "--metrics-port", "-1"])
    soak = {}
    for total in (10_000, 100_000):
        n = total - sum(soak.keys())
        log(f"bench-serve: soak, {n} requests")
        subprocess.run([a.perf_analyzer, "-m", "fashion", "-u", f"127.0.0.1:{ours.ports['grpc_port']}", "-i", "grpc",
                        "--concurrency-range", "8", "--request-count", str(n), "--input-data", fashion],
                       capture_output=True, timeout=900)
        soak[n] = ours.rss_kib()
    ours.stop()
    rss10k, rss100k = list(soak.values())

    # The table and the targets.
    out = [f"### Serving: infer serve against KServe + ONNX Runtime ({datetime.date.today()}, {platform.node()})", "",
           f"CPU backend: {bench_doc['backend']}; {os.cpu_count()} cores, client and server on the same "
           "machine; perf_analyzer 2.51 (tritonclient wheel), count windows, FP32 tensors unless said. "
           "Throughput in inferences/s, latency in microseconds.", "",
           "| server | model | protocol | load | throughput | p50 | p99 | note |", "| --- | --- | --- | --- | ---: | ---: | ---: | --- |"]
    for r in rows:
        name, model, protocol, load, thr, p50, p99 = r[:7]
        note = r[7] if len(r) > 7 else ""
        f = lambda x, d=0: "-" if x is None else f"{x:,.{d}f}"
        out.append(f"| {name} | {model} | {protocol} | {load} | {f(thr)} | {f(p50)} | {f(p99)} | {note} |")
    out.append(f"| infer serve | fashion | grpc | soak, concurrency 8 | | | | resident {rss10k:,} KiB after 10,000 requests, "
               f"{rss100k:,} KiB after 100,000 |")
    out.append("")

    def mark(ok):
        return "met" if ok else "MISSED"

    targets = []
    o8, p8 = results[("ours", "grpc", 8)], results[("peer", "grpc", 8)]
    if "error" not in o8 and "error" not in p8:
        ratio = o8["throughput"] / p8["throughput"]
        targets.append(f"- concurrency 8, gRPC, shipped model: {ratio:.1f}x the peer's throughput (target 5x): "
                       f"{mark(ratio >= 5)}; p99 {o8['p99']:.0f} us against the peer's {p8['p99']:.0f} us (target lower): "
                       f"{mark(o8['p99'] < p8['p99'])}")
    o1 = results[("ours", "grpc", 1)]
    if "error" not in o1:
        over = o1["p50"] - offline[1]["p50_ms"] * 1000
        targets.append(f"- concurrency 1, gRPC: p50 {o1['p50']:.0f} us, {over:.0f} us over infer-bench's batch-1 p50 of "
                       f"{offline[1]['p50_ms'] * 1000:.0f} us (target at most 100 us; perf_analyzer runs on the same cores): "
                       f"{mark(over <= 100)}")
    o64 = results[("ours", "grpc", 64)]
    if "error" not in o64:
        batch = o64.get("batch", 0)
        nearest = min(offline, key=lambda b: abs(b - batch))
        share = o64["throughput"] / offline[nearest]["images_per_s"]
        targets.append(f"- concurrency 64, gRPC, dynamic batching (mean batch {batch:.1f}): {share:.0%} of infer-bench's "
                       f"offline throughput at batch {nearest} (target 70%): {mark(share >= 0.7)}")
    growth = rss100k / rss10k - 1
    targets.append(f"- soak: resident memory after 100,000 requests {growth:+.1%} from its value after 10,000 "
                   f"(target within 10%): {mark(abs(growth) <= 0.10)}")
    out += ["Targets (this run):", ""] + targets + [""]
    text = "\n".join(out)
    print(text)
    if a.record:
        with open(os.path.join(ROOT, "bench", "RESULTS.md"), "a") as f:
            f.write("\n" + text)
        log("bench-serve: appended to bench/RESULTS.md")


if __name__ == "__main__":
    main()
