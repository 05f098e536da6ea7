"""infer from Python: classify images with a CNN on the GPU (cuDNN) or the CPU, and check that this
machine matches the environment a deployment was validated on (VERSIONS.toml).

    import infer
    clf = infer.Classifier()                       # the shipped model; device="auto", "gpu" or "cpu"
    print(clf.classify("samples/ankle-boot.png"))  # [Prediction(index=9, label='Ankle boot', score=...), ...]
    scores = clf.run(batch)                        # (N, C, H, W) float32 in, (N, classes) out, no copies
    report = infer.check_environment()             # what `infer --check` says, as objects

The C++ library does the work (the _infer extension is a thin nanobind layer over its public API);
its errors arrive as infer.Error and its subclasses. docs/python.md has the whole API.
"""
from . import _nvidia

_nvidia.preload()  # NVIDIA's pip wheels, where installed: before the GPU module looks for them

from ._infer import (  # noqa: E402,F401
    BackendOutcome,
    BuildBackend,
    BuildInfo,
    Classification,
    Classifier,
    Error,
    GpuError,
    GpuUnavailableError,
    InputError,
    Item,
    MemoryLimitError,
    NotRegularFileError,
    Notice,
    OptionError,
    Prediction,
    Report,
    WrittenManifest,
    build_info,
    check_environment,
    image_file_extensions,
    version,
    write_manifest,
)

__version__ = version()
__all__ = [
    "BackendOutcome", "BuildBackend", "BuildInfo", "Classification", "Classifier", "Error", "GpuError",
    "GpuUnavailableError", "InputError", "Item", "MemoryLimitError", "NotRegularFileError", "Notice", "OptionError",
    "Prediction", "Report", "WrittenManifest", "build_info", "check_environment", "image_file_extensions", "version",
    "write_manifest",
]
