#!/usr/bin/env python3
"""tools/train/infer_model.py's export() cannot write a network other than the module (issue 12): the
trial's residual module, whose forward() adds a skip connection, is refused, and so are other
forward()s that are not the children in order; a chain still exports and reads back the same.
The documented route for such models, torch.onnx.export, is checked against ONNX Runtime and
PyTorch by tests/formats/test_torchvision.cpp (its "residual" model is this one).

Run with Debian's /usr/bin/python3 (python3-torch); CTest runs it (label unit)."""
import os
import sys
import tempfile
import unittest

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "train"))
import infer_model  # noqa: E402


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1, 1)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(4, 4, 3, 1, 1)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(4 * 28 * 28, 10)

    def forward(self, x):
        y = self.relu(self.conv1(x))
        return self.fc(self.flatten(self.relu(self.conv2(y) + y)))


class Reordered(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(28 * 28, 10)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.fc(self.flatten(x))) * 2.0


def chain():
    return nn.Sequential()


class ExportTest(unittest.TestCase):
    def export(self, model):
        d = tempfile.mkdtemp()
        toml, st = os.path.join(d, "m.toml"), os.path.join(d, "m.safetensors")
        infer_model.export(model, toml, st, name="test")
        return toml, st

    def test_the_trials_residual_module_is_refused_and_nothing_is_written(self):
        d = tempfile.mkdtemp()
        toml, st = os.path.join(d, "m.toml"), os.path.join(d, "m.safetensors")
        with self.assertRaises(infer_model.ExportError) as e:
            infer_model.export(Residual(), toml, st, name="test")
        self.assertIn("call_function", str(e.exception))
        self.assertIn("torch.onnx.export", str(e.exception))
        self.assertFalse(os.path.exists(toml) or os.path.exists(st))

    def test_a_forward_that_does_more_than_its_children_is_refused(self):
        with self.assertRaises(infer_model.ExportError):
            self.export(Reordered())

    def test_a_chain_exports_and_reads_back_as_the_module(self):
        torch.manual_seed(0)
        m = nn.Sequential()
        m.add_module("conv", nn.Conv2d(1, 4, 3, 1, 1))
        m.add_module("bn", nn.BatchNorm2d(4))
        m.add_module("relu", nn.ReLU())
        m.add_module("drop", nn.Dropout(0.2))
        m.add_module("flatten", nn.Flatten())
        m.add_module("fc", nn.Linear(4 * 28 * 28, 10))
        m.eval()
        toml, _ = self.export(m)
        x = torch.rand(3, 1, 28, 28)
        with torch.no_grad():
            self.assertLess(float((infer_model.load_model(toml)(x) - m(x)).abs().max()), 1e-4)


if __name__ == "__main__":
    unittest.main()
