#!/usr/bin/env python3
"""The Python package's per-call overhead (issue 35): Classifier.run from Python against the same call
from C++, on the shipped model, in one run.

    PYTHONPATH=build/python python3 tools/bench/bench_python.py [--build build] [--device cpu] [--threads 1]
                                                                 [--batch 1,64] [--seconds 2]

C++: infer-api-bench (bench/api_bench.cpp: infer::Classifier::run through libinfer.so, random
samples). Python: infer.Classifier(...).run on a float32 numpy batch, the result a new array (no
copies either way). Each timed as p50 of one call after 0.2 s of warm-up, C++ and Python
alternately, twice each; the table gives the better p50 of each and the difference, which is what
the binding adds per call. A program that prints numbers (docs/benchmarks.md), not a test."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def python_p50_us(clf, n, seconds, rng):
    x = rng.standard_normal((n, *clf.input_shape), dtype=np.float32)
    end = time.perf_counter() + 0.2
    while time.perf_counter() < end:
        clf.run(x)
    us = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(us) < 5:
        t = time.perf_counter_ns()
        clf.run(x)
        us.append((time.perf_counter_ns() - t) / 1000.0)
    return statistics.median(us), len(us)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", default="1,64")
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    import infer
    batches = [int(b) for b in args.batch.split(",")]
    cpp_cmd = [os.path.join(args.build, "bin", "infer-api-bench"), "--device", args.device, "--threads",
               str(args.threads), "--batch", args.batch, "--seconds", str(args.seconds)]
    clf = infer.Classifier(device=args.device, threads=args.threads, max_batch=max(batches))
    rng = np.random.default_rng()
    cpp = {b: [] for b in batches}
    py = {b: [] for b in batches}
    backend = ""
    for _ in range(2):
        out = json.loads(subprocess.run(cpp_cmd, check=True, capture_output=True, text=True).stdout)
        backend = out["backend"]
        for r in out["results"]:
            cpp[r["batch"]].append(r["p50_us"])
        for b in batches:
            py[b].append(python_p50_us(clf, b, args.seconds, rng)[0])
    print(f"infer {infer.version()}, {backend}; Python {sys.version.split()[0]}, numpy {np.__version__}; "
          f"{args.seconds} s per measurement, the better of two each")
    print()
    print("| samples per call | C++ p50 us | Python p50 us | Python - C++ us | Python / C++ |")
    print("|---:|---:|---:|---:|---:|")
    for b in batches:
        c, p = min(cpp[b]), min(py[b])
        print(f"| {b} | {c:.2f} | {p:.2f} | {p - c:.2f} | {p / c:.3f} |")


if __name__ == "__main__":
    main()
