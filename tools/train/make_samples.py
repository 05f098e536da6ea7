#!/usr/bin/env python3
"""Writes the bundled sample images in samples/ from the Fashion-MNIST test set.

    /usr/bin/python3 tools/train/make_samples.py

For each of a few classes, the first test image of that class is saved as a 28x28 grey PNG, as in
the data set (light object, dark background). One more, samples/photo-sneaker.jpg, imitates a
product photo: the first sneaker inverted to dark-on-light, scaled up 5x, in RGB, with a white
margin, saved as JPEG; it exercises `infer --invert auto` and the trim-and-fit preprocessing.
"""
import gzip
import pathlib

import numpy as np
from PIL import Image

DATA = pathlib.Path("/usr/share/datasets/fashion-mnist")
OUT = pathlib.Path(__file__).resolve().parents[2] / "samples"
LABELS = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
PICK = {9: "ankle-boot", 1: "trouser", 2: "pullover", 7: "sneaker", 8: "bag", 3: "dress"}


def read_idx(name, offset):
    with gzip.open(DATA / name) as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def main():
    images = read_idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)
    labels = read_idx("t10k-labels-idx1-ubyte.gz", 8)
    OUT.mkdir(exist_ok=True)
    for cls, name in PICK.items():
        index = int(np.argmax(labels == cls))
        Image.fromarray(images[index], mode="L").save(OUT / f"{name}.png", optimize=True)
        print(f"samples/{name}.png: test image {index}, label {LABELS[cls]}")
    index = int(np.argmax(labels == 7))
    photo = Image.fromarray(255 - images[index], mode="L").resize((140, 140), Image.BICUBIC).convert("RGB")
    canvas = Image.new("RGB", (180, 160), (255, 255, 255))
    canvas.paste(photo, (20, 10))
    canvas.save(OUT / "photo-sneaker.jpg", quality=90)
    print(f"samples/photo-sneaker.jpg: test image {index} inverted, 5x, RGB, label Sneaker")


if __name__ == "__main__":
    main()
