"""tests/python: the infer package (python/) from the build tree, with pytest. CTest runs it
(tests/CMakeLists.txt: label python) with PYTHONPATH=<build>/python and INFER_BUILD_DIR=<build>,
whose bin/infer and share/infer (the shipped model, samples, VERSIONS.toml) the tests compare with."""
import os

import numpy as np
import pytest

BUILD = os.environ.get("INFER_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
SAMPLES = os.path.join(BUILD, "share", "infer", "samples")
INFER = os.path.join(BUILD, "bin", "infer")


@pytest.fixture(scope="session")
def samples():
    """The shipped sample images, sorted (what `infer samples/` classifies, in its order)."""
    names = sorted(f for f in os.listdir(SAMPLES) if not f.startswith("."))
    return [os.path.join(SAMPLES, f) for f in names]


@pytest.fixture(scope="session")
def fashion_samples(samples):
    """The Fashion-MNIST samples (PNGs of clothes; the photos are for the ONNX examples)."""
    return [s for s in samples if s.endswith(".png")]


@pytest.fixture
def rng():
    return np.random.default_rng()  # fresh random data every run, as the C++ tests


@pytest.fixture(scope="session")
def clf():
    import infer
    return infer.Classifier(device="cpu")
