"""Two measurements of issue 33 for tools/bench/bench_peers.py, each ours against ONNX Runtime in
the same run, on torchvision architectures (random weights) exported to ONNX at opset 13:

first_image_rows: one image, from nothing to its result.
  - ours: `infer --model X.onnx --device cpu PHOTO`, process start to printed result (wall time of
    the whole process: start-up, model load, decode, preprocessing, the network, the output);
  - ONNX Runtime: session creation plus the first run on a 1x3x224x224 input, timed inside a fresh
    Python process (its interpreter start and imports not counted), with its default options.
  Each the median of `runs` runs, alternating, so a slow moment of the machine hits both.

contention_rows: latency at batch 1 while another job keeps one core busy.
  - ours: infer-bench --model X.onnx at our default thread count and at --threads 1;
  - ONNX Runtime: intra-op threads = every core (its default) and 1;
  each idle and then beside a busy loop pinned to core 0 (a bounded process: it ends itself after
  its deadline). The slowdown is the loaded p50 over the idle p50.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from peer_timing import export_onnx, ort_session, time_batches

ORT_FIRST_RUN = r"""
import sys, time
import numpy as np
x = np.random.default_rng(1).standard_normal((1, 3, 224, 224), dtype=np.float32)
import onnxruntime as ort
t = time.perf_counter()
sess = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
sess.run(None, {sess.get_inputs()[0].name: x})
print((time.perf_counter() - t) * 1000.0)
"""

BUSY_LOOP = r"""
import os, sys, time
os.sched_setaffinity(0, {0})
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    pass
"""


def export(name, folder):
    """torchvision's `name` (random weights, eval mode) as folder/name.onnx at opset 13."""
    import torch
    import torchvision
    torch.manual_seed(0)
    module = getattr(torchvision.models, name)().eval()
    return export_onnx(module, np.zeros((1, 3, 224, 224), np.float32), os.path.join(folder, f"{name}.onnx"), 13)


def first_image_rows(infer_exe, names, photo, runs=10):
    """[(name, ours median ms, ONNX Runtime median ms)]."""
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for name in names:
            path = export(name, d)
            ours, theirs = [], []
            for _ in range(runs):
                t = time.perf_counter()
                subprocess.run([infer_exe, "--model", path, "--device", "cpu", photo], check=True, capture_output=True)
                ours.append((time.perf_counter() - t) * 1000.0)
                out = subprocess.run([sys.executable, "-c", ORT_FIRST_RUN, path], check=True, capture_output=True,
                                     text=True).stdout
                theirs.append(float(out))
            rows.append((name, statistics.median(ours), statistics.median(theirs)))
    return rows


def _p50_ours(bench_exe, path, threads, seconds):
    cmd = [bench_exe, "--device", "cpu", "--json", "--batch", "1", "--seconds", str(seconds), "--model", path,
           "--top-k", "0"]
    if threads:
        cmd += ["--threads", str(threads)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["results"][0]["p50_ms"]


def _p50_ort(path, threads, seconds):
    sess = ort_session(path, threads)
    x = np.random.default_rng(2).standard_normal((4, 3, 224, 224), dtype=np.float32)
    return time_batches(lambda b: sess.run(None, {"x": b}), x, 1, seconds)["p50_ms"]


def contention_rows(bench_exe, names, seconds):
    """([(name, runner, idle p50 ms, loaded p50 ms)], (ours' runner, ONNX Runtime's runner)) for ours
    (default threads, 1 thread) and ONNX Runtime (every core, 1 thread); the pair names the rows that
    the target compares, each at its default thread count."""
    cores = os.cpu_count()
    defaults = ("ours, default threads", f"ONNX Runtime, {cores} threads")
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for name in names:
            path = export(name, d)
            runners = [(defaults[0], lambda: _p50_ours(bench_exe, path, 0, seconds)),
                       ("ours, --threads 1", lambda: _p50_ours(bench_exe, path, 1, seconds)),
                       (defaults[1], lambda: _p50_ort(path, cores, seconds)),
                       ("ONNX Runtime, 1 thread", lambda: _p50_ort(path, 1, seconds))]
            idle = {what: run() for what, run in runners}
            # One busy loop for the whole loaded pass, bounded by its own deadline.
            busy = subprocess.Popen([sys.executable, "-c", BUSY_LOOP, str(len(runners) * (seconds + 20))])
            try:
                time.sleep(0.5)
                loaded = {what: run() for what, run in runners}
            finally:
                busy.kill()
                busy.wait()
            rows += [(name, what, idle[what], loaded[what]) for what, _ in runners]
    return rows, defaults
