#!/usr/bin/env python3
"""The GPU comparison of tools/bench/bench_peers.py and its torch.compile peer (tools/bench/gpu_peers.py),
without a GPU (issue 34): the plumbing that only a device run would otherwise exercise.

- gpu_targets marks each target met, MISSED, or not measured (None) when a number is missing, from
  infer-bench's start-up phases, the launch floor and the peers' rows;
- bench_gpu, with our runs and the peers replaced by fixed numbers, puts a measured torch.compile in
  the table and an unmeasured one in the notes with its reason, writes every run's raw JSON, and
  prints our device-side split;
- the torch.compile child, for real: where it cannot run (PyTorch before 2.0, or no CUDA GPU: this
  machine) it is "not measured" with the reason, and the other mode is not tried; a spent budget
  starts nothing; a mode that runs over its full cap is not tried again in the run.

Run with Debian's /usr/bin/python3 (python3-torch); CTest runs it (label unit)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "bench"))
sys.path.insert(1, os.path.join(HERE, "..", "..", "tools", "train"))
import bench_peers  # noqa: E402
import gpu_peers  # noqa: E402


def rows(batches, p50_ms):
    return [{"batch": b, "iterations": 10, "images_per_s": b / (p50_ms[b] / 1000.0), "p50_ms": p50_ms[b],
             "p90_ms": p50_ms[b], "p99_ms": p50_ms[b] * 1.5} for b in batches]


def ours_json(batches, p50_ms, planning_ms=20.0, setup_ms=150.0, first_result_ms=400.0):
    results = rows(batches, p50_ms)
    for r in results:
        r.update(device_p50_ms=r["p50_ms"] * 0.8, device_p90_ms=r["p50_ms"], device_p99_ms=r["p50_ms"],
                 h2d_p50_ms=0.002, compute_p50_ms=r["p50_ms"] * 0.7, d2h_p50_ms=0.003)
    phases = [{"phase": "before the backend: model load, test images", "ms": 30.0},
              {"phase": "CUDA context: device, stream, events", "ms": setup_ms - 10.0},
              {"phase": "cuDNN handle", "ms": 10.0},
              {"phase": "plan: steps and descriptors", "ms": planning_ms / 2},
              {"phase": "algorithm: conv1", "ms": planning_ms / 2},
              {"phase": "first batch (n = 1)", "ms": 5.0}]
    return {"backend": "cuDNN 9 on a test GPU", "startup_ms": first_result_ms + 30.0,
            "first_result_ms": first_result_ms, "startup_phases": phases, "accuracy": 0.9, "results": results}


class Targets(unittest.TestCase):
    def test_met_missed_and_not_measured(self):
        ours = ours_json([1, 1024], {1: 0.060, 1024: 2.0}, planning_ms=60.0, setup_ms=150.0, first_result_ms=400.0)
        eager = rows([1, 1024], {1: 0.300, 1024: 4.0})
        compiled = {"rows": rows([1, 1024], {1: 0.070, 1024: 1.0}), "mode": "max-autotune"}
        got = dict(bench_peers.gpu_targets("fashion", "tf32", ours, eager, eager, compiled, 0.030))
        by_start = lambda prefix: [met for what, met in got.items() if what.startswith(prefix)]  # noqa: E731
        self.assertEqual(by_start("gpu tf32 first result 400 ms: CUDA context and cuDNN handle 150 ms + 250 ms"), [True])
        self.assertEqual(by_start("gpu tf32 our planning"), [False])  # 60 ms > 50 ms
        self.assertEqual(by_start("gpu tf32 batch 1 p50 0.060 ms <= 1.5x the launch floor 0.030 ms"), [False])
        self.assertEqual(by_start("gpu tf32 batch 1 ahead of torch.compile"), [True])  # 0.060 < 0.070
        self.assertEqual(by_start("gpu tf32 batch 1024 ahead of torch.compile"), [False])  # half its rate
        self.assertEqual(by_start("gpu tf32 batch 1 >= 3x faster than PyTorch eager"), [True])

        unmeasured = {"not_measured": "max-autotune: no Triton"}
        got = bench_peers.gpu_targets("fashion", "fp32", ours, eager, eager, unmeasured, None)
        nones = [what for what, met in got if met is None]
        self.assertIn("gpu fp32 batch 1 <= 1.5x the launch floor: no floor measured", nones)
        self.assertIn("gpu fp32 batch 1024 ahead of torch.compile: max-autotune: no Triton", nones)
        self.assertFalse(any("batch 1 ahead of torch.compile" in what for what, _ in got), "fp32 has no batch-1 target")

    def test_architectures_compare_with_torch_compile_per_batch(self):
        ours = ours_json([1, 64], {1: 1.0, 64: 10.0})
        compiled = {"rows": rows([1], {1: 0.5})}  # batch 64 missing
        got = bench_peers.gpu_targets("resnet18", "fp16", ours, [], [], compiled, 0.03)
        self.assertEqual(got, [("gpu resnet18 fp16 batch 1 >= torch.compile: 0.50x", False),
                               ("gpu resnet18 fp16 batch 64 >= torch.compile: torch.compile gave no row for this batch", None)])


class BenchGpu(unittest.TestCase):
    def test_tables_notes_split_and_raw_json(self):
        batches = [1, 64]
        calls = []

        def fake_compile(module, x, bs, seconds, precision, cap_s, budget, workdir):
            calls.append(precision)
            if precision == "fp16":
                return {"not_measured": "reduce-overhead: over its 5 s cap"}
            return {"mode": "reduce-overhead", "torch": "2.5", "compile_s": {"1": 3.0, "64": 4.0},
                    "rows": rows(bs, {1: 0.1, 64: 1.0})}

        with tempfile.TemporaryDirectory() as raw, \
                mock.patch.object(bench_peers, "infer_bench", lambda *a, **k: ours_json(batches, {1: 0.05, 64: 0.5})), \
                mock.patch.object(bench_peers, "bench_torch_gpu", lambda m, x, bs, s, g, p: rows(bs, {1: 0.2, 64: 2.0})), \
                mock.patch.object(bench_peers, "bench_torch_compile", fake_compile), \
                mock.patch.object(bench_peers, "launch_floor_ms", lambda build: (0.04, {"pass_p50_us": 40.0})):
            args = bench_peers.argparse.Namespace(build="/nonexistent", seconds=0.1, precision="fp32,fp16",
                                                  gpu_architectures="", compile_budget_s=60.0, compile_cap_s=5.0,
                                                  raw_dir=raw)
            tables, notes, targets, split = bench_peers.bench_gpu(args, torch.nn.Identity(), np.zeros((2, 1)),
                                                                  batches, "/nonexistent/infer-bench")
            self.assertEqual(calls, ["fp32", "fp16"])
            peers = [(precision, peer) for _, precision, peer, _, _ in tables]
            self.assertEqual(peers, [("fp32", "PyTorch eager (cudnn.benchmark)"), ("fp32", "PyTorch CUDA graph"),
                                     ("fp32", "torch.compile reduce-overhead"),
                                     ("fp16", "PyTorch eager (cudnn.benchmark)"), ("fp16", "PyTorch CUDA graph")])
            self.assertIn("torch.compile (gpu, fp16): not measured: reduce-overhead: over its 5 s cap", notes)
            self.assertTrue(any(n.startswith("torch.compile (gpu, fp32): mode reduce-overhead") for n in notes), notes)
            self.assertEqual(len([line for line in split if line.startswith("| fashion |")]), 4)
            self.assertEqual(sorted(os.listdir(raw)), ["gpu-fashion-fp16.json", "gpu-fashion-fp32.json"])
            with open(os.path.join(raw, "gpu-fashion-fp16.json")) as f:
                kept = json.load(f)
            self.assertEqual(set(kept), {"ours", "eager", "cuda_graph", "torch_compile"})
            self.assertIn("not_measured", kept["torch_compile"])
            self.assertTrue(any(met is None and "fp16 batch 1 ahead of torch.compile" in what for what, met in targets))


class CompileChild(unittest.TestCase):
    def setUp(self):
        self.module = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.Flatten())
        self.inputs = np.random.default_rng(1).standard_normal((4, 1, 8, 8), dtype=np.float32)

    def test_where_it_cannot_run_it_is_not_measured_with_the_reason(self):
        if hasattr(torch, "compile") and torch.cuda.is_available():
            self.skipTest("this machine can run torch.compile on a GPU: the not-measured path does not apply")
        budget = gpu_peers.CompileBudget(120)
        with gpu_peers.compile_workdir() as d:
            got = gpu_peers.bench_torch_compile(self.module, self.inputs, [1, 2], 0.05, "fp32", 60, budget, d)
        self.assertEqual(set(got), {"not_measured"})
        reason = got["not_measured"]
        self.assertTrue(reason.startswith("max-autotune: "), reason)
        self.assertTrue("PyTorch 2.0 or newer" in reason or "no CUDA GPU" in reason, reason)
        self.assertNotIn("reduce-overhead", reason, "exit 3 means the other mode cannot do better")

    def test_a_spent_budget_starts_nothing(self):
        budget = gpu_peers.CompileBudget(0)
        with gpu_peers.compile_workdir() as d, mock.patch.object(gpu_peers.subprocess, "run") as run:
            got = gpu_peers.bench_torch_compile(self.module, self.inputs, [1], 0.05, "fp32", 60, budget, d)
        run.assert_not_called()
        self.assertEqual(got, {"not_measured": "max-autotune: not started, the compile budget is spent"})

    def test_a_mode_over_its_full_cap_is_dropped_for_the_rest_of_the_run(self):
        budget = gpu_peers.CompileBudget(600)
        timeout = subprocess.TimeoutExpired(cmd="child", timeout=30)
        with gpu_peers.compile_workdir() as d, mock.patch.object(gpu_peers.subprocess, "run", side_effect=timeout):
            got = gpu_peers.bench_torch_compile(self.module, self.inputs, [1], 0.05, "fp32", 30, budget, d)
        self.assertEqual(got, {"not_measured": "max-autotune: over its 30 s cap; reduce-overhead: over its 30 s cap"})
        self.assertEqual(budget.modes, ["reduce-overhead"], "the last mode stays, to be tried for the next model")


if __name__ == "__main__":
    unittest.main()
