#!/usr/bin/env python3
"""Shared helpers for the `infer` model format (TOML graph + safetensors weights).

- read/write safetensors by hand (no external package needed)
- export(model, toml_path, st_path, meta): write the shipped model (tools/train/train.py), an
  nn.Module whose forward() is exactly its children in order, into weights/*.toml + *.safetensors.
  It refuses any other module (torch.fx shows what forward() does) and checks the written files
  against the module before keeping them. To deploy your own model, use torch.onnx.export and
  `infer --model model.onnx` (docs/deploy-your-model.md): that route has the whole graph.
- load_model(toml_path): rebuild a PyTorch module generically from those files
- Fashion-MNIST idx readers for Debian's dataset-fashion-mnist package

Use with Debian's /usr/bin/python3 (torch from python3-torch, tomllib from 3.11).
"""
import gzip
import hashlib
import json
import os
import struct
import tomllib

import numpy as np
import torch
import torch.nn as nn

DATA_DIR = os.environ.get("FASHION_MNIST_DIR") or "/usr/share/datasets/fashion-mnist"
LABELS = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
          "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]

# ----------------------------------------------------------------- dataset

def read_idx(path):
    """Read a (gzipped) idx file: big-endian magic (0,0,dtype,ndim), dims, data."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    zero, dtype_code, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{path}: unsupported idx header")
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path}: size mismatch")
    return data.reshape(dims).copy()


def load_fashion(split):
    """split in {'train', 't10k'} -> (images u8 [N,28,28], labels u8 [N])."""
    imgs = read_idx(os.path.join(DATA_DIR, f"{split}-images-idx3-ubyte.gz"))
    labs = read_idx(os.path.join(DATA_DIR, f"{split}-labels-idx1-ubyte.gz"))
    assert imgs.shape[0] == labs.shape[0]
    return imgs, labs

# ------------------------------------------------------------- safetensors

_NP2ST = {np.dtype("float32"): "F32", np.dtype("float64"): "F64",
          np.dtype("uint8"): "U8", np.dtype("int8"): "I8",
          np.dtype("int32"): "I32", np.dtype("int64"): "I64",
          np.dtype("float16"): "F16"}
_ST2NP = {v: k for k, v in _NP2ST.items()}


def write_safetensors(path, tensors, metadata=None):
    """tensors: ordered dict name -> numpy array (written in that order)."""
    header = {}
    blobs = []
    offset = 0
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr)
        arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
        st = _NP2ST[np.dtype(arr.dtype.name)]
        b = arr.tobytes(order="C")
        header[name] = {"dtype": st, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    if metadata:
        header = {"__metadata__": {str(k): str(v) for k, v in metadata.items()},
                  **header}
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((-len(hjson)) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def read_safetensors(path):
    """-> (dict name -> numpy array (native byte order copy), metadata dict)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    base = 8 + n
    out = {}
    for name, info in header.items():
        b0, b1 = info["data_offsets"]
        dt = _ST2NP[info["dtype"]].newbyteorder("<")
        arr = np.frombuffer(raw, dtype=dt, count=(b1 - b0) // dt.itemsize,
                            offset=base + b0)
        out[name] = arr.reshape(info["shape"]).astype(dt.newbyteorder("="))
    return out, meta


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

# ------------------------------------------------------------------ export

def _f(x):
    """Format a float so TOML parses it as a float."""
    s = repr(float(x))
    if "e" not in s and "." not in s and "inf" not in s and "nan" not in s:
        s += ".0"
    return s


def _pair(v):
    return list(v) if isinstance(v, (tuple, list)) else [v, v]


