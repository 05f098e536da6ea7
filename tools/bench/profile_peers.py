#!/usr/bin/env python3
"""Where the time goes, ours against ONNX Runtime, on one ONNX model: both profiled on the same
batch, their layers grouped by kind, each kind's milliseconds per image and GFLOP/s.

    build/bench-venv/bin/python tools/bench/profile_peers.py MODEL.onnx [--batch 16] [--threads 2]
                                [--seconds 3] [--cpu-kernels onednn] [--cpu-isa avx2]

Ours: infer-bench --model MODEL.onnx with ONEDNN_VERBOSE=1 (oneDNN prints every primitive it runs
and its time). ONNX Runtime: its session profiling (per node, after its graph optimisations:
NCHWc convolutions with fused activations and adds). Kinds of convolution: first (3 input
channels or fewer), depthwise, 1x1, 3x3 stride 1, 3x3 stride 2, other; then the other ops by name.
FLOPs count 2 per multiply-add of the direct algorithm, so a Winograd convolution shows a rate
above the machine's peak. --cpu-isa avx2 runs both under libinfer_isa_cap (bench/isa_cap.c).
tools/bench/bench.sh makes build/bench-venv (ONNX Runtime from PyPI).
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

from isa_cap import cap_isa_or_reexec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/<group>/ -> the root


def conv_kind(in_c, groups, kh, stride):
    if in_c <= 3:
        return "conv first"
    if groups > 1 and groups == in_c:
        return "conv depthwise"
    if kh == 1:
        return "conv 1x1"
    if kh == 3:
        return f"conv 3x3 stride {stride}"
    return "conv other"


def conv_flops(n, out_c, oh, ow, in_c, groups, kh, kw):
    return 2.0 * n * out_c * oh * ow * (in_c // groups) * kh * kw


# oneDNN's convolution problem string: g96mb16_ic96oc96_ih112oh56kh3sh2dh0ph1_iw112ow56kw3sw2dw0pw1
CONV = re.compile(r"(?:g(\d+))?mb(\d+)_ic(\d+)oc(\d+)_ih(\d+)oh(\d+)kh(\d+)sh(\d+).*_iw(\d+)ow(\d+)kw(\d+)")


def ours(exe, model, batch, seconds, threads, kernels, env):
    out = subprocess.run([exe, "--device", "cpu", "--model", model, "--top-k", "0", "--batch", str(batch),
                          "--seconds", str(seconds), "--threads", str(threads), "--cpu-kernels", kernels, "--json"],
                         env=dict(env, ONEDNN_VERBOSE="1"), check=True, capture_output=True, text=True).stdout
    ms, flops, images = collections.Counter(), collections.Counter(), 0
    result = None
    for line in out.splitlines():
        if line.startswith("{"):
            result = json.loads(line)
        if not line.startswith("onednn_verbose,exec,"):
            continue
        f = line.split(",")
        kind, impl, problem, t = f[3], f[4], f[-2], float(f[-1])
        m = CONV.match(problem) if kind == "convolution" else None
        if m:
            g, n, ic, oc, ih, oh, kh, sh, iw, ow, kw = (int(x) if x else 1 for x in m.groups())
            key = conv_kind(ic, g, kh, sh) + (" (Winograd)" if "wino" in impl else "")
            flops[key] += conv_flops(n, oc, oh, ow, ic, g, kh, kw)
            if kh == 7 or ic <= 3:
                images += n  # the first convolution runs once per image
        else:
            key = kind
        ms[key] += t
    return ms, flops, images, result


def onnxruntime(model, batch, seconds, threads):
    import numpy as np
    import onnxruntime as ort
    import onnx
    graph = onnx.load(model).graph
    dims = [d.dim_value for d in graph.input[0].type.tensor_type.shape.dim][1:]
    x = np.random.default_rng(0).standard_normal([batch] + dims, dtype=np.float32)
    with tempfile.TemporaryDirectory() as d:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.enable_profiling = True
        opts.profile_file_prefix = os.path.join(d, "ort")
        sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        name = sess.get_inputs()[0].name
        import time
        for _ in range(3):
            sess.run(None, {name: x})
        runs, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds or runs < 3:
            sess.run(None, {name: x})
            runs += 1
        events = json.load(open(sess.end_profiling()))
    ms, flops = collections.Counter(), collections.Counter()
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        a = e["args"]
        op = a.get("op_name")
        key = op
        if op == "Conv":
            shapes = [list(s.values())[0] for s in a.get("input_type_shape", [])]
            out = [list(s.values())[0] for s in a.get("output_type_shape", [])]
            if len(shapes) >= 2 and out:
                xs, ws, ys = shapes[0], shapes[1], out[0]
                # NCHWc tensors have a fifth dimension (the channel block): channels = C x block.
                in_c = xs[1] * (xs[4] if len(xs) == 5 else 1)
                out_c = ys[1] * (ys[4] if len(ys) == 5 else 1)
                groups = max(1, in_c // ws[1]) if len(ws) == 4 else 1
                kh, kw = (ws[2], ws[3]) if len(ws) == 4 else (1, 1)
                stride = max(1, round(xs[2] / ys[2]))
                key = conv_kind(in_c, groups, kh, stride)
                flops[key] += conv_flops(ys[0], out_c, ys[2], ys[3], in_c, groups, kh, kw)
        ms[key] += e["dur"] / 1000.0
    return ms, flops, batch * (runs + 3), ort.__version__


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--cpu-kernels", default="onednn")
    ap.add_argument("--cpu-isa", choices=["native", "avx2"], default="native")
    args = ap.parse_args()
    if args.cpu_isa == "avx2":
        cap_isa_or_reexec(args.build, "profile_peers")

    o_ms, o_flops, o_images, result = ours(os.path.join(args.build, "bin", "infer-bench"), args.model, args.batch,
                                           args.seconds, args.threads, args.cpu_kernels, os.environ)
    r_ms, r_flops, r_images, version = onnxruntime(args.model, args.batch, args.seconds, args.threads)
    print(f"{os.path.basename(args.model)}, batch {args.batch}, {args.threads} threads, cpu isa {args.cpu_isa}")
    print(f"ours: {result['backend'] if result else '?'}; ONNX Runtime {version}")
    print(f"{'kind':28s} {'ours ms/img':>12s} {'GFLOP/s':>8s} {'ORT ms/img':>12s} {'GFLOP/s':>8s}")
    rows = sorted(set(o_ms) | set(r_ms), key=lambda k: -(o_ms.get(k, 0) / max(o_images, 1)))
    for k in rows:
        o = o_ms.get(k, 0.0) / max(o_images, 1)
        r = r_ms.get(k, 0.0) / max(r_images, 1)
        og = o_flops[k] / (o_ms[k] * 1e6) if o_ms.get(k) and o_flops.get(k) else float("nan")
        rg = r_flops[k] / (r_ms[k] * 1e6) if r_ms.get(k) and r_flops.get(k) else float("nan")
        print(f"{k:28s} {o:12.3f} {og:8.0f} {r:12.3f} {rg:8.0f}")
    print(f"{'total':28s} {sum(o_ms.values()) / max(o_images, 1):12.3f} {'':8s} "
          f"{sum(r_ms.values()) / max(r_images, 1):12.3f}")


if __name__ == "__main__":
    main()
