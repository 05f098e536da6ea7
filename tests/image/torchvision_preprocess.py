#!/usr/bin/env python3
"""torchvision's evaluation transform on every PNG of a folder, the reference of
tests/image/test_torchvision_preprocess.cpp.

For each <name>.png writes <name>.<suffix>.f32: the float32 C x H x W tensor (little-endian) of

    Compose([Resize(size), CenterCrop((height, width)), ToTensor(), Normalize(mean, std)])

applied to Image.open(path).convert("RGB"), as a torchvision training or evaluation script reads
an image. Needs Debian's python3-torchvision (tools/dev/install-deps.sh).
"""
import argparse
import pathlib
import sys

import PIL
import torchvision
from PIL import Image
from torchvision import transforms


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=pathlib.Path)
    p.add_argument("--size", type=int, required=True, help="Resize(size): the shorter side")
    p.add_argument("--height", type=int, required=True, help="CenterCrop's height")
    p.add_argument("--width", type=int, required=True, help="CenterCrop's width")
    p.add_argument("--mean", type=float, nargs=3, required=True)
    p.add_argument("--std", type=float, nargs=3, required=True)
    p.add_argument("--suffix", required=True, help="the output's name is <name>.<suffix>.f32")
    a = p.parse_args()
    transform = transforms.Compose(
        [
            transforms.Resize(a.size),  # bilinear, as torchvision's default; PIL antialiases
            transforms.CenterCrop((a.height, a.width)),
            transforms.ToTensor(),
            transforms.Normalize(a.mean, a.std),
        ]
    )
    pngs = sorted(a.folder.glob("*.png"))
    if not pngs:
        sys.exit(f"torchvision_preprocess.py: no PNG in {a.folder}")
    for png in pngs:
        with Image.open(png) as im:
            tensor = transform(im.convert("RGB"))
        out = png.with_name(f"{png.stem}.{a.suffix}.f32")
        tensor.numpy().astype("<f4").tofile(out)
    print(f"torchvision {torchvision.__version__}, Pillow {PIL.__version__}: {len(pngs)} images")


if __name__ == "__main__":
    main()
