#!/usr/bin/env python3
"""Batch inference on Ray (examples/ray/classify_folder.py) against plain `infer --json`, over the
same folder of images, in one run (issue 35): images per second on one Ray node with one actor, on
three nodes with three actors (ray.cluster_utils.Cluster, every node on this machine), and the
infer command, on one thread and on its default threads.

    PYTHONPATH=build/python INFER_BUILD_DIR=build $(tools/dev/ray-venv.sh) tools/bench/bench_ray.py \
        [--images 10000] [--repeats 3]

The images: Fashion-MNIST's test set as PNG files (a random choice each run). Each row is timed
from the start of its run to its last result written (for Ray: the pipeline, the cluster already
up; its start-up is a row of its own), the median of --repeats runs. The nodes of a local cluster
share this machine's cores, so the three-node row measures what the pipeline costs, not what
three machines would give. A program that prints numbers (docs/benchmarks.md), not a test.
"""
import argparse
import gzip
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # every node on 127.0.0.1 (tests/ray)
import numpy as np  # noqa: E402
import ray  # noqa: E402
from PIL import Image  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "ray"))
import classify_folder as example  # noqa: E402

BUILD = os.environ.get("INFER_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))
FASHION = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
NODE = dict(num_cpus=2, object_store_memory=200 * 1024 * 1024, node_ip_address="127.0.0.1")


def write_images(folder, count, rng):
    with gzip.open(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")) as f:
        pool = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    for n, i in enumerate(rng.choice(len(pool), count, replace=count > len(pool))):
        Image.fromarray(pool[i], mode="L").save(os.path.join(folder, f"{n:06d}.png"))


def time_command(images, threads, work):
    out = os.path.join(work, "command.jsonl")
    args = [os.path.join(BUILD, "bin", "infer"), "--json", "--device", "cpu", images]
    if threads:
        args[1:1] = ["--threads", str(threads)]
    start = time.perf_counter()
    with open(out, "w") as f:
        subprocess.run(args, stdout=f, stderr=subprocess.DEVNULL, check=True)
    took = time.perf_counter() - start
    with open(out) as f:
        assert sum(1 for _ in f) == len(os.listdir(images))
    return took


def time_ray(images, nodes, work, repeats):
    """(start-up seconds, [pipeline seconds per repeat]) on a local cluster of `nodes` nodes."""
    start = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args=dict(NODE, include_dashboard=False))
    for _ in range(nodes - 1):
        cluster.add_node(**NODE)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False, logging_level="WARNING")
    ray.data.DataContext.get_current().enable_progress_bars = False
    ray.data.DataContext.get_current().print_on_execution_start = False
    startup = time.perf_counter() - start
    runs = []
    try:
        for r in range(repeats):
            out = os.path.join(work, f"ray-{nodes}-{r}")
            begin = time.perf_counter()
            total, failed = example.classify_folder(images, out, actors=nodes, batch_size=64, threads=1)
            runs.append(time.perf_counter() - begin)
            assert (total, failed) == (len(os.listdir(images)), 0)
            shutil.rmtree(out)
    finally:
        ray.shutdown()
        cluster.shutdown()
    return startup, runs


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--images", type=int, default=10000)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    rng = np.random.default_rng()
    with tempfile.TemporaryDirectory(prefix="bench-ray-") as work:
        images = os.path.join(work, "images")
        os.mkdir(images)
        write_images(images, a.images, rng)
        rows = []
        for threads, name in ((1, "`infer --json --threads 1`"), (0, "`infer --json` (its default threads)")):
            runs = [time_command(images, threads, work) for _ in range(a.repeats)]
            rows.append((name, statistics.median(runs), None))
        for nodes in (1, 3):
            startup, runs = time_ray(images, nodes, work, a.repeats)
            rows.append((f"Ray Data, {nodes} node{'s' if nodes > 1 else ''}, {nodes} actor{'s' if nodes > 1 else ''}"
                         " (1 thread each)", statistics.median(runs), startup))
    print(f"{a.images} Fashion-MNIST PNGs, {os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
          f"median of {a.repeats}; Ray {ray.__version__}")
    print()
    print("| run | seconds | images/s | vs `infer --json --threads 1` | cluster start-up (s) |")
    print("|---|---:|---:|---:|---:|")
    base = rows[0][1]
    for name, took, startup in rows:
        print(f"| {name} | {took:.2f} | {a.images / took:,.0f} | {base / took:.2f}x | "
              f"{'' if startup is None else f'{startup:.1f}'} |")


if __name__ == "__main__":
    main()
