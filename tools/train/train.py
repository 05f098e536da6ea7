#!/usr/bin/env python3
"""Train the Fashion-MNIST CNN for `infer` and export it to weights/.

Usage (Debian python with python3-torch):
    /usr/bin/python3 tools/train/train.py                 # full run, writes weights/
    /usr/bin/python3 tools/train/train.py --time-subset 6000   # time a partial epoch only

Data: Debian package dataset-fashion-mnist (/usr/share/datasets/fashion-mnist).
Writes weights/fashion.toml + weights/fashion.safetensors (see weights/README.md).
"""
import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import infer_model  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/<group>/ -> the root


class FashionCNN(nn.Module):
    """Attribute names == layer names in the exported TOML / safetensors."""

    def __init__(self, dropout=0.3):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(32)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(32, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.relu2 = nn.ReLU()
        self.pool1 = nn.MaxPool2d(2, 2)
        self.conv3 = nn.Conv2d(32, 64, 3, padding=1)
        self.bn3 = nn.BatchNorm2d(64)
        self.relu3 = nn.ReLU()
        self.conv4 = nn.Conv2d(64, 64, 3, padding=1)
        self.bn4 = nn.BatchNorm2d(64)
        self.relu4 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(2, 2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.relu5 = nn.ReLU()
        self.dropout = nn.Dropout(dropout)  # training only; skipped by export
        self.fc2 = nn.Linear(128, 10)
        self.prob = nn.Softmax(dim=1)

    def logits(self, x):
        mods = list(self.children())[:-1]
        for m in mods:
            x = m(x)
        return x

    def forward(self, x):
        return self.prob(self.logits(x))


def augment(x, rng, shift=2):
    """x: float [N,1,28,28] in [0,1]. Random h-flip + random shift up to `shift` px
    (zero fill = background). rng: numpy Generator (deterministic)."""
    n, _, h, w = x.shape
    flip = torch.from_numpy(rng.random(n) < 0.5)
    x = torch.where(flip.view(-1, 1, 1, 1), x.flip(3), x)
    if shift:
        p = F.pad(x, (shift, shift, shift, shift))
        dy = torch.from_numpy(rng.integers(0, 2 * shift + 1, n))
        dx = torch.from_numpy(rng.integers(0, 2 * shift + 1, n))
        rows = (dy.view(-1, 1) + torch.arange(h)).view(n, h, 1)
        cols = (dx.view(-1, 1) + torch.arange(w)).view(n, 1, w)
        x = p[:, 0][torch.arange(n).view(n, 1, 1), rows, cols].unsqueeze(1)
    return x


def evaluate(model, x_u8, y, mean, std, bs=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x_u8), bs):
            xb = (torch.from_numpy(x_u8[i:i + bs]).float().unsqueeze(1) / 255.0 - mean) / std
            pred = model.logits(xb).argmax(1)
            correct += (pred == torch.from_numpy(y[i:i + bs].astype(np.int64))).sum().item()
    return correct / len(x_u8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3, help="OneCycle max lr (AdamW)")
    ap.add_argument("--wd", type=float, default=5e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-subset", type=int, default=0,
                    help="only time this many training images, no export")
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "weights"))
    args = ap.parse_args()

    t_start = time.time()
    torch.set_num_threads(os.cpu_count())
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    rng = np.random.default_rng(args.seed)

    xtr, ytr = infer_model.load_fashion("train")
    xte, yte = infer_model.load_fashion("t10k")
    # normalisation constants: training-set pixel statistics, rounded to 4 d.p.
    # (the rounded values are what is used for training AND written to the TOML)
    pix = xtr.astype(np.float64) / 255.0
    mean = round(float(pix.mean()), 4)
    std = round(float(pix.std()), 4)
    del pix
    print(f"train {xtr.shape} test {xte.shape} mean={mean} std={std} "
          f"threads={torch.get_num_threads()}", flush=True)

    n_train = args.time_subset or len(xtr)
    xtr_f = torch.from_numpy(xtr[:n_train]).float().unsqueeze(1) / 255.0  # [N,1,28,28]
    ytr_t = torch.from_numpy(ytr[:n_train].astype(np.int64))

    model = FashionCNN()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.wd)
    steps_per_epoch = (n_train + args.batch_size - 1) // args.batch_size
    epochs = 1 if args.time_subset else args.epochs
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=args.lr, epochs=epochs, steps_per_epoch=steps_per_epoch,
        pct_start=0.25)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.05)

    for ep in range(epochs):
        model.train()
        t0 = time.time()
        perm = torch.from_numpy(rng.permutation(n_train))
        tot_loss, tot_n = 0.0, 0
        for bi in range(steps_per_epoch):
            idx = perm[bi * args.batch_size:(bi + 1) * args.batch_size]
            xb = augment(xtr_f[idx], rng)
            xb = (xb - mean) / std
            yb = ytr_t[idx]
            loss = loss_fn(model.logits(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            tot_loss += loss.item() * len(idx)
            tot_n += len(idx)
        dt = time.time() - t0
        msg = f"epoch {ep + 1}/{epochs} loss {tot_loss / tot_n:.4f} time {dt:.1f}s"
        if args.time_subset:
            print(msg + f" ({dt / n_train * 60000:.0f}s per full epoch est.)", flush=True)
            return
        acc = evaluate(model, xte, yte, mean, std)
        print(msg + f" test_acc {acc * 100:.2f}% elapsed {time.time() - t_start:.0f}s",
              flush=True)

    model.eval()
    acc = evaluate(model, xte, yte, mean, std)
    wall = time.time() - t_start
    print(f"final test accuracy {acc * 100:.2f}% ({round(acc * len(xte))}/{len(xte)}), "
          f"wall time {wall:.0f}s", flush=True)

    os.makedirs(args.out_dir, exist_ok=True)
    toml_path = os.path.join(args.out_dir, "fashion.toml")
    st_path = os.path.join(args.out_dir, "fashion.safetensors")
    cmd = "/usr/bin/python3 tools/train/train.py" + "".join(
        f" {a}" for a in sys.argv[1:])
    infer_model.export(
        model, toml_path, st_path,
        meta={"format": "pt", "source": "tools/train/train.py",
              "test_accuracy": f"{acc:.4f}"},
        mean=(mean,), std=(std,),
        header_comment=(
            "infer model description: Fashion-MNIST CNN classifier (28x28 grayscale, 10 classes)\n"
            f"Generated by: {cmd}  (seed {args.seed}, {epochs} epochs)\n"
            f"PyTorch test accuracy (t10k, 10000 images): {acc * 100:.2f}%\n"
            "Weights: tensors named <layer>.<param> as in PyTorch state_dict; see weights/README.md"))
    # verify the round trip through the generic reader
    m2 = infer_model.load_model(toml_path)
    acc2 = evaluate(m2, xte, yte, mean, std)
    print(f"reloaded from {toml_path}: test accuracy {acc2 * 100:.2f}%", flush=True)
    print(f"sha256 {os.path.basename(toml_path)} {infer_model.sha256_file(toml_path)}")
    print(f"sha256 {os.path.basename(st_path)} {infer_model.sha256_file(st_path)}")
    print(f"total wall time {time.time() - t_start:.0f}s", flush=True)


if __name__ == "__main__":
    main()
