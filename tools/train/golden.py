#!/usr/bin/env python3
"""Write tests/data/golden.safetensors: reference outputs for the C++ tests.

    /usr/bin/python3 tools/train/golden.py [--model weights/fashion.toml] [--count 300]

The model is rebuilt from the exported TOML + safetensors (tools/train/infer_model.py),
not from training-time objects, and run in float64; results are cast to float32.

Tensors written:
    images  U8  [N,28,28]  raw pixels of the first N Fashion-MNIST t10k images
    labels  U8  [N]        ground-truth class indices
    logits  F32 [N,10]     output of the layer before the softmax
    probs   F32 [N,10]     softmax output
Preprocessing: x = (p/255 - mean)/std with mean/std from the TOML [input] table.
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import infer_model  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/<group>/ -> the root


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(ROOT, "weights", "fashion.toml"))
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "golden.safetensors"))
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count())

    model = infer_model.load_model(args.model, dtype=torch.float64)
    st_path = os.path.join(os.path.dirname(os.path.abspath(args.model)),
                           model.config["weights"])
    digest = infer_model.sha256_file(st_path)

    images, labels = infer_model.load_fashion("t10k")
    images = np.ascontiguousarray(images[:args.count])
    labels = np.ascontiguousarray(labels[:args.count]).astype(np.uint8)

    with torch.no_grad():
        x = model.preprocess(images, dtype=torch.float64)
        logits = model.logits(x)
        probs = torch.softmax(logits, dim=1)
    acc = (logits.argmax(1).numpy() == labels).mean()

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    infer_model.write_safetensors(args.out, {
        "images": images,
        "labels": labels,
        "logits": logits.numpy().astype(np.float32),
        "probs": probs.numpy().astype(np.float32),
    }, metadata={
        "source": "tools/train/golden.py",
        "model": os.path.relpath(os.path.abspath(args.model), ROOT),
        "model_sha256": digest,
        "dataset": "Debian dataset-fashion-mnist t10k, first %d images" % args.count,
        "preprocess": "x = (p/255 - mean)/std, mean=%s std=%s" % (model.mean, model.std),
        "precision": "computed in float64, stored as float32",
        "accuracy": "%.4f" % acc,
    })
    print(f"wrote {args.out}: {args.count} images, accuracy {acc * 100:.2f}%, "
          f"model sha256 {digest}")


if __name__ == "__main__":
    main()
