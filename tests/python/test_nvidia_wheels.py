"""The CUDA runtime and cuDNN from NVIDIA's pip wheels (infer/_nvidia.py): with a cuDNN wheel installed
in site-packages, `import infer` loads that CUDA major's libraries from the wheels' folders, the GPU
backend runs on them, and the environment check names the wheel's copy. Without the preload (or
without the wheel) the same process finds no cuDNN.

No GPU here: the "wheels" are a site-packages folder laid out as nvidia-cudnn-cu13 and
nvidia-cuda-runtime lay theirs out (python/infer/nvidia_wheels.json), holding the CPU stand-in's
libraries (tests/standin: test infrastructure, not a GPU), with the stand-in driver on
LD_LIBRARY_PATH where the NVIDIA driver would be. CTest gives the stand-in's folder as
INFER_STANDIN_DIR."""
import json
import os
import shutil
import subprocess
import sys

import pytest

import infer

STANDIN = os.environ.get("INFER_STANDIN_DIR", "")

PROBE = """
import json, infer
out = {"preloaded": infer._nvidia.preloaded}
try:
    clf = infer.Classifier(device="gpu")
    out["device"] = clf.device
except infer.GpuUnavailableError as e:
    out["device"] = "unavailable: " + str(e).splitlines()[0]
report = infer.check_environment()
out["cudnn_sources"] = [i.source for i in report.items if i.item.endswith("cudnn.version")]
print(json.dumps(out))
"""


@pytest.fixture
def wheels(tmp_path):
    if not os.path.exists(os.path.join(STANDIN, "libcudnn.so.9")):
        pytest.skip("no CPU stand-in built (INFER_STANDIN_DIR): the GPU backend is not built here")
    site = tmp_path / "site-packages"
    cudnn = site / "nvidia" / "cudnn" / "lib"
    runtime = site / "nvidia" / "cu13" / "lib"
    cudnn.mkdir(parents=True)
    runtime.mkdir(parents=True)
    shutil.copy(os.path.join(STANDIN, "libcudart.so.13"), runtime)
    shutil.copy(os.path.join(STANDIN, "libcudnn.so.9"), cudnn)
    for name in os.listdir(STANDIN):  # the sub-libraries, beside it as in the wheel
        if name.startswith("libcudnn_"):
            os.symlink("libcudnn.so.9", cudnn / name)
    info = site / "nvidia_cudnn_cu13-9.28.1.4.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nvidia-cudnn-cu13\nVersion: 9.28.1.4\n")
    driver = tmp_path / "driver"
    driver.mkdir()
    for name in ("libcuda.so.1", "libnvidia-ml.so.1"):
        os.symlink(os.path.join(STANDIN, name), driver / name)
    return site, driver


def probe(site, driver, **env):
    python_path = os.pathsep.join([os.path.dirname(os.path.dirname(infer.__file__)), str(site)])
    environment = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "INFER_CUDA")}
    environment.update(PYTHONPATH=python_path, LD_LIBRARY_PATH=str(driver), **env)
    out = subprocess.run([sys.executable, "-c", PROBE], env=environment, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_the_wheels_libraries_are_loaded_and_named_by_the_check(wheels):
    site, driver = wheels
    got = probe(site, driver)
    assert got["preloaded"] == [str(site / "nvidia" / "cu13" / "lib" / "libcudart.so.13"),
                                str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")]
    assert got["device"] == "gpu", got
    assert got["cudnn_sources"] and all(str(site / "nvidia" / "cudnn" / "lib") in s for s in got["cudnn_sources"]), got


def test_without_the_preload_there_is_no_cudnn(wheels):
    site, driver = wheels
    got = probe(site, driver, INFER_NVIDIA_WHEELS="0")
    assert got["preloaded"] == []
    assert got["device"].startswith("unavailable: "), got


def test_a_cudnn_wheel_for_another_major_is_not_taken_for_this_one(wheels):
    site, driver = wheels
    for info in site.glob("nvidia_cudnn_cu13-*.dist-info"):
        info.rename(site / "nvidia_cudnn_cu12-9.10.2.21.dist-info")
        (site / "nvidia_cudnn_cu12-9.10.2.21.dist-info" / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: nvidia-cudnn-cu12\nVersion: 9.10.2.21\n")
    got = probe(site, driver)
    # The cu12 layout: cuDNN from nvidia/cudnn/lib, no CUDA 12 runtime wheel here; nothing of cu13's.
    assert got["preloaded"] == [str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")]
