#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/ (standard library only).

Real files (the samples, the shipped model TOML, VERSIONS.toml and its schema 1 form) are copied; the edge cases that
cannot be taken from the repository (16-bit, palette, alpha and interlaced PNGs, lying headers,
truncations, small safetensors files) are generated here, deterministically. The tiny model and its
variants start from the C++ tests' tiny model (tests/support/model_cases.h: kTinyToml, and the names
and shapes of tiny_tensors()), read from that file, so that it is written once. The shipped
fashion.safetensors (1.9 MB) is not copied: small generated files cover the same structure.
Run from anywhere: python3 tests/fuzz/make_corpus.py. Files it does not write are kept: crash-* are
inputs that once crashed a target (each fixed, with a regression test), kept as seeds.
"""
import json
import math
import pathlib
import re
import struct
import zlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"
MODEL_CASES = ROOT / "tests" / "support" / "model_cases.h"


def out(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def png(width, height, depth, colour, rows, palette=b"", interlace=0, trns=b""):
    ihdr = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, interlace)
    raw = b"".join(b"\0" + r for r in rows)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
    if palette:
        data += chunk(b"PLTE", palette)
    if trns:
        data += chunk(b"tRNS", trns)
    return data + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def ramp(n, step=37):
    return bytes((i * step) & 0xFF for i in range(n))


def images():
    for f in sorted((ROOT / "samples").iterdir()):
        out("fuzz_image", f.name, f.read_bytes())
    trouser = (ROOT / "samples" / "trouser.png").read_bytes()
    jpeg = (ROOT / "samples" / "photo-sneaker.jpg").read_bytes()
    out("fuzz_image", "truncated.png", trouser[: len(trouser) // 2])
    out("fuzz_image", "truncated.jpg", jpeg[: len(jpeg) // 2])
    out("fuzz_image", "grey16.png", png(6, 5, 16, 0, [ramp(12)] * 5))
    out("fuzz_image", "rgb16.png", png(4, 3, 16, 2, [ramp(24)] * 3))
    out("fuzz_image", "palette.png", png(4, 2, 8, 3, [b"\0\1\1\0", b"\1\0\0\1"], b"\0\0\0\xff\xff\xff"))
    out("fuzz_image", "palette-trns.png", png(4, 4, 2, 3, [b"\x1b"] * 4, b"\0\0\0\xff\xff\xff\x80\x80\x80", trns=b"\x00\xff"))
    out("fuzz_image", "grey1bit.png", png(9, 3, 1, 0, [b"\xaa\x80"] * 3))
    out("fuzz_image", "grey-alpha.png", png(5, 5, 8, 4, [ramp(10)] * 5))
    out("fuzz_image", "rgba.png", png(40, 30, 8, 6, [ramp(160)] * 30))
    out("fuzz_image", "interlaced.png", png(9, 9, 8, 2, [ramp(27)] * 9, interlace=1))
    out("fuzz_image", "one-pixel.png", png(1, 1, 8, 0, [b"\x80"]))
    out("fuzz_image", "huge-header.png", png(100000, 100000, 8, 0, [b"\0" * 4]))
    out("fuzz_image", "text.png", "this is not a picture\n")
    # 2x2 24-bit BMP (BITMAPINFOHEADER, rows padded to 4 bytes).
    pixels = b"\x00\x00\xff\xff\xff\xff\x00\x00" + b"\x00\xff\x00\x80\x80\x80\x00\x00"
    bmp = struct.pack("<2sIHHI", b"BM", 54 + len(pixels), 0, 0, 54)
    bmp += struct.pack("<IiiHHIIiiII", 40, 2, 2, 1, 24, 0, len(pixels), 2835, 2835, 0, 0) + pixels
    out("fuzz_image", "small.bmp", bmp)
    out("fuzz_image", "small.pgm", b"P5\n3 2\n255\n" + ramp(6))
    out("fuzz_image", "small16.pgm", b"P5\n2 2\n65535\n" + ramp(8))
    out("fuzz_image", "small.ppm", b"P6\n2 2\n255\n" + ramp(12))
    # Netpbm as pnm.cpp reads it: plain (text) variants, PBM, a comment, maxval not 255 or 65535.
    out("fuzz_image", "plain.pgm", b"P2\n# comment\n3 2\n15\n0 3 7\n9 12 15\n")
    out("fuzz_image", "plain.ppm", b"P3 2 1 1023 0 511 1023 1023 0 12\n")
    out("fuzz_image", "plain.pbm", b"P1\n5 2\n01101\n10010\n")
    out("fuzz_image", "raw.pbm", b"P4\n10 2\n\xa5\xc0\x5a\x40")
    out("fuzz_image", "maxval1023.pgm", b"P5\n2 2\n1023\n\x00\x00\x01\xff\x03\xff\x02\x00")
    # The BMP above stored top-down (negative height).
    top_down = bytearray(bmp)
    struct.pack_into("<i", top_down, 22, -2)
    out("fuzz_image", "top-down.bmp", bytes(top_down))
    # The JPEG with an EXIF segment after SOI: orientation 6, little-endian.
    tiff = b"II*\0\x08\0\0\0" + b"\x01\0" + struct.pack("<HHII", 0x0112, 3, 1, 6) + b"\0\0\0\0"
    app1 = b"Exif\0\0" + tiff
    out("fuzz_image", "exif-orientation6.jpg", jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + jpeg[2:])
    # A 2x2 PNG whose image data inflates to 64 KiB: refused by the inflate bound.
    out("fuzz_image", "small-bomb.png", png(2, 2, 8, 0, [b"\0" * 32767, b"\0" * 32767]))
    # 1x1 GIF89a with a two-colour table (the classic minimal image).
    out("fuzz_image", "small.gif", bytes.fromhex(
        "47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b"))
    # 2x2 uncompressed 24-bit TGA, and the same run-length encoded.
    out("fuzz_image", "small.tga", struct.pack("<BBBHHBHHHHBB", 0, 0, 2, 0, 0, 0, 0, 0, 2, 2, 24, 0) + ramp(12))
    out("fuzz_image", "rle.tga", struct.pack("<BBBHHBHHHHBB", 0, 0, 10, 0, 0, 0, 0, 0, 2, 2, 24, 0) +
        b"\x83\x10\x20\x30")


def safetensors_bytes(tensors, metadata=None, edit=None):
    header, data = {}, b""
    for name, dtype, shape, payload in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    if metadata:
        header["__metadata__"] = metadata
    if edit:
        edit(header)
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + data


def floats(n):
    return b"".join(struct.pack("<f", (i % 7) * 0.25 - 0.75) for i in range(n))


def tiny_model():
    """The tiny model of model_cases.h: the text of kTinyToml, and (name, shape) of each tensor that
    tiny_tensors() makes. The values are not read: the C++ tests draw them at random, seeds need
    fixed ones (floats())."""
    text = MODEL_CASES.read_text()
    toml = re.findall(r'\bkTinyToml = R"\((.*?)\)";', text, re.S)
    body = re.findall(r"\btiny_tensors\(Random& rng\) \{(.*?)\n\}", text, re.S)
    calls = re.findall(r'f32\("([^"]+)",\s*\{([0-9,\s]+)\},\s*rng\)', body[0]) if len(body) == 1 else []
    if len(toml) != 1 or not calls:
        raise SystemExit(f"make_corpus.py: {MODEL_CASES} no longer has kTinyToml as a raw string, or "
                         'tiny_tensors() as calls f32("name", {dims...}, rng): update tiny_model()')
    return toml[0], [(name, [int(d) for d in dims.split(",")]) for name, dims in calls]


TINY_TOML, TINY_SHAPES = tiny_model()
TINY = [(name, "F32", shape, floats(math.prod(shape))) for name, shape in TINY_SHAPES]


def safetensors():
    tiny = safetensors_bytes(TINY, {"format": "pt"})
    out("fuzz_safetensors", "tiny.safetensors", tiny)
    out("fuzz_safetensors", "truncated.safetensors", tiny[: len(tiny) * 2 // 3])
    out("fuzz_safetensors", "dtypes.safetensors", safetensors_bytes(
        [("u8", "U8", [2, 3], bytes(range(6))), ("f16", "F16", [2], b"\0<\0\xbc"), ("i64", "I64", [1], bytes(8)),
         ("scalar", "F32", [], floats(1)), ("empty", "F32", [0, 5], b"")]))

    def overlap(h):
        h["fc.bias"]["data_offsets"] = [0, 12]
    out("fuzz_safetensors", "overlap.safetensors", safetensors_bytes(TINY, edit=overlap))
    fashion = (ROOT / "weights" / "fashion.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", fashion[:8])
    # The shipped file's header with only the first 1 KB of its data section.
    out("fuzz_safetensors", "fashion-head.safetensors", fashion[: 8 + n + 1024])


def edited(text, old, new):
    """`text` with its one `old` replaced by `new` (as edited_toml() in model_cases.h edits kTinyToml)."""
    if text.count(old) != 1:
        raise SystemExit(f"make_corpus.py: {old!r} is not once in kTinyToml ({MODEL_CASES}): update tiny_toml()")
    return text.replace(old, new)


def tiny_toml(size=4, conv="", after_relu=""):
    """kTinyToml with an input of size x size, `conv` added to the convolution's keys and the layers
    `after_relu` between the ReLU and the flatten."""
    toml = edited(TINY_TOML, "height = 4\nwidth = 4", f"height = {size}\nwidth = {size}")
    toml = edited(toml, "padding = [1, 1]\n", "padding = [1, 1]\n" + conv)
    return edited(toml, 'type = "relu"\n', 'type = "relu"\n' + after_relu)


def models():
    out("fuzz_model_toml", "fashion.toml", (ROOT / "weights" / "fashion.toml").read_bytes())
    out("fuzz_model_toml", "tiny.toml", TINY_TOML)
    out("fuzz_model_toml", "tiny-maxpool.toml", tiny_toml(
        8, conv="stride = 1\ndilation = [1, 1]\ngroups = 1\nbias = true\n",
        after_relu='\n[[layers]]\nname = "pool"\ntype = "maxpool"\nkernel = 2\n'))
    out("fuzz_model_toml", "tiny-avgpool.toml", tiny_toml(
        8, after_relu='\n[[layers]]\nname = "bn"\ntype = "batchnorm"\nepsilon = 1e-3\n\n'
                      '[[layers]]\nname = "pool"\ntype = "avgpool"\nkernel = [3, 3]\nstride = 2\n'
                      'padding = 1\ncount_include_pad = false\n'))
    # Format version 2: a graph with every op of several inputs, the pointwise ops, dropout and
    # identity (tests/graph/test_graph.cpp reads the same structure), a -inf pad, upsample, a bilinear
    # resize, adaptive pooling and a layernorm.
    graph = tiny_toml(after_relu=(
        '\n[[layers]]\nname = "drop"\ntype = "dropout"\np = 0.1\n'
        '\n[[layers]]\nname = "sum"\ntype = "add"\ninputs = ["drop", "conv"]\nrelu = true\n'
        '\n[[layers]]\nname = "gate"\ntype = "sigmoid"\n'
        '\n[[layers]]\nname = "scaled"\ntype = "mul"\ninputs = ["sum", "gate"]\n'
        '\n[[layers]]\nname = "same"\ntype = "identity"\n'
        '\n[[layers]]\nname = "joined"\ntype = "concat"\ninputs = ["same", "relu", "input"]\n'
        '\n[[layers]]\nname = "c"\ntype = "clip"\nmin = 0\nmax = 6\n'
        '\n[[layers]]\nname = "hs"\ntype = "hardswish"\n'
        '\n[[layers]]\nname = "hg"\ntype = "hardsigmoid"\nalpha = 0.2\n'
        '\n[[layers]]\nname = "si"\ntype = "silu"\n'
        '\n[[layers]]\nname = "lr"\ntype = "leaky_relu"\nalpha = 0.1\n'
        '\n[[layers]]\nname = "ge"\ntype = "gelu"\n'
        '\n[[layers]]\nname = "p"\ntype = "pad"\npads = [1, 0, 0, 1]\nvalue = -inf\n'
        '\n[[layers]]\nname = "mp"\ntype = "maxpool"\nkernel = 2\nstride = 1\n'
        '\n[[layers]]\nname = "up"\ntype = "upsample"\nscale = [2, 3]\n'
        '\n[[layers]]\nname = "rs"\ntype = "resize"\nsize = [7, 5]\nalign_corners = true\n'
        '\n[[layers]]\nname = "ad"\ntype = "adaptive_avgpool"\noutput = [4, 4]\n'
        '\n[[layers]]\nname = "ln"\ntype = "layernorm"\nepsilon = 1e-6\n'))
    out("fuzz_model_toml", "graph.toml", edited(graph, "format_version = 1", "format_version = 2"))


SMALL_MANIFEST = """schema = 1
[system]
arch = ["x86_64", "aarch64"]
os = { want = "Debian*", severity = "advisory" }
[driver]
release = ">=580.65.06, <600"
runtime_compatible = { severity = "required" }
[gpu]
count = 1
name = { want = ["NVIDIA H100*", "NVIDIA A100*"] }
[cudnn]
version = "9.19.*"
sublibraries = "advisory"
[[model.files]]
path = "weights/fashion.toml"
sha256 = "e21c6172334f4f8e6159433aedfda3370063687994a561f1188198fac4a3f06f"
severity = "advisory"
"""


# Schema 2: the machine's items and two [[backend]] tables with their own sections.
SMALL_MANIFEST_2 = """schema = 2
[gpu]
count = ">=1"
[[backend]]
name = "cu13"
[backend.driver]
release = ">=580.65.06"
[backend.gpu]
compute_capability = ">=7.5"
[[backend]]
name = "cu12"
[backend.cuda]
runtime = "12.*"
[backend.cudnn]
cuda_major = "12"
single_copy = { severity = "advisory" }
"""


def manifests():
    out("fuzz_manifest", "VERSIONS.toml", (ROOT / "VERSIONS.toml").read_bytes())
    out("fuzz_manifest", "VERSIONS.schema1.toml", (ROOT / "tests" / "data" / "VERSIONS.schema1.toml").read_bytes())
    out("fuzz_manifest", "small.toml", SMALL_MANIFEST)
    out("fuzz_manifest", "small-schema2.toml", SMALL_MANIFEST_2)
    for i, c in enumerate(["*", ">=9.1, <10", "9.19.*", "13.0", "!=1.2.3", " == 580.105.08 "]):
        out("fuzz_manifest", f"constraint-{i}.txt", c)


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def autotune_file(entries, edit=None):
    """An autotune cache as AutotuneCache::serialize() writes it (backends/cudnn/autotune/autotune_cache.h), with
    the checksum computed over the entries after `edit`, so that the edit is the file's only defect."""
    doc = {"format": "infer-autotune-cache", "version": 1, "entries": [dict(e) for e in entries]}
    if edit:
        edit(doc)
    canonical = json.dumps(doc["entries"], separators=(",", ":"), ensure_ascii=False).encode()
    doc["checksum"] = fnv1a64(canonical)
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def tune(device, precision, shape, algorithm, fused, workspace, time_ms, cudnn=91900):
    return {"device": device, "cudnn_version": cudnn, "precision": precision, "shape": shape,
            "algorithm": algorithm, "fused": fused, "workspace_bytes": workspace, "time_ms": time_ms}