def export(model, toml_path, st_path, meta=None, *, name="fashion-mnist-cnn",
           mean=(0.2860,), std=(0.3530,), input_shape=(1, 28, 28),
           labels=LABELS, header_comment="", preprocessing=None):
    """Export `model` (its named top-level children, in order) to the infer format.

    Supported children: Conv2d, BatchNorm2d, ReLU, MaxPool2d, AvgPool2d,
    AdaptiveAvgPool2d(1), Flatten, Linear, Softmax; Dropout is skipped.
    preprocessing: [input] keys saying how infer turns an image into the input (docs/model-format.md):
    resize, resize_size, channel_order, invert. None: Fashion-MNIST's own (trim_fit, invert auto)
    when the name is the default one, else infer's defaults (crop, rgb, no inversion).
    """
    _require_chain(model)
    if preprocessing is None:
        preprocessing = {"resize": "trim_fit", "invert": "auto"} if name == "fashion-mnist-cnn" else {}
    meta = dict(meta or {})
    lines = []
    for c in header_comment.strip("\n").splitlines():
        lines.append("# " + c if c else "#")
    st_rel = os.path.relpath(st_path, os.path.dirname(os.path.abspath(toml_path)))
    lines += ['format = "infer-model"', "format_version = 1",
              f"name = {json.dumps(name)}", f"weights = {json.dumps(st_rel)}", "",
              "[input]", f"channels = {input_shape[0]}",
              f"height = {input_shape[1]}", f"width = {input_shape[2]}",
              "mean = [" + ", ".join(_f(m) for m in mean) + "]",
              "std = [" + ", ".join(_f(s) for s in std) + "]",
              "labels = [" + ", ".join(json.dumps(l) for l in labels) + "]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in preprocessing.items()]

    tensors = {}

    def put(key, t):
        tensors[key] = t.detach().cpu().to(torch.float32).contiguous().numpy()

    for lname, m in model.named_children():
        L = ["", "[[layers]]", f"name = {json.dumps(lname)}"]
        if isinstance(m, nn.Dropout):
            continue
        if isinstance(m, nn.Conv2d):
            if m.padding_mode != "zeros" or isinstance(m.padding, str):
                raise ValueError(f"{lname}: only explicit zero padding supported")
            L += ['type = "conv2d"', f"out_channels = {m.out_channels}",
                  f"kernel = {_pair(m.kernel_size)}", f"stride = {_pair(m.stride)}",
                  f"padding = {_pair(m.padding)}",
                  f"dilation = {_pair(m.dilation)}", f"groups = {m.groups}",
                  f"bias = {'true' if m.bias is not None else 'false'}"]
            put(f"{lname}.weight", m.weight)
            if m.bias is not None:
                put(f"{lname}.bias", m.bias)
        elif isinstance(m, nn.BatchNorm2d):
            if not (m.affine and m.track_running_stats):
                raise ValueError(f"{lname}: need affine BN with running stats")
            L += ['type = "batchnorm"', f"epsilon = {_f(m.eps)}"]
            put(f"{lname}.weight", m.weight)
            put(f"{lname}.bias", m.bias)
            put(f"{lname}.running_mean", m.running_mean)
            put(f"{lname}.running_var", m.running_var)
        elif isinstance(m, nn.ReLU):
            L += ['type = "relu"']
        elif isinstance(m, (nn.MaxPool2d, nn.AvgPool2d)):
            if m.ceil_mode:
                raise ValueError(f"{lname}: ceil_mode unsupported")
            stride = m.stride if m.stride is not None else m.kernel_size
            if isinstance(m, nn.MaxPool2d):
                if _pair(m.dilation) != [1, 1]:
                    raise ValueError(f"{lname}: pool dilation unsupported")
                L += ['type = "maxpool"']
            else:
                L += ['type = "avgpool"']
            L += [f"kernel = {_pair(m.kernel_size)}", f"stride = {_pair(stride)}",
                  f"padding = {_pair(m.padding)}"]
            if isinstance(m, nn.AvgPool2d):
                L += [f"count_include_pad = {'true' if m.count_include_pad else 'false'}"]
        elif isinstance(m, nn.AdaptiveAvgPool2d):
            if _pair(m.output_size) != [1, 1]:
                raise ValueError(f"{lname}: only global (1x1) adaptive pooling")
            L += ['type = "global_avgpool"']
        elif isinstance(m, nn.Flatten):
            L += ['type = "flatten"']
        elif isinstance(m, nn.Linear):
            L += ['type = "linear"', f"out_features = {m.out_features}",
                  f"bias = {'true' if m.bias is not None else 'false'}"]
            put(f"{lname}.weight", m.weight)
            if m.bias is not None:
                put(f"{lname}.bias", m.bias)
        elif isinstance(m, nn.Softmax):
            L += ['type = "softmax"']
        else:
            raise ValueError(f"{lname}: unsupported module {type(m).__name__}")
        lines += L

    meta.setdefault("format", "pt")
    write_safetensors(st_path, tensors, meta)
    text = "\n".join(lines) + "\n"
    tomllib.loads(text)  # sanity: must parse
    tmp = toml_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, toml_path)
    try:
        _check_round_trip(model, toml_path, input_shape)
    except Exception:
        for path in (toml_path, st_path):
            if os.path.exists(path):
                os.remove(path)
        raise
    return tensors


