"""infer.Classifier against the infer command (the C++ tests' main cases, from Python): the same
classes and scores for the shipped samples, whatever form the image comes in."""
import json
import subprocess

import numpy as np
import pytest

import infer
from conftest import INFER


def command_top(path, k):
    """`infer --device cpu --threads 1 --json --top-k K PATH`: [(index, label, score)]."""
    out = subprocess.run([INFER, "--device", "cpu", "--threads", "1", "--json", "--top-k", str(k), path], check=True,
                         capture_output=True, text=True).stdout
    (row,) = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert row["file"] == path
    return [(t["index"], t["label"], t["prob"]) for t in row["top"]]


def as_tuples(predictions):
    return [(p.index, p.label, p.score) for p in predictions]


def test_a_file_is_classified_as_the_command_classifies_it(fashion_samples):
    # One image on one thread, as the command runs it: the same engine on the same pixels in the
    # same order of operations, so the very same float32 scores (the command prints them as doubles).
    clf = infer.Classifier(device="cpu", threads=1)
    for path in fashion_samples:
        want = command_top(path, 3)
        got = as_tuples(clf.classify(path, top_k=3))
        assert [g[:2] for g in got] == [w[:2] for w in want], path
        assert [np.float32(g[2]) for g in got] == [np.float32(w[2]) for w in want], path


def test_bytes_arrays_and_paths_give_the_same_answer(clf, fashion_samples):
    for path in fashion_samples:
        by_path = as_tuples(clf.classify(path))
        with open(path, "rb") as f:
            assert as_tuples(clf.classify(f.read())) == by_path
        sample = clf.preprocess(path)
        assert sample.shape == clf.input_shape and sample.dtype == np.float32
        with open(path, "rb") as f:
            assert np.array_equal(clf.preprocess(f.read()), sample)
        assert as_tuples(clf.classify(sample)) == by_path
    # A batch of samples runs in the passes a list of the files runs in (max_batch each): the same
    # kernels, so the same floats. (One image alone is a pass of 1, whose kernels may round otherwise.)
    batch = np.empty((len(fashion_samples),) + clf.input_shape, np.float32)
    for i, p in enumerate(fashion_samples):
        assert clf.preprocess(p, out=batch[i]) is not None
    per_sample = clf.classify(batch, top_k=2)
    assert [as_tuples(p) for p in per_sample] == [as_tuples(c.top) for c in clf.classify(fashion_samples, top_k=2)]
    assert [p[0].index for p in per_sample] == [clf.classify(p, top_k=1)[0].index for p in fashion_samples]


def test_a_list_keeps_each_bad_image_in_its_place(clf, fashion_samples, tmp_path):
    bad = tmp_path / "truncated.png"
    with open(fashion_samples[0], "rb") as f:
        bad.write_bytes(f.read()[:100])
    paths = [fashion_samples[0], str(bad), fashion_samples[1], str(tmp_path / "missing.png")]
    results = clf.classify(paths, top_k=1)
    assert [r.ok for r in results] == [True, False, True, False]
    assert results[1].error.startswith(str(bad) + ": ") and results[1].top == []
    assert results[3].error == str(tmp_path / "missing.png") + ": no such file"
    # The good ones ran as a batch of their own: exactly what that batch alone gives.
    alone = clf.classify(fashion_samples[:2], top_k=1)
    assert [as_tuples(r.top) for r in (results[0], results[2])] == [as_tuples(r.top) for r in alone]


def test_run_gives_the_outputs_classify_ranks(clf, rng):
    x = rng.standard_normal((5, *clf.input_shape), dtype=np.float32)
    y = clf.run(x)
    assert y.shape == (5, clf.output_size) and y.dtype == np.float32
    assert clf.outputs_probabilities
    assert np.allclose(y.sum(axis=1), 1.0, atol=1e-5)
    for sample in x:
        scores = clf.run(sample[None])[0]  # one sample, as classify() runs it: the same operations
        top = clf.classify(sample, top_k=clf.output_size)
        assert [p.index for p in top] == list(np.argsort(-scores, kind="stable"))
        assert np.array_equal(np.float32([p.score for p in top]), np.sort(scores)[::-1])
    assert clf.run(x[:0]).shape == (0, clf.output_size)


def test_top_k_is_capped_and_checked(clf, fashion_samples):
    assert len(clf.classify(fashion_samples[0], top_k=100)) == clf.output_size
    with pytest.raises(infer.OptionError) as e:
        clf.classify(fashion_samples[0], top_k=0)
    assert e.value.option == "k"


def test_what_it_says_about_itself(clf):
    assert clf.input_shape == (1, 28, 28)
    assert clf.input_size == 784 and clf.output_size == 10
    assert clf.labels[9] == "Ankle boot" and len(clf.labels) == 10
    assert clf.device == "cpu" and clf.backend.startswith("cpu: ")
    assert clf.max_batch == 64
    assert clf.model_path.name == "fashion.toml" and clf.model_path.exists()
    assert clf.model_name in repr(clf)
    assert repr(clf.classify(clf.model_path.parent.parent / "samples" / "bag.png", top_k=1)[0]).startswith(
        "Prediction(index=8, label='Bag', score=0.94")
