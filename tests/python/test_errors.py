"""infer's typed C++ errors arrive as Python exceptions of matching classes, with their parts."""
import gc
import os
import warnings

import numpy as np
import pytest

import infer


def test_the_class_tree():
    assert issubclass(infer.Error, RuntimeError)
    for cls in (infer.InputError, infer.OptionError, infer.GpuUnavailableError, infer.GpuError):
        assert issubclass(cls, infer.Error)
    assert issubclass(infer.NotRegularFileError, infer.InputError)
    assert issubclass(infer.MemoryLimitError, infer.InputError)
    assert issubclass(infer.OptionError, ValueError)
    assert issubclass(infer.Notice, UserWarning)


def test_a_missing_or_broken_image_is_an_input_error_naming_it(clf, tmp_path):
    missing = str(tmp_path / "missing.png")
    with pytest.raises(infer.InputError) as e:
        clf.classify(missing)
    assert (e.value.file, e.value.problem, str(e.value)) == (missing, "no such file", missing + ": no such file")
    with pytest.raises(infer.InputError) as e:
        clf.classify(b"GIF89a\x01\x00broken")
    assert e.value.file == "<bytes>" and str(e.value).startswith("<bytes>: ")
    with pytest.raises(infer.NotRegularFileError) as e:
        clf.classify(str(tmp_path))
    assert e.value.file == str(tmp_path)


def test_bad_options_are_option_errors_naming_the_option():
    with pytest.raises(infer.OptionError) as e:
        infer.Classifier(device="tpu")
    assert e.value.option == "device" and "'tpu'" in e.value.problem
    with pytest.raises(infer.OptionError) as e:
        infer.Classifier(device="cpu", precision="fp64")
    assert e.value.option == "precision"
    with pytest.raises(infer.OptionError) as e:
        infer.Classifier(device="cpu", max_batch=0)
    assert e.value.option == "max_batch"


def test_a_model_over_the_memory_limit_is_a_memory_limit_error():
    with pytest.raises(infer.MemoryLimitError) as e:
        infer.Classifier(device="cpu", max_memory=1000)
    assert e.value.limit == 1000 and e.value.needed > 1000 and "parameters" in e.value.breakdown
    assert e.value.file.endswith("fashion.toml")


def test_a_bad_model_or_manifest_is_an_input_error(tmp_path):
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"\x08\x07not a model")
    with pytest.raises(infer.InputError) as e:
        infer.Classifier(str(bad), device="cpu")
    assert e.value.file == str(bad)
    with pytest.raises(infer.InputError):
        infer.Classifier(device="cpu", manifest=str(tmp_path / "missing.toml"))


def gpu_usable():
    return infer.check_environment().backend != ""


def test_no_gpu_is_gpu_unavailable_and_auto_says_why_in_a_notice():
    if gpu_usable():
        pytest.skip("this machine's GPU matches its manifest: device='gpu' succeeds here")
    with pytest.raises(infer.GpuUnavailableError) as e:
        infer.Classifier(device="gpu")
    assert "\n" not in str(e.value).split("\n")[0]
    with pytest.warns(infer.Notice, match="^running on the CPU: "):
        clf = infer.Classifier()
    assert clf.device == "cpu" and clf.notices[0].startswith("running on the CPU: ")


def test_errors_leave_the_classifier_usable(clf, fashion_samples, rng):
    x = rng.standard_normal((2, 1, 28, 28), dtype=np.float32)
    before = clf.run(x)
    for bad in (b"", "/nonexistent/file.png"):
        with pytest.raises(infer.InputError):
            clf.classify(bad)
    with pytest.raises(infer.OptionError):
        clf.run(np.ascontiguousarray(x[:, :, :14]))
    assert np.array_equal(clf.run(x), before)
    assert os.path.basename(fashion_samples[0]) == "ankle-boot.png"
    assert clf.classify(fashion_samples[0], top_k=1)[0].label == "Ankle boot"


def test_a_notice_raised_as_an_error_leaves_nothing_behind():
    # With notices as errors (python -W error), building raises infer.Notice; the Classifier built
    # before the warning must be destroyed, not left half made. Each leaked one would keep its
    # backend's buffers: ten of them, many times what one Classifier holds.
    if gpu_usable():
        pytest.skip("this machine's GPU matches its manifest: no notice to raise")

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def attempt():
        with pytest.raises(infer.Notice):
            infer.Classifier(max_batch=1024)

    gc.collect()
    before = rss()
    held = infer.Classifier(device="cpu", max_batch=1024)
    one = rss() - before  # what one Classifier holds, its buffers allocated
    del held
    with warnings.catch_warnings():
        warnings.simplefilter("error", infer.Notice)
        attempt()  # the libraries' caches warm once
        gc.collect()
        base = rss()
        for _ in range(10):
            attempt()
        gc.collect()
        grown = rss() - base
    assert grown < 3 * one, f"10 refused builds kept {grown / 2**20:.1f} MiB; one Classifier holds {one / 2**20:.1f} MiB"