class ExportError(ValueError):
    """export() cannot write this module as it computes."""


def _require_chain(model):
    """Refuse a module whose forward() is anything but its children applied in order: a skip
    connection, a torch.cat, a functional call or a reused child would be written as another
    network. torch.fx traces forward() into its graph of calls."""
    import torch.fx
    children = [name for name, m in model.named_children()]
    try:
        graph = torch.fx.symbolic_trace(model).graph
    except Exception as e:
        raise ExportError(f"forward() cannot be traced ({e}); export it with torch.onnx.export") from e
    previous = None
    called = []
    for node in graph.nodes:
        if node.op == "placeholder":
            previous = node
        elif node.op == "call_module" and len(node.args) == 1 and node.args[0] is previous and not node.kwargs:
            called.append(node.target)
            previous = node
        elif node.op == "output" and node.args[0] is previous:
            pass
        else:
            raise ExportError(
                f"forward() does more than apply the children in order: {node.op} {node.target} "
                f"(node {node.name}, reading {', '.join(str(a) for a in node.args)}). export() writes a chain "
                "and would write another network; use torch.onnx.export and infer --model model.onnx")
    expected = [n for n in children if not isinstance(getattr(model, n), nn.Dropout)]
    if [c for c in called if not isinstance(model.get_submodule(c), nn.Dropout)] != expected:
        raise ExportError(f"forward() calls {called}, not each child once in order ({children})")


def _check_round_trip(model, toml_path, input_shape):
    """The written files, read back, must compute what the module computes on a random input,
    within float32's rounding of the two (a relative 1e-4 of the output's largest value: the same
    sums in another order, ~K * 2^-24 for K up to a few thousand)."""
    was_training = model.training
    model.eval()
    x = torch.rand(2, *input_shape)
    with torch.no_grad():
        want = model(x)
        got = load_model(toml_path)(x)
    model.train(was_training)
    scale = float(want.abs().max()) or 1.0
    worst = float((got - want).abs().max())
    if not worst <= 1e-4 * scale:
        raise ExportError(f"the written model differs from the module by {worst} (outputs up to {scale})")

# ------------------------------------------------------------------ reader

