"""Threads classifying at once: the GIL is released during forward passes, so threads with their own
Classifier run in parallel, and threads sharing one take turns, with the same answers as one thread."""
import threading
import time

import numpy as np

import infer


def test_threads_with_their_own_classifiers_give_the_sequential_answers(rng):
    batches = [rng.standard_normal((16, 1, 28, 28), dtype=np.float32) for _ in range(4)]
    classifiers = [infer.Classifier(device="cpu") for _ in batches]  # built before the threads start
    want = [c.run(b) for c, b in zip(classifiers, batches)]
    got = [None] * len(batches)

    def work(i):
        for _ in range(20):
            got[i] = classifiers[i].run(batches[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(batches))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)


def test_threads_sharing_one_classifier_take_turns(clf, rng, fashion_samples):
    x = rng.standard_normal((8, 1, 28, 28), dtype=np.float32)
    want_run, want_top = clf.run(x), [(p.index, p.score) for p in clf.classify(fashion_samples[0])]
    errors = []

    def work(i):
        try:
            for _ in range(25):
                if i % 2:
                    assert np.array_equal(clf.run(x), want_run)
                else:
                    assert [(p.index, p.score) for p in clf.classify(fashion_samples[0])] == want_top
        except BaseException as e:  # noqa: B036  any failure, reported below from the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads) and errors == []


def test_the_gil_is_released_during_a_forward_pass(rng):
    # While one thread is inside run() on a large batch, another Python thread keeps running: the
    # longest pause between its ticks stays far below the time run() takes. With the GIL held
    # throughout, that pause would be the whole call.
    clf = infer.Classifier(device="cpu", max_batch=512)
    x = rng.standard_normal((4096, 1, 28, 28), dtype=np.float32)
    while True:  # a call long enough to tell: grown on a fast machine
        start = time.perf_counter()
        clf.run(x)
        if time.perf_counter() - start > 0.1 or len(x) >= 65536:
            break
        x = np.concatenate([x, x])
    ticks, stop = [], threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    time.sleep(0.05)
    start = time.perf_counter()
    clf.run(x)
    took = time.perf_counter() - start
    stop.set()
    t.join()
    during = [b - a for a, b in zip(ticks, ticks[1:]) if a >= start and b <= start + took]
    assert took > 0.05, f"run() took {took:.3f} s: too short to tell"
    assert during and max(during) < took / 2, f"the other thread paused {max(during or [took]):.3f} s of {took:.3f} s"
