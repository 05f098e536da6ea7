"""NVIDIA's CUDA runtime and cuDNN from their pip wheels, as PyTorch takes them.

A GPU machine set up with pip (`pip install nvidia-cudnn-cu13 nvidia-cuda-runtime`, or the cu12
wheels) has the libraries in site-packages, where the loader does not look. Before the extension
loads, this finds the cuDNN wheel that is installed (only one can be: both put libcudnn.so.9 in
nvidia/cudnn/lib), and loads that CUDA major's libraries from the wheels' folders
(nvidia_wheels.json) into the process with RTLD_GLOBAL, cuBLAS first (cuDNN's sub-libraries need
it). The GPU module's own dlopen of the same sonames then finds these, and so does the environment
check, whose report names the file each came from. Where no cuDNN wheel is installed, nothing is
loaded and the machine's own libraries are used, as for the infer command. INFER_NVIDIA_WHEELS=0
turns this off.

`preloaded` lists the files loaded, for the user and the tests."""
import ctypes
import json
import os
import sys

preloaded = []  # the files loaded, in order
skipped = []  # (file, why) for each one found but not loaded


def _site_folders():
    return [p for p in sys.path if p and os.path.isdir(os.path.join(p, "nvidia"))]


def _installed(distribution):
    try:
        from importlib import metadata
        metadata.distribution(distribution)
        return True
    except Exception:  # PackageNotFoundError, or metadata unreadable: not installed as far as we can tell
        return False


def preload():
    if os.environ.get("INFER_NVIDIA_WHEELS", "1") == "0":
        return
    sites = _site_folders()
    if not sites:
        return
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "nvidia_wheels.json")) as f:
        majors = json.load(f)["majors"]
    for major in majors:  # newest first
        if not _installed(major["cudnn_distribution"]):
            continue
        for relative in major["libraries"]:
            for site in sites:
                path = os.path.join(site, relative)
                if not os.path.exists(path):
                    continue
                try:
                    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                    preloaded.append(path)
                except OSError as e:  # a broken wheel: the check will say what is missing
                    skipped.append((path, str(e)))
                break
        return  # one major: its cuDNN is the only one installed
