#!/usr/bin/env python3
"""Export torchvision architectures to ONNX and record ONNX Runtime's outputs on them, for the
conformance test (tests/formats/test_torchvision.cpp): infer must agree with ONNX Runtime on each model.

    tools/train/torchvision_conformance.py OUTDIR [--models resnet18,mobilenet_v2,...] [--size 224]
                                            [--count 100] [--seed 0] [--opset 14] [--keep-going]

Run with Debian's Python (/usr/bin/python3: python3-torch and python3-torchvision, tools/dev/install-deps.sh)
and onnxruntime importable: tools/dev/ort-venv.sh makes a virtual environment with Debian's packages
visible and the onnxruntime wheel from PyPI, in a cache outside the repository.

Each model is built with random weights (seeded) and realistic batch-norm statistics: in training
mode with a cumulative average (momentum None), a few batches of random images set the running mean
and variance, as training would; then it is put in eval mode and exported with torch.onnx.export
(opset 14 unless --opset, the batch dimension free). A name that torchvision.models lacks is looked up
in torchvision.models.segmentation (fcn_resnet50, deeplabv3_mobilenet_v3_large, lraspp_mobilenet_v3_large,
...): those run without their auxiliary head, and their output, the 'out' map [N, classes, H, W], is
compared flattened. With --keep-going, a model that fails to build, export or run in ONNX Runtime is
reported and left out, and the others go on (the survey of docs/testing.md); without it the script
stops there. Nothing is downloaded and nothing large is committed.

Written per model, under OUTDIR:
    NAME.onnx          the exported model
    NAME.input.bin     COUNT inputs, float32 [COUNT, 3, SIZE, SIZE], little-endian: random images in
                       [0, 1] normalised with ImageNet's mean and std, as a preprocessed photo is
    NAME.ort.bin       ONNX Runtime's outputs on them (CPU execution provider), float32 [COUNT, classes]
    NAME.torch.bin     PyTorch's outputs on them, the same layout
"residual" is not torchvision's: it is the module of the trial that tools/train/infer_model.py's old exporter
wrote silently as another network (a forward() that adds a skip connection), here through the
documented route, torch.onnx.export. Nor is "gelu_cnn": two convolutions with nn.GELU() after each,
PyTorch's export of GELU (five nodes) as ConvNeXt has it; nor "convnext_small_cnn", a small ConvNeXt
of torchvision's blocks (channels-last LayerNorm, Linear as MatMul, the layer scale). ConvNeXt's
layer scales and every LayerNorm's weight and bias are drawn as training leaves them (trained_like).
and OUTDIR/conformance.json: the models, sizes, counts and the versions of torch, torchvision and
onnxruntime, and the SHA-256 of this script. When that file already records the same request, the
same versions and this script, nothing is redone (CTest's fixture runs the script before each test
run that needs it). Exit status 0, or 1 with a message when a package is missing.
"""
import argparse
import hashlib
import json
import os
import sys

DEFAULT_MODELS = "residual,gelu_cnn,convnext_small_cnn,resnet18,mobilenet_v2,mobilenet_v3_small,efficientnet_b0,squeezenet1_0,shufflenet_v2_x0_5,mnasnet0_5,lraspp_mobilenet_v3_large"
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def residual_module(torch):
    """The trial's residual model: conv-bn-relu, conv-bn, the sum with the block's input, ReLU."""
    nn = torch.nn

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU())
            self.conv1 = nn.Conv2d(16, 16, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(16)
            self.conv2 = nn.Conv2d(16, 16, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(16)
            self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))

        def forward(self, x):
            x = self.stem(x)
            y = torch.relu(self.bn1(self.conv1(x)))
            return self.head(torch.relu(self.bn2(self.conv2(y)) + x))

    return Residual()


def gelu_module(torch):
    """A small CNN with PyTorch's exact GELU as its activation (ConvNeXt's, exported below opset 20
    as Div, Erf, Add, Mul, Mul)."""
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.GELU(),
                         nn.Conv2d(16, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.GELU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def convnext_module(torch):
    """A small ConvNeXt of torchvision's own parts: a 4x4 stride-4 stem and its LayerNorm2d, two
    CNBlocks, a downsampling (LayerNorm2d, a 2x2 stride-2 conv), one more CNBlock, and the head's
    pooling, LayerNorm2d, Flatten and Linear: every op of convnext_tiny at a small part of its cost."""
    from torchvision.models.convnext import CNBlock, LayerNorm2d
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(3, 16, 4, 4), LayerNorm2d(16, eps=1e-6),
                         CNBlock(16, 0.5, 0.0), CNBlock(16, 0.5, 0.0),
                         LayerNorm2d(16, eps=1e-6), nn.Conv2d(16, 32, 2, 2), CNBlock(32, 0.5, 0.0),
                         nn.AdaptiveAvgPool2d(1), LayerNorm2d(32, eps=1e-6), nn.Flatten(1), nn.Linear(32, 10))


# The modules that are not torchvision's, by name.
OWN_MODULES = {"residual": residual_module, "gelu_cnn": gelu_module, "convnext_small_cnn": convnext_module}


