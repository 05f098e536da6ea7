"""Arrays in and out of infer.Classifier.run and preprocess without copies (checked by buffer addresses), and the
arrays it refuses rather than copy."""
import numpy as np
import pytest

import infer
from infer import _infer


def test_a_float32_c_contiguous_array_is_read_where_it_lies(rng):
    x = rng.standard_normal((4, 1, 28, 28), dtype=np.float32)
    assert _infer._data_address(x) == x.ctypes.data
    big = rng.standard_normal((10, 1, 28, 28), dtype=np.float32)
    view = big[3:7]  # a C-contiguous view into another array's memory
    assert _infer._data_address(view) == big.ctypes.data + 3 * 784 * 4


def test_the_result_owns_new_memory_and_out_is_written_in_place(clf, rng):
    x = rng.standard_normal((6, 1, 28, 28), dtype=np.float32)
    y = clf.run(x)
    assert not y.flags.owndata and y.base is not None  # numpy wraps the library's buffer: no copy made
    assert y.flags.c_contiguous and y.flags.writeable
    out = np.full((6, 10), np.nan, dtype=np.float32)
    address = out.ctypes.data
    got = clf.run(x, out=out)
    assert got is out and out.ctypes.data == address
    assert np.array_equal(out, y)


def test_preprocess_writes_into_a_row_of_a_batch(clf, fashion_samples, rng):
    batch = rng.standard_normal((3, 1, 28, 28), dtype=np.float32)  # not zeros: every pixel must be written
    before = batch.copy()
    with open(fashion_samples[0], "rb") as f:
        got = clf.preprocess(f.read(), out=batch[1])
    assert got is not None and _infer._data_address(got) == batch.ctypes.data + 784 * 4
    assert np.array_equal(batch[1], clf.preprocess(fashion_samples[0]))
    assert np.array_equal(batch[0], before[0]) and np.array_equal(batch[2], before[2])
    clf.preprocess(fashion_samples[1], out=batch[2])
    assert np.array_equal(batch[2], clf.preprocess(fashion_samples[1]))
    with pytest.raises(infer.InputError) as e:
        clf.preprocess(b"not an image", out=batch[0], name="shard-7/a.png")
    assert e.value.file == "shard-7/a.png" and str(e.value).startswith("shard-7/a.png: ")
    with pytest.raises(infer.OptionError) as e:
        clf.preprocess(fashion_samples[0], out=batch[:2])
    assert e.value.option == "out"
    with pytest.raises(TypeError):
        clf.preprocess(fashion_samples[0], out=np.zeros((1, 28, 28), dtype=np.float64))
    with pytest.raises(TypeError):
        clf.preprocess(fashion_samples[0], out=batch[1].T)  # not C-contiguous


def test_arrays_that_would_need_a_copy_are_refused(clf, rng):
    x = rng.standard_normal((2, 1, 28, 56), dtype=np.float32)
    with pytest.raises(TypeError):
        clf.run(x[:, :, :, ::2])  # not contiguous
    with pytest.raises(TypeError):
        clf.run(x[:, :, :, :28].astype(np.float64))
    with pytest.raises(TypeError):
        clf.run(np.ascontiguousarray(x[:, :, :, :28]), out=np.zeros((2, 10), dtype=np.float64))


def test_a_wrong_shape_is_an_option_error_naming_it(clf, rng):
    with pytest.raises(infer.OptionError) as e:
        clf.run(rng.standard_normal((2, 3, 28, 28), dtype=np.float32))
    assert e.value.option == "x" and "(2, 3, 28, 28)" in str(e.value) and "(N, 1, 28, 28)" in str(e.value)
    assert isinstance(e.value, ValueError)
    with pytest.raises(infer.OptionError) as e:
        clf.run(rng.standard_normal((2, 1, 28, 28), dtype=np.float32), out=np.zeros((3, 10), dtype=np.float32))
    assert e.value.option == "out"


def test_a_pytorch_cpu_tensor_is_read_where_it_lies(clf, rng):
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(rng.standard_normal((3, 1, 28, 28), dtype=np.float32))
    assert _infer._data_address(t) == t.data_ptr()
    assert np.array_equal(clf.run(t), clf.run(t.numpy()))