def load_model(toml_path, dtype=None):
    """Build a PyTorch module from an infer-model TOML + its safetensors file.

    Returns an InferModel (eval mode) with attributes .config (parsed TOML),
    .mean/.std, .labels; model(x) -> probs (if the graph ends in softmax),
    model.logits(x) -> output of the layer before the final softmax.
    """
    with open(toml_path, "rb") as f:
        cfg = tomllib.load(f)
    if cfg.get("format") != "infer-model" or cfg.get("format_version") != 1:
        raise ValueError(f"{toml_path}: not an infer-model v1 file")
    st_path = os.path.join(os.path.dirname(os.path.abspath(toml_path)), cfg["weights"])
    weights, st_meta = read_safetensors(st_path)
    used = set()

    def W(key, shape):
        if key not in weights:
            raise KeyError(f"missing tensor {key}")
        arr = weights[key]
        if list(arr.shape) != list(shape):
            raise ValueError(f"{key}: shape {list(arr.shape)} != expected {list(shape)}")
        used.add(key)
        return torch.from_numpy(np.array(arr, dtype=np.float32))

    inp = cfg["input"]
    shape = [inp["channels"], inp["height"], inp["width"]]  # current C,H,W or [F]
    mods = []
    for L in cfg["layers"]:
        n, t = L["name"], L["type"]
        if t == "conv2d":
            C, H, Wd = shape
            k, s, p, d = L["kernel"], L["stride"], L["padding"], L["dilation"]
            g, K, bias = L.get("groups", 1), L["out_channels"], L.get("bias", True)
            m = nn.Conv2d(C, K, tuple(k), tuple(s), tuple(p), tuple(d), g, bias)
            with torch.no_grad():
                m.weight.copy_(W(f"{n}.weight", [K, C // g, k[0], k[1]]))
                if bias:
                    m.bias.copy_(W(f"{n}.bias", [K]))
            Ho = (H + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
            Wo = (Wd + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
            shape = [K, Ho, Wo]
        elif t == "batchnorm":
            C = shape[0]
            m = nn.BatchNorm2d(C, eps=float(L.get("epsilon", 1e-5)))
            with torch.no_grad():
                for attr in ("weight", "bias", "running_mean", "running_var"):
                    getattr(m, attr).copy_(W(f"{n}.{attr}", [C]))
        elif t == "relu":
            m = nn.ReLU()
        elif t in ("maxpool", "avgpool"):
            C, H, Wd = shape
            k, s, p = L["kernel"], L["stride"], L["padding"]
            if t == "maxpool":
                m = nn.MaxPool2d(tuple(k), tuple(s), tuple(p))
            else:
                m = nn.AvgPool2d(tuple(k), tuple(s), tuple(p),
                                 count_include_pad=L.get("count_include_pad", True))
            shape = [C, (H + 2 * p[0] - k[0]) // s[0] + 1,
                     (Wd + 2 * p[1] - k[1]) // s[1] + 1]
        elif t == "global_avgpool":
            m = nn.AdaptiveAvgPool2d(1)
            shape = [shape[0], 1, 1]
        elif t == "flatten":
            m = nn.Flatten()
            shape = [int(np.prod(shape))]
        elif t == "linear":
            (F,) = shape
            O, bias = L["out_features"], L.get("bias", True)
            m = nn.Linear(F, O, bias)
            with torch.no_grad():
                m.weight.copy_(W(f"{n}.weight", [O, F]))
                if bias:
                    m.bias.copy_(W(f"{n}.bias", [O]))
            shape = [O]
        elif t == "softmax":
            m = nn.Softmax(dim=1)
        else:
            raise ValueError(f"layer {n}: unknown type {t}")
        mods.append((n, m))
    extra = set(weights) - used
    if extra:
        raise ValueError(f"unused tensors in {st_path}: {sorted(extra)}")

    model = InferModel(mods, cfg, st_meta)
    if dtype is not None:
        model = model.to(dtype)
    return model.eval()


class InferModel(nn.Module):
    def __init__(self, mods, cfg, st_meta):
        super().__init__()
        for n, m in mods:
            self.add_module(n, m)
        self.names = [n for n, _ in mods]
        self.config = cfg
        self.st_meta = st_meta
        self.mean = list(cfg["input"]["mean"])
        self.std = list(cfg["input"]["std"])
        self.labels = list(cfg["input"].get("labels", []))
        self.ends_in_softmax = cfg["layers"][-1]["type"] == "softmax"

    def preprocess(self, images_u8, dtype=torch.float32):
        """u8 [N,H,W] or [N,C,H,W] -> normalized tensor [N,C,H,W]."""
        x = torch.as_tensor(np.asarray(images_u8))
        if x.dim() == 3:
            x = x.unsqueeze(1)
        x = x.to(dtype) / 255.0
        mean = torch.tensor(self.mean, dtype=dtype).view(1, -1, 1, 1)
        std = torch.tensor(self.std, dtype=dtype).view(1, -1, 1, 1)
        return (x - mean) / std

    def logits(self, x):
        mods = list(self.children())
        if self.ends_in_softmax:
            mods = mods[:-1]
        for m in mods:
            x = m(x)
        return x

    def forward(self, x):
        for m in self.children():
            x = m(x)
        return x
