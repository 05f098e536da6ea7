"""The type stubs (_infer.pyi, generated from the module by nanobind's stubgen at build time) parse
and declare the whole public API, with the overloads classify() and preprocess() take."""
import ast
import os

import infer
from infer import _infer


def stub_tree():
    path = os.path.join(os.path.dirname(_infer.__file__), "_infer.pyi")
    assert os.path.exists(path), path
    with open(path) as f:
        return ast.parse(f.read(), path)


def test_every_public_name_is_declared():
    tree = stub_tree()
    declared = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    assert set(infer.__all__) <= declared, set(infer.__all__) - declared


def test_classifier_methods_and_overloads():
    tree = stub_tree()
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Classifier"]
    methods = [n.name for n in cls.body if isinstance(n, ast.FunctionDef)]
    assert methods.count("classify") == 4 and methods.count("preprocess") == 2
    for name in ("__init__", "run", "input_shape", "labels", "device", "notices"):
        assert name in methods, name
    py_typed = os.path.join(os.path.dirname(_infer.__file__), "py.typed")
    assert os.path.exists(py_typed)