CONV1 = "x=1x1x28x28 w=32x1x3x3 pad=1,1 stride=1,1 dilation=1,1 groups=1 y=1x32x28x28"
CONV2 = "x=64x32x14x14 w=64x32x3x3 pad=1,1 stride=1,1 dilation=1,1 groups=1 y=64x64x14x14"
TUNED = [tune("NVIDIA A100-SXM4-80GB (sm_80)", "fp16", CONV2, 6, False, 4294967296 + 4096, 0.125, 90100),
         tune("NVIDIA H200 (sm_90)", "fp32", CONV2, 0, True, 0, 12.75),
         tune("NVIDIA H200 (sm_90)", "tf32", CONV1, 1, True, 1048576, 1.5)]


def autotune():
    t = "fuzz_autotune_cache"
    out(t, "valid-one.json", autotune_file(TUNED[2:]))
    out(t, "valid-three.json", autotune_file(TUNED))
    out(t, "valid-empty.json", autotune_file([]))
    out(t, "valid-escapes.json", autotune_file([tune("Caf\u00e9 GPU \"\u03b2\" (sm_120)", "fp16",
                                                     "path\\with\ttab\u0001 \u2014 \U0001f680", 7, False, 1, 0.0)]))
    one = autotune_file(TUNED[2:])
    digit = one.index('"checksum": "') + 13
    out(t, "bad-checksum.json", one[:digit] + ("1" if one[digit] != "1" else "2") + one[digit + 1:])
    out(t, "bad-algorithm-8.json", autotune_file(TUNED, lambda d: d["entries"][0].update(algorithm=8)))
    out(t, "bad-workspace-negative.json", autotune_file(TUNED, lambda d: d["entries"][1].update(workspace_bytes=-1)))
    out(t, "bad-duplicate-key.json", autotune_file(TUNED, lambda d: d["entries"].append(dict(TUNED[1], algorithm=2))))
    out(t, "bad-version.json", autotune_file(TUNED, lambda d: d.update(version=2)))
    three = autotune_file(TUNED)
    out(t, "truncated.json", three[: len(three) // 2])
    out(t, "not-json.txt", "autotune = fast\n")


def http_request(header, binary=b"", length=True):
    """A fuzz_http_request input: the Inference-Header-Content-Length as 4 little-endian bytes
    (0xffffffff: no header), then the body."""
    h = json.dumps(header).encode()
    return struct.pack("<I", len(h) if length else 0xFFFFFFFF) + h + binary


def bytes_elements(*elements):
    return b"".join(struct.pack("<I", len(e)) + e for e in elements)


def http_requests():
    t = "fuzz_http_request"
    sample = [0.25 * (i % 7) - 0.5 for i in range(12)]
    fp32 = {"name": "input", "datatype": "FP32", "shape": [1, 3, 4]}
    out(t, "json-flat", http_request({"id": "a", "inputs": [dict(fp32, data=sample)]}, length=False))
    out(t, "json-nested", http_request({"inputs": [dict(fp32, data=[[sample[0:4], sample[4:8], sample[8:12]]])],
                                        "outputs": [{"name": "scores", "parameters": {"classification": 3}}]},
                                       length=False))
    raw = struct.pack("<12f", *sample)
    out(t, "binary-fp32", http_request({"inputs": [dict(fp32, parameters={"binary_data_size": len(raw)})],
                                        "parameters": {"binary_data_output": True}}, raw))
    img = png(3, 2, 8, 0, [ramp(3), ramp(3, 11)])
    gif = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"
    data = bytes_elements(img, gif, b"")
    out(t, "binary-bytes-images", http_request(
        {"inputs": [{"name": "image", "datatype": "BYTES", "shape": [3, 1], "parameters": {"binary_data_size": len(data)}}],
         "outputs": [{"name": "scores", "parameters": {"binary_data": True}}]}, data))
    out(t, "json-bytes", http_request({"inputs": [{"name": "image", "datatype": "BYTES", "shape": [2],
                                                   "data": ["text", "P2 1 1 255 7"]}]}, length=False))
    out(t, "two-inputs-mixed", http_request(
        {"inputs": [dict(fp32, parameters={"binary_data_size": len(raw)}),
                    {"name": "b", "datatype": "FP32", "shape": [2], "data": [1.5, -2]}]}, raw))
    out(t, "bad-count", http_request({"inputs": [dict(fp32, data=sample[:5])]}, length=False))
    out(t, "bad-deep", http_request({"inputs": [dict(fp32, shape=[1], data=[[[1]]])]}, length=False))


if __name__ == "__main__":
    http_requests()
    images()
    safetensors()
    models()
    manifests()
    autotune()
    total = sum(f.stat().st_size for f in CORPUS.rglob("*") if f.is_file())
    print(f"wrote {sum(1 for f in CORPUS.rglob('*') if f.is_file())} files, {total} bytes, under {CORPUS}")
