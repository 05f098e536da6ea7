"""The GPU peers of bench_peers.py, on the same module (so the same weights) and the same inputs as
ours: PyTorch eager (cudnn.benchmark), eager captured in a CUDA graph, and torch.compile.

Precisions, as ours: fp32 with TF32 off, tf32 with TF32 on (cuDNN and matmul), fp16 with the model
and the inputs in half. Latency is per batch, host input to host output, after a synchronisation.

torch.compile (Inductor + Triton) runs in a child process of its own (this file run as a script,
below), once per model and precision, so that each compile can be capped with a timeout whatever it
is doing: mode "max-autotune" first (autotuned Triton kernels and GEMMs, CUDA graphs), then
"reduce-overhead" (CUDA graphs, no autotuning) if that fails or runs out of time; fullgraph=True,
dynamic=False, and frozen weights (torch._inductor.config.freezing: the eval weights become
constants, so batch-norms fold into the convolutions). Its start-up is the time from the call to
the first result of each batch size (the compile happens there), reported beside the table. A
peer that cannot be measured (no torch.compile in this PyTorch, no Triton, a timeout) is a row
"not measured" with the reason, never a number.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_timing import time_batches  # noqa: E402

COMPILE_MODES = ("max-autotune", "reduce-overhead")


def _precision_setup(torch, precision):
    """cuDNN and matmul flags for `precision`; the dtype of the model and the inputs."""
    torch.backends.cudnn.benchmark = True
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    return torch.float16 if precision == "fp16" else torch.float32


def bench_torch_gpu(model, inputs, batches, seconds, graph, precision):
    """PyTorch eager (graph=False) or eager captured in a CUDA graph (graph=True) on the GPU."""
    import torch
    dtype = _precision_setup(torch, precision)
    dev = torch.device("cuda")
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


class CompileBudget:
    """What the torch.compile children may still spend, in seconds, all of them together, and the
    modes still worth trying: a mode that ran over its cap once is not tried again in this run (the
    next model or precision starts with the next mode), so one slow autotune costs one cap."""

    def __init__(self, seconds):
        self.deadline = time.monotonic() + seconds
        self.modes = list(COMPILE_MODES)

    def left(self):
        return max(0.0, self.deadline - time.monotonic())


def bench_torch_compile(model, inputs, batches, seconds, precision, cap_s, budget, workdir):
    """torch.compile in a child per mode (the budget's modes in order, until one works), each capped
    at min(cap_s, what the budget has left). Returns a dict: mode, compile_s (per batch size), rows,
    torch (its version); or {"not_measured": reason}. `workdir` holds the module and the inputs for
    the child (written once per model: model.pt, inputs.npy)."""
    model_path = os.path.join(workdir, "model.pt")
    inputs_path = os.path.join(workdir, "inputs.npy")
    if not os.path.exists(model_path):
        import torch
        torch.save(model, model_path)
        np.save(inputs_path, inputs)
    reasons = []
    for mode in list(budget.modes):
        cap = min(cap_s, budget.left())
        if cap < 5:
            reasons.append(f"{mode}: not started, the compile budget is spent")
            break
        cmd = [sys.executable, os.path.abspath(__file__), "--model", model_path, "--inputs", inputs_path,
               "--precision", precision, "--batch", ",".join(map(str, batches)), "--seconds", str(seconds),
               "--mode", mode]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=cap)
        except subprocess.TimeoutExpired:
            reasons.append(f"{mode}: over its {cap:.0f} s cap")
            if cap >= cap_s and len(budget.modes) > 1:
                budget.modes.remove(mode)
            continue
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode == 0 and lines:
            return json.loads(lines[-1])
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        reasons.append(f"{mode}: {why[:200]}")
        if done.returncode == 3:  # no torch.compile or no GPU here: the other mode cannot do better
            break
    return {"not_measured": "; ".join(reasons)}


def _compile_child(args):
    """This file as a script: one model, one precision, one mode. Prints one JSON object. Exit 3
    when torch.compile cannot run here at all (old PyTorch, no CUDA), 1 when the compile fails."""
    import torch
    if not hasattr(torch, "compile"):
        sys.stderr.write(f"torch.compile needs PyTorch 2.0 or newer; this is {torch.__version__}\n")
        return 3
    if not torch.cuda.is_available():
        sys.stderr.write("no CUDA GPU visible to PyTorch\n")
        return 3
    dtype = _precision_setup(torch, args.precision)
    try:
        import torch._inductor.config as inductor_config
        inductor_config.freezing = True
    except (ImportError, AttributeError):
        pass  # an Inductor without freezing: the weights stay parameters
    # The module was saved whole by the parent (torch.save); its classes are importable from the
    # parent's paths, which this process shares.
    sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train")]
    try:
        model = torch.load(args.model, weights_only=False)
    except TypeError:  # a PyTorch before weights_only
        model = torch.load(args.model)
    inputs = np.load(args.inputs)
    if args.precision == "fp16":
        inputs = inputs.astype(np.float16)
    dev = torch.device("cuda")
    m = model.eval().to(dev, dtype)
    compiled = torch.compile(m, mode=args.mode, fullgraph=True, dynamic=False)
    sync = torch.cuda.synchronize
    rows, compile_s = [], {}
    with torch.no_grad():
        for b in [int(x) for x in args.batch.split(",")]:
            t = time.perf_counter()
            compiled(torch.from_numpy(inputs[:b]).to(dev)).cpu()  # the compile for this shape happens here
            sync()
            compile_s[str(b)] = time.perf_counter() - t
            rows.append(time_batches(lambda x: compiled(torch.from_numpy(x).to(dev)).cpu().numpy(), inputs, b,
                                     args.seconds, sync))
    print(json.dumps({"mode": args.mode, "torch": torch.__version__, "compile_s": compile_s, "rows": rows}))
    return 0


def compile_workdir():
    """A temporary folder for one model's torch.compile children (a context manager)."""
    return tempfile.TemporaryDirectory(prefix="infer-compile-peer-")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="one torch.compile peer run (bench_peers.py starts it)")
    ap.add_argument("--model", required=True, help="the module, torch.save'd whole")
    ap.add_argument("--inputs", required=True, help="float32 inputs, .npy")
    ap.add_argument("--precision", choices=["fp32", "tf32", "fp16"], required=True)
    ap.add_argument("--batch", required=True)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--mode", choices=COMPILE_MODES, required=True)
    sys.exit(_compile_child(ap.parse_args()))