def trained_like(torch, model, seed):
    """What initialisation leaves degenerate, drawn as training leaves it: ConvNeXt's layer scales
    (1e-6 at initialisation, so that its blocks add almost nothing) from [0.1, 1], every LayerNorm's
    weight from [0.5, 1.5] and bias from [-0.2, 0.2] (1 and 0). A generator of its own: the inputs'
    draws, and so the other models' data, stay as they were."""
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("layer_scale"):
                p.copy_(torch.rand(p.shape, generator=gen) * 0.9 + 0.1)
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm) and m.elementwise_affine:
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                m.bias.copy_((torch.rand(m.bias.shape, generator=gen) - 0.5) * 0.4)


def build(torch, torchvision, name):
    """The module `name`: one of OWN_MODULES, a torchvision classifier, or a segmentation model
    whose forward returns its 'out' map alone."""
    if name in OWN_MODULES:
        return OWN_MODULES[name](torch)
    if name in ("googlenet", "inception_v3"):  # the auxiliary heads train only; they do not run in eval
        return getattr(torchvision.models, name)(weights=None, aux_logits=False, init_weights=True)
    if hasattr(torchvision.models, name):
        return getattr(torchvision.models, name)(weights=None)
    inner = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None, aux_loss=False)

    class Out(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x)["out"]

    return Out()


def export(torch, model, sample, path, opset=14):
    """torch.onnx.export at `opset` with a free batch dimension. PyTorch 2.9 and later export through
    torch.export (dynamo=True) by default, whose graphs are another exporter's; the TorchScript
    exporter, what Debian's PyTorch has, is asked for where the keyword exists, so that every
    machine exports the same way. Where it is gone, the default exporter is used and said so."""
    import inspect
    kwargs = dict(opset_version=opset, input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        try:
            torch.onnx.export(model, sample, path, dynamo=False, **kwargs)
            return
        except Exception as e:  # the TorchScript exporter removed or refusing: the default one
            print(f"torch.onnx.export(dynamo=False) failed ({type(e).__name__}: {e}); using the default exporter",
                  flush=True)
    torch.onnx.export(model, sample, path, **kwargs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--opset", type=int, default=14)
    ap.add_argument("--keep-going", action="store_true", help="report a model that fails and go on")
    args = ap.parse_args()
    from importlib import metadata
    try:
        versions = {p: metadata.version(p) for p in ("torch", "torchvision", "onnxruntime")}
    except metadata.PackageNotFoundError as e:
        sys.exit(f"torchvision_conformance: {e} is not installed: install python3-torchvision "
                 "(tools/dev/install-deps.sh) and onnxruntime (tools/dev/ort-venv.sh)")

    with open(os.path.abspath(__file__), "rb") as f:
        script = hashlib.sha256(f.read()).hexdigest()
    record = dict(versions, size=args.size, count=args.count, seed=args.seed, opset=args.opset, script=script,
                  models=[])
    names = args.models.split(",")
    try:
        with open(os.path.join(args.outdir, "conformance.json")) as f:
            old = json.load(f)
        if ({k: v for k, v in old.items() if k != "models"} == {k: v for k, v in record.items() if k != "models"} and
                [m["name"] for m in old["models"]] == names and
                all(os.path.exists(os.path.join(args.outdir, n + ext)) for n in names
                    for ext in (".onnx", ".input.bin", ".ort.bin", ".torch.bin"))):
            print(f"{args.outdir}: up to date ({', '.join(names)} at {args.size}x{args.size})")
            return
    except (OSError, ValueError, KeyError):
        pass

    import numpy as np
    import onnxruntime as ort
    import torch
    import torchvision

    os.makedirs(args.outdir, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)

    def images(n, gen):
        return (torch.rand(n, 3, args.size, args.size, generator=gen) - mean) / std

    def one(name):
        gen = torch.Generator().manual_seed(args.seed)
        torch.manual_seed(args.seed)
        model = build(torch, torchvision, name)
        trained_like(torch, model, args.seed)
        # Realistic batch-norm statistics: cumulative averages over a few batches in training mode.
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.momentum = None
                m.reset_running_stats()
        model.train()
        with torch.no_grad():
            for _ in range(4):
                model(images(8, gen))
        model.eval()
        onnx_path = os.path.join(args.outdir, name + ".onnx")
        export(torch, model, images(1, gen), onnx_path, args.opset)
        x = images(args.count, gen).numpy().astype(np.float32)
        session = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
        y = np.concatenate([session.run(None, {"x": x[i:i + 10]})[0] for i in range(0, args.count, 10)])
        with torch.no_grad():
            t = model(torch.from_numpy(x)).numpy()
        y = y.reshape(args.count, -1)
        t.reshape(args.count, -1).astype("<f4").tofile(os.path.join(args.outdir, name + ".torch.bin"))
        x.astype("<f4").tofile(os.path.join(args.outdir, name + ".input.bin"))
        y.astype("<f4").tofile(os.path.join(args.outdir, name + ".ort.bin"))
        record["models"].append({"name": name, "classes": int(y.shape[1])})
        print(f"{name}: exported at opset {args.opset}, ONNX Runtime ran {args.count} inputs of 3x{args.size}x{args.size}",
              flush=True)

    for name in names:
        try:
            one(name)
        except Exception as e:  # noqa: BLE001 - the survey reports every failure and goes on
            if not args.keep_going:
                raise
            print(f"{name}: FAILED before infer ran ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})",
                  flush=True)
            record.setdefault("failed", []).append({"name": name, "error": f"{type(e).__name__}: {e}"[:300]})
    with open(os.path.join(args.outdir, "conformance.json"), "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
