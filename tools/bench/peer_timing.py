"""What bench_peers.py and start_and_contention.py both do to a peer: time a callable over batches of
inputs, export a PyTorch module to ONNX with the batch dimension free, and open an ONNX Runtime
session with a chosen thread count."""
import time

import numpy as np


def percentiles(lat_ms):
    s = sorted(lat_ms)
    pick = lambda p: s[min(len(s) - 1, int(p / 100 * len(s)))]  # noqa: E731  same rule as infer-bench
    return pick(50), pick(90), pick(99)


def time_batches(run, inputs, batch, seconds, sync=lambda: None):
    """Warm-up 0.2 s, then timed calls over rotating slices for `seconds` (at least 5 calls)."""
    n = inputs.shape[0]
    offset = 0

    def next_slice():
        nonlocal offset
        if offset + batch > n:
            offset = 0
        s = inputs[offset:offset + batch]
        offset += batch
        return s

    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.2:
        run(next_slice())
    sync()
    lat = []
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds or len(lat) < 5:
        x = next_slice()
        t = time.perf_counter()
        run(x)
        sync()
        lat.append((time.perf_counter() - t) * 1000.0)
    p50, p90, p99 = percentiles(lat)
    return {"batch": batch, "iterations": len(lat), "images_per_s": batch * len(lat) / (sum(lat) / 1000.0),
            "p50_ms": p50, "p90_ms": p90, "p99_ms": p99}


def export_onnx(module, example, path, opset):
    """torch.onnx.export of `module` on `example` (a numpy batch) to `path`: input "x", output "y",
    the batch dimension free."""
    import torch
    torch.onnx.export(module, torch.from_numpy(np.ascontiguousarray(example)), path, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "n"}, "y": {0: "n"}}, opset_version=opset)
    return path


def ort_session(path, threads):
    """An ONNX Runtime CPU session: `threads` intra-op threads, one inter-op thread."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
